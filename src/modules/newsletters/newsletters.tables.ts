import { index, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core'
import { accounts } from '../../platform/auth/auth.tables.ts'

const at = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' })

export const NEWSLETTER_STATUSES = ['draft', 'scheduled', 'sending', 'sent'] as const
export type NewsletterStatus = (typeof NEWSLETTER_STATUSES)[number]

/**
 * Where a scheduled or sending newsletter stands: `scheduled` (waiting for its time), `waiting_for_approval` (its
 * template is not yet approved at the provider), `waiting_for_sending` (sending is not possible: no number, paused,
 * blocked), `fanout` (recipients being written), `sending`, `done`, `stopped` (cannot go out: its template was
 * rejected).
 */
export const NEWSLETTER_PHASES = [
  'draft',
  'scheduled',
  'waiting_for_approval',
  'waiting_for_sending',
  'fanout',
  'sending',
  'done',
  'stopped',
] as const
export type NewsletterPhase = (typeof NEWSLETTER_PHASES)[number]

export interface NewsletterCta {
  text: string
  url: string
}

/** A recipient filter by tags; every list optional, an empty filter selects every confirmed contact. */
export interface NewsletterSegment {
  tags_any?: string[]
  tags_all?: string[]
  tags_exclude?: string[]
}

export const newsletters = pgTable(
  'newsletters',
  {
    accountId: uuid('account_id')
      .notNull()
      .references(() => accounts.id, { onDelete: 'cascade' }),
    id: uuid('id').notNull(),
    name: text('name').notNull(),
    subject: text('subject').notNull(),
    content: text('content').notNull(),
    channel: text('channel', { enum: ['chat'] })
      .notNull()
      .default('chat'),
    status: text('status', { enum: NEWSLETTER_STATUSES }).notNull(),
    phase: text('phase', { enum: NEWSLETTER_PHASES }).notNull(),
    cta: jsonb('cta').$type<NewsletterCta>(),
    segment: jsonb('segment').$type<NewsletterSegment>(),
    scheduledAt: at('scheduled_at'),
    /** the marketing template that carries it at the provider (made and submitted when it is scheduled) */
    templateId: uuid('template_id'),
    stopReason: text('stop_reason'),
    resumesAt: at('resumes_at'),
    /** the last contact id written by the fan-out: a restarted fan-out continues after it */
    fanoutCursor: uuid('fanout_cursor'),
    startedAt: at('started_at'),
    finishedAt: at('finished_at'),
    createdAt: at('created_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.id] }),
    index('newsletters_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
  ],
)
