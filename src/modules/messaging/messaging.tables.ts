import { integer, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
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
