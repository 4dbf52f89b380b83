import { Type } from 'typebox'
import { operationsUsing } from '../../platform/http/operation.ts'
import { pageFields } from '../../platform/http/pagination.ts'
import type { InboxServices } from './inbox.routes.ts'
import { HistoryMessage } from './inbox.schemas.ts'

/**
 * The web app's notes operations under /app (the tool server has them too, inbox.tools.ts): writing an internal note
 * on a conversation, the thread with messages and notes in their place, the signed-in member's mentions.
 */

const tags = ['app']
const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) })
const Member = Type.Object(
  { id: Type.String({ format: 'uuid' }), name: Type.String({ description: 'display name, else e-mail address' }) },
  { title: 'NoteMember' },
)

export const Note = Type.Object(
  {
    kind: Type.Literal('note'),
    id: Type.String({ format: 'uuid' }),
    conversation_id: Type.String({ format: 'uuid' }),
    body: Type.String(),
    author: Type.Union([Member, Type.Null()], {
      description: 'the member who wrote it; null: an API key or an assistant acting for no member',
    }),
    mentions: Type.Array(Member, { description: 'the members its @mentions named when it was written' }),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'ConversationNote' },
)

const ThreadMessage = Type.Object(
  { kind: Type.Literal('message'), ...HistoryMessage.properties },
  { title: 'ThreadMessage' },
)

const Page = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000, default: 0 })),
}

const operation = operationsUsing<InboxServices>()

export const addConversationNote = operation({
  method: 'POST',
  path: '/conversations/{id}/notes',
  mount: 'app',
  scope: 'messages:write',
  operationId: 'addConversationNote',
  summary: 'Write an internal note on a conversation',
  description:
    'Needs messages:write (a viewer cannot). Visible to the team only: never sent to the customer and never in /v1’s message lists. `@Display Name` or `@local-part` of a current member’s e-mail address mentions them (an unknown @word stays text); they find it in GET /app/mentions. The account’s open consoles hear a `note` change. 400 note_empty.',
  tags,
  params: IdParams,
  body: Type.Object(
    { body: Type.String({ minLength: 1, maxLength: 4000, description: 'the note, 1–4000 characters' }) },
    { additionalProperties: false },
  ),
  status: 201,
  response: Type.Object({ note: Note }),
  handle: async ({ inbox }, { tenant, params, body }) => ({ note: await inbox.addNote(tenant, params.id, body.body) }),
})

export const listConversationThread = operation({
  method: 'GET',
  path: '/conversations/{id}/messages',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'listConversationThread',
  summary: 'A conversation’s thread: messages and internal notes by time',
  description:
    'Needs inbox:read. The newest `limit` items (kind message or note), oldest first within the page; `offset` pages backwards from the newest end. A message as in GET /v1/inbox/conversations/{id}/messages; a note with its author and mentions.',
  tags,
  params: IdParams,
  query: Type.Object(Page, { additionalProperties: false }),
  response: Type.Object(
    { items: Type.Array(Type.Union([ThreadMessage, Note])), ...pageFields },
    { title: 'ConversationThread' },
  ),
  handle: ({ inbox }, { tenant, params, query }) =>
    inbox.conversationThread(tenant, params.id, { limit: query.limit ?? 50, offset: query.offset ?? 0 }),
})

export const Mention = Type.Object(
  {
    note_id: Type.String({ format: 'uuid' }),
    conversation_id: Type.String({ format: 'uuid' }),
    contact: Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String() }),
    excerpt: Type.String({ description: 'the note’s first 160 characters' }),
    author: Type.Union([Member, Type.Null()]),
    read: Type.Boolean(),
    created_at: Type.String({ format: 'date-time' }),
  },
  { title: 'Mention' },
)

export const listMentions = operation({
  method: 'GET',
  path: '/mentions',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'listMentions',
  summary: 'The notes that mention the signed-in member, newest first',
  description:
    'Needs inbox:read. The calling member’s (a call that is no member’s, an API key’s, has none). Each with its conversation, the contact’s name, an excerpt, the author and whether the member marked it read; unread_count counts all the member’s unread mentions.',
  tags,
  query: Type.Object(Page, { additionalProperties: false }),
  response: Type.Object(
    {
      mentions: Type.Array(Mention),
      unread_count: Type.Integer({ description: 'the member’s unread mentions, not only this page’s' }),
      ...pageFields,
    },
    { title: 'MentionPage' },
  ),
  handle: ({ inbox }, { tenant, query }) =>
    inbox.listMentions(tenant, { limit: query.limit ?? 50, offset: query.offset ?? 0 }),
})

export const markMentionsRead = operation({
  method: 'POST',
  path: '/mentions/read',
  mount: 'app',
  scope: 'inbox:read',
  operationId: 'markMentionsRead',
  summary: 'Mark the signed-in member’s mentions read',
  description:
    'Needs inbox:read and a member (only their own mentions change; an API key gets 400 member_required). note_ids: these (ids that are no mention of theirs are passed over); without: all of them.',
  tags,
  body: Type.Object(
    { note_ids: Type.Optional(Type.Array(Type.String({ format: 'uuid' }), { minItems: 1, maxItems: 200 })) },
    { additionalProperties: false },
  ),
  response: Type.Object({
    marked: Type.Integer({ description: 'mentions marked read now' }),
    unread_count: Type.Integer(),
  }),
  handle: ({ inbox }, { tenant, body }) => inbox.markMentionsRead(tenant, body.note_ids),
})

export const notesOperations = [addConversationNote, listConversationThread, listMentions, markMentionsRead]
