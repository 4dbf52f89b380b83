import { integer, pgTable, text, uuid } from 'drizzle-orm/pg-core'
import { at } from '../db/columns.ts'

/**
 * The running processes of a deployment (migration 0064), for `herold status`: not tenant data, one row per
 * `herold serve`, written only by that process (registerProcess).
 */
export const heroldProcesses = pgTable('herold_processes', {
  id: uuid('id').primaryKey(),
  /** all, api or worker */
  role: text('role').notNull(),
  host: text('host').notNull(),
  pid: integer('pid').notNull(),
  /** the address it serves HTTP at; null for a worker */
  url: text('url'),
  /** embedded or postgres */
  database: text('database').notNull(),
  startedAt: at('started_at').notNull(),
  seenAt: at('seen_at').notNull(),
})
