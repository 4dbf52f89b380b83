import { Type } from 'typebox'
import { ContactId, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { obj } from '../../platform/tools/outputs.ts'
import {
  assignConversation,
  closeConversation,
  getConversation,
  getMessage,
  listContactActivity,
  MessageDetail,
  markConversationRead,
  reopenConversation,
} from './inbox.app.ts'
import { type InboxServices, listConversationMessages, listConversations, listMessages } from './inbox.routes.ts'

// Each tool stands for an operation of inbox.routes.ts or inbox.app.ts: its arguments, limits, scope and answer are
// the operation's; the spec's argument names (conversation_id, message_id, contact_id) are mapped onto `id`.
const tool = operationTools<InboxServices>()

/** The spec's offset of the paged tools: at most 100000 (the REST routes give it only a minimum). */
const Offset = Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, default: 0 }))
const ConversationId = Uuid('the conversation id, from list_conversations')
const byConversationId = { rename: { conversation_id: 'id' }, schemas: { conversation_id: ConversationId } }

/** In the order the tool server lists them. */
export const inboxTools = [
  tool(listConversations, {
    name: 'list_conversations',
    title: 'List conversations',
    description: 'Inbox conversations, newest first, optionally of one channel (chat or email).',
    pick: ['channel', 'limit', 'offset'],
    schemas: { offset: Offset },
  }),
  tool(listConversationMessages, {
    name: 'get_conversation_messages',
    title: 'Read a conversation',
    description:
      'The newest messages of a conversation, oldest first within the page; offset pages backwards from the newest end.',
    ...byConversationId,
    schemas: { ...byConversationId.schemas, offset: Offset },
  }),
  tool(listMessages, {
    name: 'list_messages',
    title: 'List messages',
    description:
      'Messages across all conversations, newest first: inbound (default) or outbound, optionally of one conversation or only those created strictly after a time (for polling new inbound messages).',
    schemas: {
      // the tool takes the directions by their full names only
      direction: Type.Optional(Type.Union([Type.Literal('inbound'), Type.Literal('outbound')], { default: 'inbound' })),
      created_after: Type.Optional(Type.String({ format: 'date-time', maxLength: 40 })),
      conversation_id: Type.Optional(Uuid('only this conversation')),
    },
  }),
  tool(getConversation, {
    name: 'get_conversation',
    title: 'Get a conversation',
    description:
      'One conversation: its contact, channel, last message preview, unread count, whether it needs a person, its status (open, closed) and assignee. get_conversation_messages reads its messages.',
    ...byConversationId,
  }),
  tool(closeConversation, {
    name: 'close_conversation',
    title: 'Close a conversation',
    description:
      'Mark a conversation as done (status closed). Nothing is sent to the customer; their next message opens it again.',
    ...byConversationId,
    idempotent: true,
  }),
  tool(reopenConversation, {
    name: 'reopen_conversation',
    title: 'Reopen a conversation',
    description: 'Open a closed conversation again (status open), e.g. to follow up on it. Nothing is sent.',
    ...byConversationId,
    idempotent: true,
  }),
  tool(assignConversation, {
    name: 'assign_conversation',
    title: 'Assign a conversation to a team member',
    description:
      'Give a conversation to an active team member (member_id from list_team_members) to handle, or to nobody (null). An invited person who has not accepted yet cannot be assigned (400 member_not_active).',
    ...byConversationId,
    schemas: {
      ...byConversationId.schemas,
      member_id: Type.Union([Uuid('the team member’s id'), Type.Null()], { description: 'null: assigned to nobody' }),
    },
  }),
  tool(markConversationRead, {
    name: 'mark_conversation_read',
    title: 'Mark a conversation read',
    description:
      'Set a conversation’s unread count to 0, as opening it in the inbox does. Only the inbox’s own counter changes; the customer sees no read receipt.',
    ...byConversationId,
    idempotent: true,
  }),
  tool(getMessage, {
    name: 'get_message',
    title: 'Get a message',
    description:
      'One message by id: direction, channel, type, text, media, its delivery status (sent, delivered, read, failed) with the provider’s error code, the template it was, and whether it was automated or written by the AI.',
    rename: { message_id: 'id' },
    schemas: { message_id: Uuid('the message id, from list_messages or get_conversation_messages') },
    output: obj({ message: MessageDetail }),
  }),
  tool(listContactActivity, {
    name: 'get_contact_activity',
    title: 'A contact’s activity timeline',
    description:
      'What happened with a contact, newest first: its messages in and out (automated and AI ones marked), every opt-in change with its source, and when it was created. Needs inbox:read besides contacts:read.',
    rename: { contact_id: 'id' },
    schemas: { contact_id: ContactId },
  }),
]
