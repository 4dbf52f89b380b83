import { sql } from 'drizzle-orm'
import { index, integer, jsonb, pgTable, primaryKey, smallint, text, uuid } from 'drizzle-orm/pg-core'
import { accountId, accountTable } from '../auth/auth.tables.ts'
import { at, createdAt, updatedAt } from '../db/columns.ts'

/**
 * Durable background work, written in the same transaction as the change that causes it. A job is `queued`
 * until a worker claims it (`running`, with a lease in `locked_until`); finished jobs are deleted, jobs that
 * failed past their retries stay as `dead` for inspection.
 */
export const jobs = accountTable(
  'jobs',
  {
    queue: text('queue').notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    /** jobs sharing a key (for example one webhook subscription) run at most N at a time */
    concurrencyKey: text('concurrency_key'),
    /** 0: a message sent one at a time (an integration's POST, a step, a consent message); 1: bulk (a newsletter) */
    priority: smallint('priority').notNull().default(0),
    state: text('state', { enum: ['queued', 'running', 'dead'] })
      .notNull()
      .default('queued'),
    runAt: at('run_at').notNull(),
    /** claims so far, including claims whose worker died */
    attempts: integer('attempts').notNull().default(0),
    leaseToken: uuid('lease_token'),
    lockedUntil: at('locked_until'),
    lastError: text('last_error'),
    /** a claimed job of a paced lane: the slot its claim booked, when its message may leave (0083_paced_slots) */
    slotAt: at('slot_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    // The claim scans across accounts by design (one queue for every tenant); these are the exceptions to
    // "account_id leads every index".
    index('jobs_ready_idx').on(t.queue, t.runAt).where(sql`state = 'queued'`),
    // The claim's skip scan over keys with queued work and its per-key pick (`concurrency_key IS NULL` for
    // unkeyed jobs) read this index in order: with thousands queued a claim is a few index probes, not a sort.
    index('jobs_queued_key_idx').on(t.queue, t.concurrencyKey, t.runAt, t.id).where(sql`state = 'queued'`),
    // The fair claim's walk over accounts with queued unkeyed work and its pick per account (by priority, due time).
    index('jobs_fair_idx')
      .on(t.queue, t.accountId, t.priority, t.runAt, t.id)
      .where(sql`state = 'queued' AND concurrency_key IS NULL`),
    index('jobs_running_idx').on(t.queue, t.concurrencyKey, t.lockedUntil).where(sql`state = 'running'`),
  ],
)

/**
 * The pace of an account's lane (its chat number), where every worker process sees it: the claim books a slot for each
 * job it takes and moves `tat` (the lane's next free slot) past them; a message sent outside the claim books its slot
 * on the same row (platform/jobs bookSlot).
 */
export const jobPaces = pgTable(
  'job_paces',
  {
    accountId: accountId(),
    lane: text('lane').notNull(),
    perSecond: integer('per_second').notNull(),
    /** the lane's next free slot; -infinity until the first booking: a booking reads a past one as now */
    tat: at('tat').notNull().default(sql`'-infinity'`),
    /** while lowered (adaptive-pace.ts): the pace the lane recovers to; null at full pace, like the four below */
    fullPerSecond: integer('full_per_second'),
    /** why the pace is lower: `throughput_refused` (the provider answered 130429) */
    reducedReason: text('reduced_reason'),
    /** since when it is lower (the first lowering of this spell) */
    reducedAt: at('reduced_at'),
    lastRefusalAt: at('last_refusal_at'),
    /** the last lowering or recovery step */
    changedAt: at('changed_at'),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.lane] }),
    index('job_paces_lowered_idx').on(t.reducedAt, t.accountId, t.lane).where(sql`full_per_second IS NOT NULL`),
  ],
)
