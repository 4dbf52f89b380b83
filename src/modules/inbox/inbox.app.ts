import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { toPage } from '../../platform/http/pagination.ts'
import type { PlatformDeps } from '../../platform/module.ts'
import {
  assignConversation,
  closeConversation,
  contactActivity,
  getConversation,
  getMessage,
  markConversationRead,
  reopenConversation,
} from './inbox.manage.ts'
import { inboxPage, unreadTotal } from './inbox.repository.ts'
import { Conversation, HistoryMessage as ConversationMessage } from './inbox.schemas.ts'
import { conversationView } from './inbox.service.ts'

const tags = ['app']
const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) })

export const ConversationResponse = Type.Object({ conversation: Conversation })
export const MessageDetail = Type.Object(
  {
    ...ConversationMessage.properties,
    error_code: Type.Union([Type.String(), Type.Null()], { description: 'the provider’s error code of a failed send' }),
  },
  { title: 'MessageDetail' },
)
const InboxContact = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    phone: Type.String({ description: 'E.164; empty string when none' }),
    email: Type.String({ description: 'empty string when none' }),
  },
  { title: 'InboxContact' },
)
export const InboxQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 100 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000, default: 0 })),
  },
  { additionalProperties: false },
)
export const InboxResponse = Type.Object(
  {
    conversations: Type.Array(
      Type.Object({ ...Conversation.properties, contact: InboxContact }, { title: 'InboxConversation' }),
    ),
    has_more: Type.Boolean(),
    unread_count: Type.Integer({
      description: 'the unread inbound messages of every conversation of the account, not only this page’s',
    }),
  },
  { title: 'InboxPage' },
)
export const AssignBody = Type.Object(
  {
    member_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description: 'an active team member’s id (user id); null: assigned to nobody',
    }),
  },
  { additionalProperties: false },
)
export const ActivityQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
})
export const ActivityResponse = Type.Object(
  {
    contact_id: Type.String({ format: 'uuid' }),
    items: Type.Array(
      Type.Object({
        at: Type.String({ format: 'date-time' }),
        kind: Type.Union([Type.Literal('contact_created'), Type.Literal('message'), Type.Literal('consent')]),
        summary: Type.String(),
        message_id: Type.Union([Type.String(), Type.Null()]),
        conversation_id: Type.Union([Type.String(), Type.Null()]),
        channel: Type.Union([Type.String(), Type.Null()]),
      }),
    ),
    truncated: Type.Boolean({ description: 'more happened than limit items show' }),
  },
  { title: 'ContactActivity' },
)

/**
 * The inbox's web-app functions under /app: one conversation, closing, reopening, assigning and marking it read, one
 * message, a contact's activity. Reading needs inbox:read; changing a conversation's handling needs
 * messages:write (what a member who answers customers has).
 */
export function inboxAppRoutes(deps: Pick<PlatformDeps, 'database' | 'clock'>) {
  const db = deps.database.orm
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Querystring: Static<typeof InboxQuery> }>(
      '/conversations',
      {
        config: { scope: 'inbox:read' },
        schema: {
          operationId: 'listInboxConversations',
          summary: 'The inbox: conversations by latest activity, with their contacts',
          description:
            'Needs inbox:read. Latest activity first, then id. Each conversation as in GET /v1/inbox/conversations, its contact with name, phone (E.164) and e-mail, so the list can name a person without a name by their number; unread_count is the account’s total over every conversation. One statement.',
          tags,
          querystring: InboxQuery,
          response: { 200: InboxResponse },
        },
      },
      async (request) => {
        const limit = request.query.limit ?? 100
        const offset = request.query.offset ?? 0
        const rows = await inboxPage(db, request.tenant.accountId, { limit, offset })
        const page = toPage(rows, limit, offset)
        const conversations = page.items.map(({ row, contact }) => {
          const found = (typeof contact === 'string' ? JSON.parse(contact) : contact) as {
            name: string
            phone: string
            email: string
          } | null
          const view = conversationView(row, found?.name ?? '')
          return { ...view, contact: { id: row.contactId, name: '', phone: '', email: '', ...found } }
        })
        return {
          conversations,
          has_more: page.has_more,
          unread_count: rows[0]?.unreadTotal ?? (await unreadTotal(db, request.tenant.accountId)),
        }
      },
    )

    app.get<{ Params: Static<typeof IdParams> }>(
      '/conversations/:id',
      {
        config: { scope: 'inbox:read' },
        schema: {
          operationId: 'getConversation',
          summary: 'One conversation',
          description: 'Needs inbox:read. Its contact, last message, unread count, status (open, closed) and assignee.',
          tags,
          params: IdParams,
          response: { 200: ConversationResponse },
        },
      },
      async (request) => {
        return { conversation: await getConversation(db, request.tenant.accountId, request.params.id) }
      },
    )

    app.post<{ Params: Static<typeof IdParams> }>(
      '/conversations/:id/close',
      {
        config: { scope: 'messages:write' },
        schema: {
          operationId: 'closeConversation',
          summary: 'Close a conversation',
          description: 'Needs messages:write. The customer’s next message opens it again.',
          tags,
          params: IdParams,
          response: { 200: ConversationResponse },
        },
      },
      async (request) => {
        return {
          conversation: await closeConversation(db, deps.clock, request.tenant.accountId, request.params.id),
        }
      },
    )

    app.post<{ Params: Static<typeof IdParams> }>(
      '/conversations/:id/reopen',
      {
        config: { scope: 'messages:write' },
        schema: {
          operationId: 'reopenConversation',
          summary: 'Reopen a closed conversation',
          description: 'Needs messages:write.',
          tags,
          params: IdParams,
          response: { 200: ConversationResponse },
        },
      },
      async (request) => {
        return { conversation: await reopenConversation(db, request.tenant.accountId, request.params.id) }
      },
    )

    app.put<{ Params: Static<typeof IdParams>; Body: Static<typeof AssignBody> }>(
      '/conversations/:id/assignee',
      {
        config: { scope: 'messages:write' },
        schema: {
          operationId: 'assignConversation',
          summary: 'Assign a conversation to a team member, or to nobody',
          description:
            'Needs messages:write. member_id: an active member of this account (another account’s is 404, an invited one 400 member_not_active); null unassigns.',
          tags,
          params: IdParams,
          body: AssignBody,
          response: { 200: ConversationResponse },
        },
      },
      async (request) => {
        const { accountId } = request.tenant
        return { conversation: await assignConversation(db, accountId, request.params.id, request.body.member_id) }
      },
    )

    app.post<{ Params: Static<typeof IdParams> }>(
      '/conversations/:id/read',
      {
        config: { scope: 'messages:write' },
        schema: {
          operationId: 'markConversationRead',
          summary: 'Mark a conversation read (unread_count 0)',
          description: 'Needs messages:write.',
          tags,
          params: IdParams,
          response: { 200: ConversationResponse },
        },
      },
      async (request) => {
        return { conversation: await markConversationRead(db, request.tenant.accountId, request.params.id) }
      },
    )

    app.get<{ Params: Static<typeof IdParams> }>(
      '/messages/:id',
      {
        config: { scope: 'inbox:read' },
        schema: {
          operationId: 'getMessage',
          summary: 'One message',
          description: 'Needs inbox:read. With its delivery status, automated, ai and the provider’s error code.',
          tags,
          params: IdParams,
          response: { 200: Type.Object({ message: MessageDetail }) },
        },
      },
      async (request) => {
        return { message: await getMessage(db, request.tenant.accountId, request.params.id) }
      },
    )

    app.get<{ Params: Static<typeof IdParams>; Querystring: Static<typeof ActivityQuery> }>(
      '/contacts/:id/activity',
      {
        config: { scope: ['contacts:read', 'inbox:read'] },
        schema: {
          operationId: 'listContactActivity',
          summary: 'A contact’s activity, newest first',
          description:
            'Needs contacts:read and inbox:read. Its messages in and out, every opt-in change, its creation; at most limit items.',
          tags,
          params: IdParams,
          querystring: ActivityQuery,
          response: { 200: ActivityResponse },
        },
      },
      async (request) => {
        const { accountId } = request.tenant
        return contactActivity(db, accountId, request.params.id, request.query.limit ?? 50)
      },
    )
  }
}
