import { bigint, date, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
import { accountId } from '../../platform/auth/auth.tables.ts'

/** Daily counters per account, day (in the account's timezone) and metric; filled by the rollup. */
export const statsDaily = pgTable(
  'stats_daily',
  {
    accountId: accountId(),
    day: date('day', { mode: 'string' }).notNull(),
    metric: text('metric').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'stats_daily_pk', columns: [t.accountId, t.day, t.metric] })],
)

/** Current totals (contacts, per opt-in state) per account; filled by the rollup. */
export const statsTotals = pgTable(
  'stats_totals',
  {
    accountId: accountId(),
    metric: text('metric').notNull(),
    n: bigint('n', { mode: 'number' }).notNull(),
  },
  (t) => [primaryKey({ name: 'stats_totals_pk', columns: [t.accountId, t.metric] })],
)

/**
 * Changes appended by the database triggers of migration 0029 (insert only: writers never wait on a counter row);
 * day null for a change of a total. The rollup moves them into stats_daily and stats_totals.
 */
export const statsDeltas = pgTable('stats_deltas', {
  accountId: uuid('account_id').notNull(),
  day: date('day', { mode: 'string' }),
  metric: text('metric').notNull(),
  n: bigint('n', { mode: 'number' }).notNull(),
})
