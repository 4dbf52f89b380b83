import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import type { InboxServices } from './inbox.routes.ts'
import { Conversation, HistoryMessage as ConversationMessage } from './inbox.schemas.ts'
import type { InboxService } from './inbox.service.ts'

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

const operation = operationsUsing<InboxServices>()

export const listInboxConversations = operation({
  method: 'GET',
  path: '/conversations',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'listInboxConversations',
  summary: 'The inbox: conversations by latest activity, with their contacts',
  description:
    'Needs inbox:read. Latest activity first, then id. Each conversation as in GET /v1/inbox/conversations, its contact with name, phone (E.164) and e-mail, so the list can name a person without a name by their number; unread_count is the account’s total over every conversation. One statement.',
  tags,
  query: InboxQuery,
  response: InboxResponse,
  handle: ({ inbox }, { tenant, query }) =>
    inbox.inbox(tenant, { limit: query.limit ?? 100, offset: query.offset ?? 0 }),
})

export const getConversation = operation({
  method: 'GET',
  path: '/conversations/{id}',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'getConversation',
  summary: 'One conversation',
  description: 'Needs inbox:read. Its contact, last message, unread count, status (open, closed) and assignee.',
  tags,
  params: IdParams,
  response: ConversationResponse,
  handle: async ({ inbox }, { tenant, params }) => ({ conversation: await inbox.getConversation(tenant, params.id) }),
})

export const closeConversation = operation({
  method: 'POST',
  path: '/conversations/{id}/close',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'closeConversation',
  summary: 'Close a conversation',
  description: 'Needs messages:write. The customer’s next message opens it again.',
  tags,
  params: IdParams,
  response: ConversationResponse,
  handle: async ({ inbox }, { tenant, params }) => ({
    conversation: await inbox.closeConversation(tenant, params.id),
  }),
})

export const reopenConversation = operation({
  method: 'POST',
  path: '/conversations/{id}/reopen',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'reopenConversation',
  summary: 'Reopen a closed conversation',
  description: 'Needs messages:write.',
  tags,
  params: IdParams,
  response: ConversationResponse,
  handle: async ({ inbox }, { tenant, params }) => ({
    conversation: await inbox.reopenConversation(tenant, params.id),
  }),
})

export const assignConversation = operation({
  method: 'PUT',
  path: '/conversations/{id}/assignee',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'assignConversation',
  summary: 'Assign a conversation to a team member, or to nobody',
  description:
    'Needs messages:write. member_id: an active member of this account (another account’s is 404, an invited one 400 member_not_active); null unassigns.',
  tags,
  params: IdParams,
  body: AssignBody,
  response: ConversationResponse,
  handle: async ({ inbox }, { tenant, params, body }) => ({
    conversation: await inbox.assignConversation(tenant, params.id, body.member_id),
  }),
})

export const markConversationRead = operation({
  method: 'POST',
  path: '/conversations/{id}/read',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'markConversationRead',
  summary: 'Mark a conversation read (unread_count 0)',
  description: 'Needs messages:write.',
  tags,
  params: IdParams,
  response: ConversationResponse,
  handle: async ({ inbox }, { tenant, params }) => ({
    conversation: await inbox.markConversationRead(tenant, params.id),
  }),
})

export const getMessage = operation({
  method: 'GET',
  path: '/messages/{id}',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'getMessage',
  summary: 'One message',
  description: 'Needs inbox:read. With its delivery status, automated, ai and the provider’s error code.',
  tags,
  params: IdParams,
  response: Type.Object({ message: MessageDetail }),
  handle: async ({ inbox }, { tenant, params }) => ({ message: await inbox.getMessage(tenant, params.id) }),
})

export const listContactActivity = operation({
  method: 'GET',
  path: '/contacts/{id}/activity',
  mount: 'app',
  scope: ['contacts:read', 'inbox:read'],
  operationId: 'listContactActivity',
  summary: 'A contact’s activity, newest first',
  description:
    'Needs contacts:read and inbox:read. Its messages in and out, every opt-in change, its creation; at most limit items.',
  tags,
  params: IdParams,
  query: ActivityQuery,
  response: ActivityResponse,
  handle: ({ inbox }, { tenant, params, query }) => inbox.contactActivity(tenant, params.id, query.limit ?? 50),
})

/**
 * The inbox's web-app functions under /app: one conversation, closing, reopening, assigning and marking it read, one
 * message, a contact's activity. Reading needs inbox:read; changing a conversation's handling needs
 * messages:write (what a member who answers customers has).
 */
export function inboxAppRoutes(inbox: InboxService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { inbox }, [
      listInboxConversations,
      getConversation,
      closeConversation,
      reopenConversation,
      assignConversation,
      markConversationRead,
      getMessage,
      listContactActivity,
    ])
  }
}
