import { Type } from 'typebox'
import { pageSchema, paginationQuery } from '../../platform/http/pagination.ts'

const ChannelSchema = Type.Union([Type.Literal('chat'), Type.Literal('email')], { description: '`chat` or `email`' })
const DateTime = Type.String({ format: 'date-time' })

export const Message = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    conversation_id: Type.String({ format: 'uuid' }),
    contact_id: Type.String({ format: 'uuid' }),
    channel: Type.String({ description: '`chat`, `email`, and others' }),
    direction: Type.Union([Type.Literal('inbound'), Type.Literal('outbound')]),
    type: Type.String({
      description: '`text` or a media type: image, video, audio, document, sticker, location, button, …',
    }),
    text: Type.String(),
    media_url: Type.String({ description: "Herold's own address of the media file; empty when none" }),
    media_mime: Type.String(),
    status: Type.Union(
      [Type.Literal('sent'), Type.Literal('delivered'), Type.Literal('read'), Type.Literal('failed'), Type.Null()],
      {
        description: 'outbound delivery status (never moves backwards); null for inbound messages',
      },
    ),
    template: Type.Union(
      [
        Type.Object(
          {
            id: Type.String({ format: 'uuid' }),
            name: Type.String({ description: "the template's name in Herold" }),
            buttons: Type.Array(
              Type.Object({
                type: Type.String({ description: 'QUICK_REPLY or URL' }),
                text: Type.String({ description: 'the label the customer saw (the opt-in confirm button, a link)' }),
                url: Type.Optional(Type.String()),
              }),
            ),
          },
          { title: 'MessageTemplate' },
        ),
        Type.Null(),
      ],
      { description: 'an outbound template message: which template it was and its buttons; null otherwise' },
    ),
    created_at: Type.String({
      format: 'date-time',
      description:
        'strictly increasing per account in commit order: polling with created_after = the newest created_at seen never misses a message',
    }),
  },
  { title: 'Message' },
)

export const HistoryMessage = Type.Object(
  {
    ...Message.properties,
    automated: Type.Boolean({
      description: 'an automated campaign message (broadcast, follow-up, automation, opt-in)',
    }),
    ai: Type.Boolean({ description: 'the reply was written by the built-in AI' }),
  },
  { title: 'ConversationMessage' },
)

export const Conversation = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    contact: Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String() }),
    contact_id: Type.String({ format: 'uuid' }),
    channel: Type.String(),
    last_message: Type.Object({
      preview: Type.String({
        description: 'the last message, at most 120 characters; `[image]` and the like for media without text',
      }),
      direction: Type.Union([Type.Literal('inbound'), Type.Literal('outbound'), Type.Null()]),
      at: DateTime,
    }),
    automated_only: Type.Boolean({
      description: 'only automated campaign messages so far, without a real customer reaction',
    }),
    unread_count: Type.Integer({ description: 'inbound messages not yet read in the inbox' }),
    needs_person: Type.Boolean({
      description:
        'the built-in AI could not answer the last question from the knowledge documents (or may not reply): a person should; cleared by the next reply that is neither automated nor written by the AI',
    }),
    needs_person_reason: Type.Union([Type.String(), Type.Null()], {
      description: 'why: no_passages, not_answered, rate_limited, quota_used_up, send_failed, …',
    }),
    status: Type.Union([Type.Literal('open'), Type.Literal('snoozed'), Type.Literal('closed')], {
      description:
        'closed or snoozed by a person; a snoozed one opens again at snoozed_until, and the customer’s next message opens either again',
    }),
    closed_at: Type.Union([DateTime, Type.Null()]),
    snoozed_until: Type.Union([DateTime, Type.Null()], {
      description: 'snoozed until this time (then it opens again by itself); null otherwise',
    }),
    snooze_until_reply: Type.Boolean({ description: 'snoozed until the customer writes (no time)' }),
    assignee_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
      description: 'the team member (user id) who handles it; null: nobody',
    }),
    created_at: DateTime,
    last_message_at: DateTime,
  },
  { title: 'Conversation' },
)

export const ConversationsQuery = Type.Object({
  channel: Type.Optional(ChannelSchema),
  needs_person: Type.Optional(
    Type.Boolean({ description: 'true: only conversations the built-in AI handed to a person' }),
  ),
  sort: Type.Union([Type.Literal('created_at'), Type.Literal('last_message_at')], {
    default: 'created_at',
    description:
      "`created_at` (default, the spec's order): newest conversation first; `last_message_at` (an addition for the inbox): latest activity first. Either way descending, then id.",
  }),
  // the spec gives the conversation list's offset only a minimum
  ...paginationQuery({ maxLimit: 100, defaultLimit: 25 }),
})

export const ConversationParams = Type.Object({ id: Type.String({ format: 'uuid' }) })

// the spec gives a conversation's messages' offset only a minimum
export const HistoryQuery = Type.Object(paginationQuery({ maxLimit: 100, defaultLimit: 25 }))

export const MessagesQuery = Type.Object({
  direction: Type.Union([Type.Literal('inbound'), Type.Literal('outbound'), Type.Literal('in'), Type.Literal('out')], {
    default: 'inbound',
    description: '`inbound` (default) or `outbound`; `in` and `out` are aliases',
  }),
  ...paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100000 }),
  created_after: Type.Optional(
    Type.String({ format: 'date-time', description: 'only messages created strictly after this time' }),
  ),
  conversation_id: Type.Optional(Type.String({ format: 'uuid' })),
})

export const ConversationPage = pageSchema('conversations', Conversation)
export const HistoryPage = pageSchema('messages', HistoryMessage)
export const MessagePage = pageSchema('messages', Message)
