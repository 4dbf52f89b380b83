import { sql } from 'drizzle-orm'
import { foreignKey, index, text, uuid } from 'drizzle-orm/pg-core'
import { accountTable } from '../../platform/auth/auth.tables.ts'
import { at } from '../../platform/db/columns.ts'
import { conversations } from './inbox.tables.ts'

/**
 * Internal notes of the team on a conversation: never sent to the customer, never in /v1's message lists. Written
 * only by the inbox module (inbox.notes.ts); they go with their conversation.
 */
export const conversationNotes = accountTable(
  'conversation_notes',
  {
    conversationId: uuid('conversation_id').notNull(),
    /** the member (user id) who wrote it; null: an API key or an assistant acting for no member */
    authorId: uuid('author_id'),
    /** 1..4000 characters */
    body: text('body').notNull(),
    /** the members (user ids) the body's @mentions named when it was written */
    mentions: uuid('mentions').array().notNull().default(sql`'{}'::uuid[]`),
    /** the mentioned members who marked it read */
    readBy: uuid('read_by').array().notNull().default(sql`'{}'::uuid[]`),
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    foreignKey({
      columns: [t.accountId, t.conversationId],
      foreignColumns: [conversations.accountId, conversations.id],
      name: 'conversation_notes_conversation_fk',
    }).onDelete('cascade'),
    index('conversation_notes_conversation_idx').on(t.accountId, t.conversationId, t.createdAt, t.id),
    index('conversation_notes_mentions_idx').using('gin', t.mentions),
  ],
)
