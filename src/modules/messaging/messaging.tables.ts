import {
  foreignKey,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'
import { accounts } from '../../platform/auth/auth.tables.ts'

const accountId = () =>
  uuid('account_id')
    .notNull()
    .references(() => accounts.id, { onDelete: 'cascade' })

/**
 * Messages counted against the plan's monthly quota, one row per account and calendar month (`YYYY-MM` in the
 * account's timezone). A send reserves a unit with one conditional upsert, so two concurrent sends can never
 * both take the last free unit.
 */
export const messageQuota = pgTable(
  'message_quota',
  {
    accountId: accountId(),
    month: text('month').notNull(),
    used: integer('used').notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.month] })],
)

/** A short link `{publicUrl}/public/t/c/<id>` put into a sent text for one contact. */
export const trackedLinks = pgTable(
  'tracked_links',
  {
    accountId: accountId(),
    /** random and global: the public redirect knows only the id */
    id: text('id').notNull(),
    contactId: uuid('contact_id').notNull(),
    url: text('url').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.id] }), uniqueIndex('tracked_links_id_uq').on(t.id)],
)

/** One row per click on a short link: which link, which contact, when. */
export const linkClicks = pgTable(
  'link_clicks',
  {
    accountId: accountId(),
    linkId: text('link_id').notNull(),
    contactId: uuid('contact_id').notNull(),
    clickedAt: timestamp('clicked_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [
    index('link_clicks_link_idx').on(t.accountId, t.linkId),
    foreignKey({
      columns: [t.accountId, t.linkId],
      foreignColumns: [trackedLinks.accountId, trackedLinks.id],
    }).onDelete('cascade'),
  ],
)
