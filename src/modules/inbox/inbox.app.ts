import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
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
import { Conversation, HistoryMessage as ConversationMessage } from './inbox.schemas.ts'

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
    app.get<{ Params: Static<typeof IdParams> }>(
      '/conversations/:id',
      {
        config: { scope: 'inbox:read' },
        schema: {
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
