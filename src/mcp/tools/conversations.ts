import { Type } from 'typebox'
import {
  assignConversation,
  closeConversation,
  contactActivity,
  getConversation,
  getMessage,
  markConversationRead,
  reopenConversation,
} from '../../modules/inbox/inbox.manage.ts'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { out } from '../outputs.ts'
import { defineTool, type ToolContext } from '../tool.ts'
import { ContactId, Uuid } from './common.ts'

/** Handling conversations in the inbox (close, reopen, assign, mark read), one message, a contact's activity. */

const db = (ctx: ToolContext) => ctx.platform.database.orm
const ConversationId = Uuid('the conversation id, from list_conversations')

export const getConversationTool = defineTool({
  name: 'get_conversation',
  title: 'Get a conversation',
  description:
    'One conversation: its contact, channel, last message preview, unread count, whether it needs a person, its status (open, closed) and assignee. get_conversation_messages reads its messages.',
  scope: 'inbox:read',
  rest: 'GET /app/conversations/{id}',
  output: out.get_conversation,
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
  output: out.close_conversation,
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
  output: out.reopen_conversation,
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
  output: out.assign_conversation,
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
  output: out.mark_conversation_read,
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
  output: out.get_message,
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
  output: out.get_contact_activity,
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

export const conversationTools = [
  getConversationTool,
  closeConversationTool,
  reopenConversationTool,
  assignConversationTool,
  markConversationReadTool,
  getMessageTool,
  getContactActivity,
]
