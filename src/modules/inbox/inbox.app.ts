import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { COUNT_CAP, SEARCH_MAX, VIEWS } from './inbox.lists.ts'
import { notesOperations } from './inbox.notes.app.ts'
import type { InboxServices } from './inbox.routes.ts'
import { routingOperations } from './inbox.routing.app.ts'
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
    view: Type.Optional(
      Type.Union(
        VIEWS.map((v) => Type.Literal(v)),
        {
          description:
            'mine: open and assigned to the signed-in member (a key without a member: 400 view_needs_member); unassigned: open and assigned to nobody; all: every open one; snoozed; closed. Without a view: every conversation whatever its status.',
        },
      ),
    ),
    q: Type.Optional(
      Type.String({
        maxLength: SEARCH_MAX,
        description:
          'search: the contact’s name or phone number, or the text of any message of the conversation, contains it (case-insensitive; % and _ are plain characters); combines with view',
      }),
    ),
  },
  { additionalProperties: false },
)
const Count = Type.Integer({ minimum: 0, maximum: COUNT_CAP })
export const InboxCounts = Type.Object(
  {
    counts: Type.Object({
      mine: Type.Union([Count, Type.Null()], { description: 'null when the caller is no member (a key)' }),
      unassigned: Count,
      all: Count,
      snoozed: Count,
      closed: Count,
    }),
  },
  {
    title: 'InboxCounts',
    description: `How many conversations each view of GET /app/conversations holds; each count stops at ${COUNT_CAP} (shown as ${COUNT_CAP}+).`,
  },
)
export const SnoozeBody = Type.Object(
  {
    until: Type.Optional(
      Type.String({ format: 'date-time', description: 'when it opens again: in the future, at most a year ahead' }),
    ),
    until_reply: Type.Optional(Type.Literal(true, { description: 'true: snoozed until the customer writes' })),
  },
  { additionalProperties: false, title: 'SnoozeChoice' },
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
  summary: 'The inbox: conversations by latest activity, with their contacts; by view and search',
  description:
    'Needs inbox:read. view: mine, unassigned, all (open ones), snoozed, closed; without a view every conversation whatever its status (as before views). q searches contact name, phone and message text, combined with the view. Latest activity first, then id. Each conversation as in GET /v1/inbox/conversations, its contact with name, phone (E.164) and e-mail, so the list can name a person without a name by their number; unread_count is the account’s total over every conversation. One statement.',
  tags,
  query: InboxQuery,
  response: InboxResponse,
  handle: ({ inbox }, { tenant, query }) =>
    inbox.inbox(tenant, {
      limit: query.limit ?? 100,
      offset: query.offset ?? 0,
      ...(query.view ? { view: query.view } : {}),
      ...(query.q === undefined ? {} : { q: query.q }),
    }),
})

export const getInboxCounts = operation({
  method: 'GET',
  path: '/inbox/counts',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'getInboxCounts',
  summary: 'How many conversations each view holds',
  description: `Needs inbox:read. For the signed-in member: mine, unassigned, all (open ones), snoozed, closed; one statement, each count read from its view's index and stopping at ${COUNT_CAP}.`,
  tags,
  response: InboxCounts,
  handle: ({ inbox }, { tenant }) => inbox.inboxCounts(tenant),
})

export const snoozeConversation = operation({
  method: 'POST',
  path: '/conversations/{id}/snooze',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'snoozeConversation',
  summary: 'Snooze a conversation until a time or until the customer writes',
  description:
    'Needs messages:write. Body {until} (a time in the future) or {until_reply: true}, exactly one (400 snooze_choice, snooze_time_past, snooze_time_far, naming the field). Status snoozed: it opens again by itself at until, and at once when the customer writes. Snoozing again replaces the earlier snooze; close and reopen end it. Nothing is sent.',
  tags,
  params: IdParams,
  body: SnoozeBody,
  response: ConversationResponse,
  handle: async ({ inbox }, { tenant, params, body }) => ({
    conversation: await inbox.snoozeConversation(tenant, params.id, body),
  }),
})

export const getConversation = operation({
  method: 'GET',
  path: '/conversations/{id}',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'getConversation',
  summary: 'One conversation',
  description:
    'Needs inbox:read. Its contact, last message, unread count, status (open, snoozed, closed) and assignee.',
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
  description:
    'Needs messages:write. The customer’s next message opens it again; a snoozed one closed loses its wake-up.',
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
  summary: 'Reopen a closed or snoozed conversation',
  description: 'Needs messages:write. A snooze ends (its wake-up is cancelled).',
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
 * message, a contact's activity, internal notes and mentions (inbox.notes.app.ts). Reading needs inbox:read; changing a conversation's handling needs
 * messages:write (what a member who answers customers has).
 */
export function inboxAppRoutes(inbox: InboxService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { inbox }, [
      listInboxConversations,
      getConversation,
      closeConversation,
      reopenConversation,
      snoozeConversation,
      assignConversation,
      markConversationRead,
      getInboxCounts,
      getMessage,
      listContactActivity,
      ...routingOperations,
      ...notesOperations,
    ])
  }
}
