import { text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { accountTable } from '../../platform/auth/auth.tables.ts'
import { timestamps } from '../../platform/db/columns.ts'

/**
 * The account's saved replies: a short code the reply box finds it by (`/danke`), a title, a text whose `{{name}}`
 * variables are filled from the contact as a template's are, and optionally a file of the media library.
 */
export const savedReplies = accountTable(
  'saved_replies',
  {
    /** lowercase letters, digits, - and _, 1..32, without the slash; unique per account */
    code: text('code').notNull(),
    title: text('title').notNull(),
    text: text('text').notNull(),
    /** a media library file of the account (media.id); DELETE /media/{id} is a 409 while a saved reply uses it */
    mediaId: uuid('media_id'),
    ...timestamps(),
  },
  (t) => [uniqueIndex('saved_replies_code_uq').on(t.accountId, t.code)],
)

export type SavedReplyRow = typeof savedReplies.$inferSelect
