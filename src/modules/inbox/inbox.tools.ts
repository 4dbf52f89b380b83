import { Type } from 'typebox'
import { ContactId, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { obj } from '../../platform/tools/outputs.ts'
import {
  assignConversation,
  closeConversation,
  getConversation,
  getInboxCounts,
  getMessage,
  listContactActivity,
  listInboxConversations,
  MessageDetail,
  markConversationRead,
  reopenConversation,
  snoozeConversation,
} from './inbox.app.ts'
import { addConversationNote, listMentions } from './inbox.notes.app.ts'
import { type InboxServices, listConversationMessages, listConversations, listMessages } from './inbox.routes.ts'
import {
  getInboxRouting,
  listAvailability,
  setAvailability,
  updateAssignmentSettings,
  updateOpeningHours,
} from './inbox.routing.app.ts'

/** The spec's offset of the paged tools: at most 100000 (the REST routes give it only a minimum). */
const Offset = Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, default: 0 }))
const ConversationId = Uuid('the conversation id, from list_conversations')
const tool = operationTools<InboxServices>({ id: { name: 'conversation_id', schema: ConversationId } })

export const inboxTools = [
  tool(listConversations, {
    name: 'list_conversations',
    description: 'Inbox conversations, newest first, optionally of one channel (chat or email).',
    pick: ['channel', 'limit', 'offset'],
    schemas: { offset: Offset },
  }),
  tool(listConversationMessages, {
    name: 'get_conversation_messages',
    title: 'Read a conversation',
    description:
      'The newest messages of a conversation, oldest first within the page; offset pages backwards from the newest end.',
    schemas: { offset: Offset },
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
      'One conversation: its contact, channel, last message preview, unread count, whether it needs a person, its status (open, snoozed with snoozed_until or snooze_until_reply, closed) and assignee. get_conversation_messages reads its messages.',
  }),
  tool(closeConversation, {
    name: 'close_conversation',
    description:
      'Mark a conversation as done (status closed). Nothing is sent to the customer; their next message opens it again.',
    idempotent: true,
  }),
  tool(reopenConversation, {
    name: 'reopen_conversation',
    title: 'Reopen a conversation',
    description:
      'Open a closed or snoozed conversation again (status open), e.g. to follow up on it; a snooze ends. Nothing is sent.',
    idempotent: true,
  }),
  tool(snoozeConversation, {
    name: 'snooze_conversation',
    title: 'Snooze a conversation',
    description:
      'Put a conversation away until a time (until, ISO date-time in the future, at most a year ahead) or until the customer writes (until_reply: true); exactly one of the two. Status snoozed: it opens again by itself at that time, and at once when the customer writes. Snoozing again replaces the earlier snooze; reopen_conversation or close_conversation ends it. Nothing is sent to the customer.',
    idempotent: true,
    schemas: {
      until: Type.Optional(Type.String({ format: 'date-time', maxLength: 40 })),
    },
  }),
  tool(listInboxConversations, {
    name: 'list_inbox',
    title: 'The inbox by view, with search',
    description:
      'The inbox as the team sees it, latest activity first, each conversation with its contact’s name, phone and e-mail: view mine (open, assigned to you; needs a member, not a key), unassigned (open, nobody), all (every open one), snoozed or closed; without a view every conversation. q searches contact name, phone number and message text (case-insensitive). get_inbox_counts tells how many each view holds.',
  }),
  tool(getInboxCounts, {
    name: 'get_inbox_counts',
    title: 'How many conversations each inbox view holds',
    description:
      'Counts of the inbox views: mine (null for a key without a member), unassigned, all (open), snoozed, closed; each count stops at 10000.',
  }),
  tool(assignConversation, {
    name: 'assign_conversation',
    title: 'Assign a conversation to a team member',
    description:
      'Give a conversation to an active team member (member_id from list_team_members) to handle, or to nobody (null). An invited person who has not accepted yet cannot be assigned (400 member_not_active).',
    describe: { member_id: 'null: assigned to nobody' },
  }),
  tool(markConversationRead, {
    name: 'mark_conversation_read',
    title: 'Mark a conversation read',
    description:
      'Set a conversation’s unread count to 0, as opening it in the inbox does. Only the inbox’s own counter changes; the customer sees no read receipt.',
    idempotent: true,
  }),
  tool(getMessage, {
    name: 'get_message',
    title: 'Get a message',
    description:
      'One message by id: direction, channel, type, text, media, its delivery status (sent, delivered, read, failed) with the provider’s error code, the template it was, and whether it was automated or written by the AI.',
    id: { name: 'message_id', schema: Uuid('the message id, from list_messages or get_conversation_messages') },
    output: obj({ message: MessageDetail }),
  }),
  tool(listContactActivity, {
    name: 'get_contact_activity',
    title: 'A contact’s activity timeline',
    description:
      'What happened with a contact, newest first: its messages in and out (automated and AI ones marked), every opt-in change with its source, and when it was created. Needs inbox:read besides contacts:read.',
    id: { name: 'contact_id', schema: ContactId },
  }),
  tool(addConversationNote, {
    name: 'add_conversation_note',
    description:
      'An internal note for the team on a conversation: shown in the inbox’s thread, never sent to the customer. `@Name` or `@local-part` of a team member’s e-mail address mentions them (list_team_members names them); an unknown @word stays text.',
  }),
  tool(listMentions, {
    name: 'list_mentions',
    title: 'My mentions',
    description:
      'The internal notes that mention the team member you act for, newest first: conversation, contact, excerpt, author and whether it was read; unread_count counts all unread ones. Acting for no member (an API key) there are none.',
  }),
]

/** The routing tools (inbox.routing.app.ts): assignment and opening-hours settings, members' availability. */
export const routingTools = [
  tool(getInboxRouting, {
    name: 'get_inbox_routing',
    title: 'Get assignment, opening hours and away message',
    description:
      'The inbox’s automatic assignment (off or round_robin with a limit of open conversations per member), the opening hours per weekday in their time zone, the days off, the away message, and whether the business is open now.',
  }),
  tool(updateAssignmentSettings, {
    name: 'update_assignment_settings',
    description:
      'Switch automatic assignment off or to round_robin and set the limit of open conversations per member. With round_robin a new conversation goes to the available member with room who has waited longest, or waits until one has room.',
  }),
  tool(updateOpeningHours, {
    name: 'update_opening_hours',
    title: 'Set opening hours and the away message',
    description:
      'Opening hours per weekday (several HH:MM ranges a day, local time in timezone), days off (YYYY-MM-DD), and the away message a customer who writes outside them gets once per away_interval_minutes. Only the fields given change; weekly replaces every weekday.',
  }),
  tool(listAvailability, {
    name: 'list_member_availability',
    title: 'Who takes conversations',
    description:
      'Every team member who may answer: available or away for automatic assignment, their open conversations and last automatic assignment.',
  }),
  tool(setAvailability, {
    name: 'set_member_availability',
    description:
      'Set a team member (member_id from list_member_availability) available or away for automatic assignment. Available with room: waiting conversations go to them at once. Another member than yourself needs settings:write.',
  }),
]
