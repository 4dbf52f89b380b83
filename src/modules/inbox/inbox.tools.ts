import { Type } from 'typebox'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { ContactId, paging, Uuid } from '../../platform/tools/common.ts'
import { obj } from '../../platform/tools/outputs.ts'
import { restRule, type ToolContext, toolsUsing } from '../../platform/tools/tool.ts'
import { ActivityResponse, ConversationResponse, MessageDetail } from './inbox.app.ts'
import {
  assignConversation,
  closeConversation,
  contactActivity,
  getConversation,
  getMessage,
  markConversationRead,
  reopenConversation,
} from './inbox.manage.ts'
import {
  ConversationPage,
  ConversationsQuery,
  HistoryPage,
  HistoryQuery,
  MessagePage,
  MessagesQuery,
} from './inbox.schemas.ts'
import type { InboxService } from './inbox.service.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  inbox: InboxService
}

const defineTool = toolsUsing<Services>()

const Channel = Type.Union([Type.Literal('chat'), Type.Literal('email')])

const db = (ctx: ToolContext<Services>) => ctx.platform.database.orm

const ConversationId = Uuid('the conversation id, from list_conversations')

export const listConversations = defineTool({
  name: 'list_conversations',
  title: 'List conversations',
  description: 'Inbox conversations, newest first, optionally of one channel (chat or email).',
  scope: 'inbox:read',
  rest: 'GET /inbox/conversations',
  output: ConversationPage,
  kind: 'read',
  input: Type.Object({
    channel: Type.Optional(Channel),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, default: 0 })),
  }),
  async run(ctx, args) {
    const query = restRule(ConversationsQuery, args, 'query')
    const { items, ...page } = await ctx.services.inbox.listConversations(ctx.tenant, query)
    return { conversations: items, ...page }
  },
})

export const getConversationMessages = defineTool({
  name: 'get_conversation_messages',
  title: 'Read a conversation',
  description:
    'The newest messages of a conversation, oldest first within the page; offset pages backwards from the newest end.',
  scope: 'inbox:read',
  rest: 'GET /inbox/conversations/{id}/messages',
  output: HistoryPage,
  kind: 'read',
  input: Type.Object({
    conversation_id: Uuid('the conversation id, from list_conversations'),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, default: 0 })),
  }),
  async run(ctx, args) {
    const query = restRule(HistoryQuery, { limit: args.limit, offset: args.offset }, 'query')
    const { items, ...page } = await ctx.services.inbox.conversationMessages(ctx.tenant, args.conversation_id, query)
    return { messages: items, ...page }
  },
})

export const listMessages = defineTool({
  name: 'list_messages',
  title: 'List messages',
  description:
    'Messages across all conversations, newest first: inbound (default) or outbound, optionally of one conversation or only those created strictly after a time (for polling new inbound messages).',
  scope: 'inbox:read',
  rest: 'GET /messages',
  output: MessagePage,
  kind: 'read',
  input: Type.Object({
    direction: Type.Optional(Type.Union([Type.Literal('inbound'), Type.Literal('outbound')], { default: 'inbound' })),
    ...paging(100, 25),
    created_after: Type.Optional(Type.String({ format: 'date-time', maxLength: 40 })),
    conversation_id: Type.Optional(Uuid('only this conversation')),
  }),
  async run(ctx, args) {
    const query = restRule(MessagesQuery, args, 'query')
    const direction = query.direction === 'in' || query.direction === 'inbound' ? 'inbound' : 'outbound'
    const { items, ...page } = await ctx.services.inbox.listMessages(ctx.tenant, { ...query, direction })
    return { messages: items, ...page }
  },
})

export const getConversationTool = defineTool({
  name: 'get_conversation',
  title: 'Get a conversation',
  description:
    'One conversation: its contact, channel, last message preview, unread count, whether it needs a person, its status (open, closed) and assignee. get_conversation_messages reads its messages.',
  scope: 'inbox:read',
  rest: 'GET /app/conversations/{id}',
  output: ConversationResponse,
  kind: 'read',
  input: Type.Object({ conversation_id: ConversationId }),
  async run(ctx, args) {
    return { conversation: await getConversation(db(ctx), ctx.tenant.accountId, args.conversation_id) }
  },
})

export const closeConversationTool = defineTool({
  name: 'close_conversation',
  title: 'Close a conversation',
  description:
    'Mark a conversation as done (status closed). Nothing is sent to the customer; their next message opens it again.',
  scope: 'messages:write',
  rest: 'POST /app/conversations/{id}/close',
  output: ConversationResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ conversation_id: ConversationId }),
  async run(ctx, args) {
    const conversation = await closeConversation(
      db(ctx),
      ctx.platform.clock,
      ctx.tenant.accountId,
      args.conversation_id,
    )
    return { conversation }
  },
})

export const reopenConversationTool = defineTool({
  name: 'reopen_conversation',
  title: 'Reopen a conversation',
  description: 'Open a closed conversation again (status open), e.g. to follow up on it. Nothing is sent.',
  scope: 'messages:write',
  rest: 'POST /app/conversations/{id}/reopen',
  output: ConversationResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ conversation_id: ConversationId }),
  async run(ctx, args) {
    return { conversation: await reopenConversation(db(ctx), ctx.tenant.accountId, args.conversation_id) }
  },
})

export const assignConversationTool = defineTool({
  name: 'assign_conversation',
  title: 'Assign a conversation to a team member',
  description:
    'Give a conversation to an active team member (member_id from list_team_members) to handle, or to nobody (null). An invited person who has not accepted yet cannot be assigned (400 member_not_active).',
  scope: 'messages:write',
  rest: 'PUT /app/conversations/{id}/assignee',
  output: ConversationResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({
    conversation_id: ConversationId,
    member_id: Type.Union([Uuid('the team member’s id'), Type.Null()], { description: 'null: assigned to nobody' }),
  }),
  async run(ctx, args) {
    const conversation = await assignConversation(db(ctx), ctx.tenant.accountId, args.conversation_id, args.member_id)
    return { conversation }
  },
})

export const markConversationReadTool = defineTool({
  name: 'mark_conversation_read',
  title: 'Mark a conversation read',
  description:
    'Set a conversation’s unread count to 0, as opening it in the inbox does. Only the inbox’s own counter changes; the customer sees no read receipt.',
  scope: 'messages:write',
  rest: 'POST /app/conversations/{id}/read',
  output: ConversationResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ conversation_id: ConversationId }),
  async run(ctx, args) {
    return { conversation: await markConversationRead(db(ctx), ctx.tenant.accountId, args.conversation_id) }
  },
})

export const getMessageTool = defineTool({
  name: 'get_message',
  title: 'Get a message',
  description:
    'One message by id: direction, channel, type, text, media, its delivery status (sent, delivered, read, failed) with the provider’s error code, the template it was, and whether it was automated or written by the AI.',
  scope: 'inbox:read',
  rest: 'GET /app/messages/{id}',
  output: obj({ message: MessageDetail }),
  kind: 'read',
  input: Type.Object({ message_id: Uuid('the message id, from list_messages or get_conversation_messages') }),
  async run(ctx, args) {
    return { message: await getMessage(db(ctx), ctx.tenant.accountId, args.message_id) }
  },
})

export const getContactActivity = defineTool({
  name: 'get_contact_activity',
  title: 'A contact’s activity timeline',
  description:
    'What happened with a contact, newest first: its messages in and out (automated and AI ones marked), every opt-in change with its source, and when it was created. Needs inbox:read besides contacts:read.',
  scope: 'contacts:read',
  rest: 'GET /app/contacts/{id}/activity',
  output: ActivityResponse,
  kind: 'read',
  input: Type.Object({
    contact_id: ContactId,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  }),
  async run(ctx, args) {
    requireScope(ctx.tenant, 'inbox:read')
    return contactActivity(db(ctx), ctx.tenant.accountId, args.contact_id, args.limit ?? 50)
  },
})

/** In the order the tool server lists them. */
export const inboxTools = [
  listConversations,
  getConversationMessages,
  listMessages,
  getConversationTool,
  closeConversationTool,
  reopenConversationTool,
  assignConversationTool,
  markConversationReadTool,
  getMessageTool,
  getContactActivity,
]
