import { randomUUID } from 'node:crypto'
import { type SQL, sql } from 'drizzle-orm'
import type { Clock } from '../clock.ts'
import type { Db } from '../db/client.ts'
import { recordsetSql } from '../db/rows.ts'
import { currentTraceparent } from '../tracing/tracing.ts'

/** The payload key of the traceparent of the span that enqueued a job (tracing on only); the claim takes it out. */
const TRACE_KEY = '_traceparent'

/** The NOTIFY channel every enqueue signals; workers LISTEN on it so a job starts without polling delay. */
export const JOBS_CHANNEL = 'herold_jobs'

export interface EnqueueInput {
  accountId: string
  queue: string
  payload: Record<string, unknown>
  /** at most the queue's per-key concurrency of jobs with the same key run at once */
  concurrencyKey?: string | null
  /** default: now */
  runAt?: Date
  /** 0 (default): a message sent one at a time, claimed before the account's bulk work (1: a newsletter's sends) */
  priority?: 0 | 1
}

export interface ClaimedJob {
  accountId: string
  id: string
  queue: string
  payload: Record<string, unknown>
  concurrencyKey: string | null
  /** claims so far including this one */
  attempts: number
  runAt: Date
  createdAt: Date
  /** proves this worker still holds the job; every finishing write checks it */
  leaseToken: string
  /** 0 interactive, 1 bulk (a campaign's send): bulk jobs run as bulk work (platform/db/work-priority.ts) */
  priority?: 0 | 1
  /** the W3C traceparent of the span that enqueued it (tracing on): its run's span links to it */
  traceparent?: string
  /**
   * A job of a paced lane: the slot its claim booked for it on the lane (claimJobs), the moment its message may leave
   * and not before (the handler waits for it). Absent: not paced.
   */
  slotAt?: Date
  /**
   * What the claim read beside the job for its handler (JobHandler.claimAlso), and `since`: performance.now() when the
   * claim's statement began, so the handler knows which commits its read may have missed.
   */
  also?: { value: unknown; since: number }
}

/** The job was claimed again by another worker (our lease expired): whatever we were about to write is stale. */
export class LeaseLostError extends Error {
  constructor(job: ClaimedJob) {
    super(`lease on job ${job.queue}/${job.id} was lost`)
  }
}

function rows<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows
}

/**
 * Adds jobs in the caller's transaction: they exist exactly when the change that causes them commits, and the
 * NOTIFY sent here is delivered by PostgreSQL at that commit (never for a rollback).
 */
export async function enqueue(tx: Db, clock: Clock, input: EnqueueInput | EnqueueInput[]): Promise<string[]> {
  const list = Array.isArray(input) ? input : [input]
  if (list.length === 0) return []
  const { ids, insert } = enqueueSql(clock.now(), list)
  // the insert and one NOTIFY per queue in one statement
  await tx.execute(sql`WITH added AS (${insert}) SELECT ${notifyJobsSql('added')} AS notified`)
  return ids
}

/**
 * The INSERT of enqueue as SQL (it returns `queue`), for a caller that folds it into a statement of its own as a
 * data-modifying CTE; that statement must also run `notifyJobsSql` over the CTE's rows.
 */
export function enqueueSql(now: Date, list: EnqueueInput[]): { ids: string[]; insert: SQL } {
  const values = list.map((job) => ({ ...job, id: randomUUID(), runAt: job.runAt ?? now }))
  const traceparent = currentTraceparent()
  // One JSON parameter for all rows: no limit of 65,535 bound parameters on a large fan-out, and cheaper to build.
  const rowsJson = JSON.stringify(
    values.map((job) => ({
      account_id: job.accountId,
      id: job.id,
      queue: job.queue,
      payload: traceparent ? { ...job.payload, [TRACE_KEY]: traceparent } : job.payload,
      concurrency_key: job.concurrencyKey ?? null,
      run_at: job.runAt.toISOString(),
      priority: job.priority ?? 0,
    })),
  )
  return {
    ids: values.map((job) => job.id),
    insert: sql`INSERT INTO jobs (account_id, id, queue, payload, concurrency_key, run_at, created_at, priority)
      SELECT r.account_id, r.id, r.queue, r.payload, r.concurrency_key, r.run_at, ${now.toISOString()}::timestamptz,
        r.priority
      FROM jsonb_to_recordset(${rowsJson}::jsonb)
        AS r(account_id uuid, id uuid, queue text, payload jsonb, concurrency_key text, run_at timestamptz,
          priority smallint)
      RETURNING queue, account_id`,
  }
}

/**
 * A scalar expression that sends the NOTIFY of every queue in `cte` (a CTE over enqueueSql's or enqueueSelectSql's
 * insert). The payload is the queue and, when the jobs belong to at most NOTIFY_ACCOUNTS_MAX accounts, their ids
 * (`queue account account…`, see parseJobsNotice): a runner claims a newcomer's work at once and lets an account's
 * stream of work gather behind its running batch.
 */
export function notifyJobsSql(cte: string): SQL {
  return sql`(SELECT count(pg_notify(${JOBS_CHANNEL}, q.notice)) FROM (
    SELECT CASE WHEN count(DISTINCT account_id) <= ${NOTIFY_ACCOUNTS_MAX}
      THEN queue || ' ' || string_agg(DISTINCT account_id::text, ' ') ELSE queue END AS notice
    FROM ${sql.identifier(cte)} GROUP BY queue) q)`
}

/** A NOTIFY names at most this many accounts (a payload must stay under 8,000 bytes); more, and it names none. */
export const NOTIFY_ACCOUNTS_MAX = 100

/** A NOTIFY on JOBS_CHANNEL read: its queue, and the accounts whose work it announces (undefined: not named). */
export function parseJobsNotice(payload: string): { queue: string; accounts?: string[] } {
  const [queue, ...accounts] = payload.split(' ')
  return accounts.length > 0 ? { queue, accounts } : { queue }
}

export interface JobRow {
  account_id: string
  id: string
  queue: string
  payload: Record<string, unknown> | string
  concurrency_key: string | null
  attempts: number
  run_at: Date | string
  created_at: Date | string
  lease_token: string
  priority?: number | string
  /** the slot the claim booked on the job's paced lane (0083_paced_slots) */
  slot_at?: Date | string | null
  /** the claim's `also` column (claimJobs' `also`) */
  also?: unknown
}

/** A job row as its claimer holds it (a claim's, or one written already claimed for BatchContext.handOff). */
export function toClaimed(row: JobRow): ClaimedJob {
  const payload: Record<string, unknown> = typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload
  const traceparent = payload[TRACE_KEY]
  if (traceparent !== undefined) delete payload[TRACE_KEY]
  return {
    ...(typeof traceparent === 'string' ? { traceparent } : {}),
    ...(row.slot_at ? { slotAt: new Date(row.slot_at) } : {}),
    accountId: row.account_id,
    id: row.id,
    queue: row.queue,
    payload,
    concurrencyKey: row.concurrency_key,
    attempts: Number(row.attempts),
    runAt: new Date(row.run_at),
    createdAt: new Date(row.created_at),
    leaseToken: row.lease_token,
    priority: Number(row.priority ?? 0) === 1 ? 1 : 0,
  }
}

/** A claimed row as toClaimed makes it, with the claim's `also` read when it asked for one. */
function claimedFrom(row: JobRow, since: number | undefined): ClaimedJob {
  const job = toClaimed(row)
  if (since !== undefined) job.also = { value: row.also ?? null, since }
  return job
}

/**
 * How far ahead of now a paced lane's claim books slots (docs/architecture.md, "Pacing"): a worker holds its lane's
 * next fifth of a second, so its messages leave on time however long a claim and its checks take; an interactive
 * message booked meanwhile waits behind at most these slots, never behind the queued backlog.
 */
export const PACE_WINDOW_MS = 200
/**
 * What a paced lane may hold running, in time of its pace, the jobs waiting for their slots included: a lane at 1,000
 * messages a second holds 400 of the workers' slots, not all of them, so a quiet account's message finds a free one.
 */
export const PACE_IN_FLIGHT_MS = 400
/**
 * The slots of a lane are 1 / pace apart, widened by this factor: a message leaves a few milliseconds after its slot
 * (timers, a busy process), and with slots exactly 1 / pace apart one message late by more than the next one second
 * later made a window of pace + 1. 2.5 % (25 ms a second) absorbs those delays; the lane sends at 97.6 % of its pace.
 */
export const PACE_GUARD = 1.025
/**
 * A message that reaches its slot more than this late (a busy process, a slow turn of its event loop) does not go at
 * it: with PACE_GUARD's 25 ms a second of room, a message later than that would crowd the second of the slots after
 * it. It books a new slot instead (channels pacer.ts).
 */
export const PACE_LATE_MS = 10
/**
 * The messages of a lane whose slots fall in one tick of this many milliseconds leave together at its start, up to this
 * much before their slots (channels pacer.ts): with PACE_LATE_MS after and this before, a message moves at most 20 ms
 * from its slot, within PACE_GUARD's 25 ms a second, and a number at 1,000/s sends ten messages a turn, not one.
 */
export const PACE_TICK_MS = 10
/**
 * The job runner's claim puts the first slot of a lane with none booked ahead (idle, or run dry) this far from now
 * (claimJobs' `leadMs`): the batch's checks
 * (its send records, quota, daily limit: a few statements) come first, and a first message that reached its slot
 * more than PACE_LATE_MS late would book a new one, leaving its slot unused. A lane with slots ahead is claimed before
 * they run out (JobRunner #paceNext) and never waits for this.
 */
export const PACE_LEAD_MS = 50

/**
 * Claims up to `limit` due jobs of one queue, fairly across accounts: the account with the fewest jobs of the queue in
 * flight goes first (then its jobs by priority and due time), so one account's backlog lengthens only its own wait.
 * Jobs of a paced lane (`lane`, see setPace) are taken only as far as the lane has slots within PACE_WINDOW_MS from
 * now and up to PACE_IN_FLIGHT_MS of its pace in flight; each taken job gets its own slot (`slotAt`, PACE_GUARD / pace
 * after the previous one, an account's interactive jobs first) and the lane's next slot moves past them. The rest
 * stays queued for a later claim instead of holding a worker's slot while it waits. Jobs whose lease ran out
 * (their worker died) are put back first. Keyed jobs are found key by key (a skip scan over the distinct keys with
 * queued work, then at most the key's free slots from each), unkeyed ones account by account (a skip scan over the
 * accounts with queued work), so thousands of jobs waiting on one busy key or account cost an index probe, not a scan.
 * Claims of one queue are serialized by a transaction-scoped advisory lock, which keeps per-key counts and paces exact
 * across worker processes. The statement lives in the database function herold_claim_fair, whose plan is cached:
 * planning it on every call cost more than running it on PGlite.
 */
export async function claimJobs(
  db: Db,
  clock: Clock,
  options: {
    queue: string
    limit: number
    perKey: number
    leaseMs: number
    /** put back jobs whose lease ran out first (default true; the runner does it when a lease can have expired) */
    reap?: boolean
    /**
     * lease tokens the claiming process still runs: the reap leaves them alone. A process starved of CPU (its lease
     * renewal late) must not put back and claim again the jobs it is still running; another process still may.
     */
    held?: readonly string[]
    /** serialize claims of the queue across processes (default true; a single-connection PGlite needs none) */
    exclusive?: boolean
    /** the paced lane of the queue's jobs (job_paces.lane); null or absent: unpaced */
    lane?: string | null
    /**
     * The burst a paced lane may send at once after an idle spell, in time of its pace (HEROLD_PACE_BURST_MS; default
     * 0: none, its first slot is now, less the burst, plus `leadMs`, and the next ones one interval apart)
     */
    burstMs?: number
    /** how far from now the first slot of a lane without slots ahead is (the job runner: PACE_LEAD_MS; default 0) */
    leadMs?: number
    /**
     * A read for the handler in the claim's own statement (JobHandler.claimAlso): a SELECT of one column `also` over
     * the claimed job `c`, joined LATERAL; each job then carries it as `also`. One statement instead of a claim and
     * a read of what the jobs are about.
     */
    also?: SQL
  },
): Promise<ClaimedJob[]> {
  const now = clock.now()
  const until = new Date(now.getTime() + options.leaseMs)
  const nowSql = sql`${now.toISOString()}::timestamptz`
  const queue = options.queue
  const columns = sql`c.account_id, c.id, c.queue, c.payload, c.concurrency_key, c.attempts, c.run_at, c.created_at,
    c.lease_token, c.priority, c.slot_at${options.also ? sql`, w.also` : sql``}`
  const joined = options.also ? sql`c LEFT JOIN LATERAL (${options.also}) w ON true` : sql`c`
  const since = options.also ? performance.now() : undefined
  const claim = async (tx: Db) => {
    if (options.exclusive !== false) await tx.execute(sql`SELECT pg_advisory_xact_lock(727002, hashtext(${queue}))`)
    if (options.reap !== false) {
      await tx.execute(sql`
        UPDATE jobs SET state = 'queued', lease_token = NULL, locked_until = NULL, updated_at = ${nowSql}
        WHERE queue = ${queue} AND state = 'running' AND locked_until <= ${nowSql}
          ${options.held?.length ? sql`AND NOT (lease_token = ANY(${`{${options.held.join(',')}}`}::uuid[]))` : sql``}`)
    }
    // herold_claim_fair (migration 0054_fair_claims) keeps its plan across calls
    const result = await tx.execute(sql`
      SELECT ${columns}
      FROM herold_claim_fair(${queue}, ${options.limit}::int, ${options.perKey}::int, ${nowSql},
        ${until.toISOString()}::timestamptz, ${options.lane ?? null}::text, ${PACE_WINDOW_MS}::int,
        ${PACE_IN_FLIGHT_MS}::int, ${Math.round((options.burstMs ?? 0) - (options.leadMs ?? 0))}::int, ${PACE_GUARD}::float8) ${joined}`)
    return rows<JobRow>(result).map((row) => claimedFrom(row, since))
  }
  if (options.reap === false && options.exclusive !== false) {
    // no reap: the lock and the claim in one statement, its own transaction (herold_claim_fair_locked, migration
    // 0065_claim_in_one_statement), one round trip instead of four
    const result = await db.execute(sql`
      SELECT ${columns}
      FROM herold_claim_fair_locked(${queue}, ${options.limit}::int, ${options.perKey}::int, ${nowSql},
        ${until.toISOString()}::timestamptz, ${options.lane ?? null}::text, ${PACE_WINDOW_MS}::int,
        ${PACE_IN_FLIGHT_MS}::int, ${Math.round((options.burstMs ?? 0) - (options.leadMs ?? 0))}::int, ${PACE_GUARD}::float8) ${joined}`)
    return rows<JobRow>(result).map((row) => claimedFrom(row, since))
  }
  return options.exclusive === false && options.reap === false ? claim(db) : db.transaction(claim)
}

async function updateHeld(tx: Db, job: ClaimedJob, change: SQL | null): Promise<void> {
  const where = sql`account_id = ${job.accountId} AND id = ${job.id} AND lease_token = ${job.leaseToken} AND state = 'running'`
  const result = change
    ? await tx.execute(sql`UPDATE jobs SET ${change} WHERE ${where} RETURNING id`)
    : await tx.execute(sql`DELETE FROM jobs WHERE ${where} RETURNING id`)
  if (rows(result).length === 0) throw new LeaseLostError(job)
}

/** Finishes a job (deletes it). Call it in the transaction that records the job's effect. */
export function completeJob(tx: Db, job: ClaimedJob): Promise<void> {
  return updateHeld(tx, job, null)
}

/**
 * Finishes many jobs in one statement (a handler that settles a batch). Throws LeaseLostError, for the first lost
 * one, if any of them is no longer held, so the caller's transaction writes nothing for the batch.
 */
export async function completeJobs(tx: Db, jobs: ClaimedJob[]): Promise<void> {
  if (jobs.length === 0) return
  const held = JSON.stringify(
    jobs.map((job) => ({ account_id: job.accountId, id: job.id, lease_token: job.leaseToken })),
  )
  const result = await tx.execute(sql`
    DELETE FROM jobs USING ${recordsetSql(held, jobs.length, 'h', 'account_id uuid, id uuid, lease_token uuid')}
    WHERE jobs.account_id = h.account_id AND jobs.id = h.id AND jobs.lease_token = h.lease_token
      AND jobs.state = 'running'
    RETURNING jobs.id`)
  const done = new Set(rows<{ id: string }>(result).map((row) => row.id))
  const lost = jobs.find((job) => !done.has(job.id))
  if (lost) throw new LeaseLostError(lost)
}

/** Puts a job back to run again at `runAt`. */
export function retryJob(tx: Db, clock: Clock, job: ClaimedJob, runAt: Date, error: string | null): Promise<void> {
  return updateHeld(
    tx,
    job,
    sql`state = 'queued', run_at = ${runAt.toISOString()}::timestamptz, lease_token = NULL, locked_until = NULL,
      last_error = ${error}, updated_at = ${clock.now().toISOString()}::timestamptz`,
  )
}

/** Gives up on a job: it stays as `dead` with its last error. */
export function killJob(tx: Db, clock: Clock, job: ClaimedJob, error: string): Promise<void> {
  return updateHeld(
    tx,
    job,
    sql`state = 'dead', lease_token = NULL, locked_until = NULL, last_error = ${error},
      updated_at = ${clock.now().toISOString()}::timestamptz`,
  )
}

/**
 * Extends the leases of jobs this worker still runs. A job whose row another transaction holds (its handler completing
 * or retrying it) is left alone: waiting for it locked the other rows in the scan's order, which the batches joined by
 * key (completeJobs, settle) lock in theirs, and PostgreSQL ended one of them as a deadlock (seen at a newsletter's
 * 1,000 sends a second). A lease left alone here is renewed on the next turn, long before it runs out.
 */
export async function extendLeases(db: Db, clock: Clock, jobs: ClaimedJob[], leaseMs: number): Promise<void> {
  if (jobs.length === 0) return
  const until = new Date(clock.now().getTime() + leaseMs)
  const tokens = jobs.map((job) => job.leaseToken)
  await db.execute(
    sql`UPDATE jobs SET locked_until = ${until.toISOString()}::timestamptz
      FROM (SELECT account_id, id FROM jobs WHERE state = 'running' AND lease_token IN (${sql.join(
        tokens.map((t) => sql`${t}::uuid`),
        sql`, `,
      )}) FOR UPDATE SKIP LOCKED) AS free
      WHERE jobs.account_id = free.account_id AND jobs.id = free.id`,
  )
}

/**
 * The next moments something may become claimable, per queue: its earliest future run time and its earliest lease to
 * run out (which frees its job and a slot of its key), null when none; a timer wakes only the queues that have work
 * then. `dueNow`: the queue has a job due already (its time passed since the last look, or it waits for a slot).
 */
export async function nextDueByQueue(
  db: Db,
  clock: Clock,
  queues: string[],
): Promise<Array<{ queue: string; runAt: Date | null; leaseAt: Date | null; dueNow: boolean }>> {
  if (queues.length === 0) return []
  const now = sql`${clock.now().toISOString()}::timestamptz`
  // Each look is an ordered scan of jobs_ready_idx (queue, run_at) that stops at its first entry. Written as EXISTS,
  // "is a job due" was planned as a sequential scan of all jobs, expecting an early match (a million step jobs are
  // due at once): for every queue without one it read the whole table, 200-650 ms a look, several looks at once.
  const result = await db.execute(sql`
    SELECT q.queue,
      (SELECT run_at FROM jobs WHERE state = 'queued' AND queue = q.queue AND run_at > ${now}
        ORDER BY run_at LIMIT 1) AS run_at,
      (SELECT min(locked_until) FROM jobs WHERE state = 'running' AND queue = q.queue) AS lease_at,
      (SELECT run_at FROM jobs WHERE state = 'queued' AND queue = q.queue ORDER BY run_at LIMIT 1) <= ${now}
        AS due_now
    FROM jsonb_array_elements_text(${JSON.stringify(queues)}::jsonb) AS q(queue)`)
  return rows<{
    queue: string
    run_at: Date | string | null
    lease_at: Date | string | null
    due_now: boolean | string | null
  }>(result).map((r) => ({
    queue: r.queue,
    runAt: r.run_at ? new Date(r.run_at) : null,
    leaseAt: r.lease_at ? new Date(r.lease_at) : null,
    dueNow: r.due_now === true || r.due_now === 't',
  }))
}

/** Removes the queued (not running) jobs of one key: their reason to run is gone (a subscription was deleted). */
export async function cancelQueuedJobs(
  tx: Db,
  input: { accountId: string; queue: string; concurrencyKey: string },
): Promise<number> {
  const result = await tx.execute(
    sql`DELETE FROM jobs WHERE account_id = ${input.accountId} AND queue = ${input.queue}
      AND concurrency_key = ${input.concurrencyKey} AND state = 'queued' RETURNING id`,
  )
  return rows(result).length
}

/**
 * Sets the pace of an account's lane (messages per second, for every worker process together), or removes it (null):
 * claims of queues on that lane then take the account's jobs only as fast as it allows. A changed pace keeps the
 * lane's place in time, and a lane lowered after refusals (adaptive-pace.ts) stays lowered: the new pace is what it
 * recovers to.
 */
export async function setPace(
  tx: Db,
  input: { accountId: string; lane: string; perSecond: number | null },
): Promise<void> {
  if (input.perSecond === null) {
    await tx.execute(sql`DELETE FROM job_paces WHERE account_id = ${input.accountId} AND lane = ${input.lane}`)
    return
  }
  await tx.execute(sql`
    INSERT INTO job_paces (account_id, lane, per_second) VALUES (${input.accountId}, ${input.lane}, ${input.perSecond})
    ON CONFLICT (account_id, lane) DO UPDATE SET
      per_second = CASE WHEN job_paces.full_per_second IS NULL THEN EXCLUDED.per_second
        ELSE least(job_paces.per_second, EXCLUDED.per_second) END,
      full_per_second = CASE WHEN job_paces.full_per_second IS NULL THEN NULL ELSE EXCLUDED.per_second END`)
}

/**
 * Books the next slot of an account's paced lane for a message sent outside the job claim (free text, a consent
 * message, an AI reply), in one statement: the lane's next slot (now, less `burstMs`, for an idle lane) is the
 * message's, and the lane moves one interval (PACE_GUARD / pace) past it, for every process together. The caller
 * sends no earlier than the answered slot; null: the account has no such lane.
 */
export async function bookSlot(
  db: Db,
  clock: Clock,
  input: { accountId: string; lane: string; burstMs?: number },
): Promise<Date | null> {
  const [slot] = await bookSlots(db, clock, input, [input.accountId])
  return slot
}

/**
 * bookSlot for many messages at once (one per entry of `accountIds`, an account named as often as it has messages),
 * in one statement: each account's lane moves past all its messages, which get consecutive slots in their order.
 */
export async function bookSlots(
  db: Db,
  clock: Clock,
  input: { lane: string; burstMs?: number },
  accountIds: readonly string[],
): Promise<Array<Date | null>> {
  const now = sql`${clock.now().toISOString()}::timestamptz`
  const result = await db.execute(sql`
    WITH want AS (
      SELECT a.account_id, count(*)::int AS n FROM unnest(${`{${accountIds.join(',')}}`}::uuid[]) AS a(account_id)
      GROUP BY a.account_id
    )
    UPDATE job_paces p
    SET tat = greatest(p.tat, ${now} - make_interval(secs => ${Math.round(input.burstMs ?? 0)}::int / 1000.0))
      + make_interval(secs => want.n * ${PACE_GUARD}::float8 / p.per_second)
    FROM want
    WHERE p.account_id = want.account_id AND p.lane = ${input.lane}
    RETURNING p.account_id, p.tat - make_interval(secs => want.n * ${PACE_GUARD}::float8 / p.per_second) AS first_slot,
      1000.0 * ${PACE_GUARD}::float8 / p.per_second AS interval_ms`)
  const lanes = new Map<string, { next: number; intervalMs: number }>()
  for (const row of rows<{ account_id: string; first_slot: Date | string; interval_ms: number | string }>(result)) {
    lanes.set(row.account_id, { next: new Date(row.first_slot).getTime(), intervalMs: Number(row.interval_ms) })
  }
  return accountIds.map((accountId) => {
    const lane = lanes.get(accountId)
    if (!lane) return null
    const slot = new Date(Math.ceil(lane.next))
    lane.next += lane.intervalMs
    return slot
  })
}

/**
 * An INSERT of jobs made from the rows of `select` (each an `account_id` uuid and a `payload` jsonb), due now, for a
 * caller that folds it into a statement of its own as a data-modifying CTE (it returns `queue`, for notifyJobsSql):
 * a fan-out writes its records and their jobs in one statement, however many rows it makes.
 */
export function enqueueSelectSql(
  now: Date,
  input: {
    queue: string
    priority?: 0 | 1
    select: SQL
    /** the rows also carry a `concurrency_key` text (a webhook delivery's subscription) */
    keyed?: boolean
  },
): SQL {
  const at = sql`${now.toISOString()}::timestamptz`
  return sql`INSERT INTO jobs (account_id, id, queue, payload, concurrency_key, run_at, created_at, priority)
    SELECT j.account_id, gen_random_uuid(), ${input.queue}::text, j.payload,
      ${input.keyed ? sql`j.concurrency_key` : sql`NULL`}, ${at}, ${at},
      ${input.priority ?? 0}::smallint
    FROM (${input.select}) j
    RETURNING queue, account_id`
}

/** How many jobs of the account wait queued in the queue, counted up to `upTo` (an index probe, not a count of all). */
export async function countQueuedJobs(
  db: Db,
  input: { accountId: string; queue: string; upTo: number },
): Promise<number> {
  const result = await db.execute(sql`SELECT count(*)::int AS n FROM (SELECT 1 FROM jobs
    WHERE queue = ${input.queue} AND state = 'queued' AND account_id = ${input.accountId}
    LIMIT ${input.upTo}) j`)
  return Number(rows<{ n: number }>(result)[0]?.n ?? 0)
}

/** Whether a job of the queue whose payload's `key` is `value` is queued or running (a chain already going). */
export async function jobPending(
  db: Db,
  input: { accountId: string; queue: string; key: string; value: string },
): Promise<boolean> {
  const result = await db.execute(sql`
    SELECT 1 FROM jobs WHERE account_id = ${input.accountId} AND queue = ${input.queue}
      AND payload->>${input.key}::text = ${input.value} AND state IN ('queued', 'running') LIMIT 1`)
  return rows(result).length > 0
}

/**
 * Removes the queued (not running) jobs of the queue whose payload's `key` is one of the values `select` yields (a
 * SELECT of one text column): their reason to run went with the records they were for.
 */
export async function cancelQueuedJobsFor(
  tx: Db,
  input: { accountId: string; queue: string; key: string; select: SQL },
): Promise<void> {
  await tx.execute(sql`DELETE FROM jobs j USING (${input.select}) AS s(value)
    WHERE j.account_id = ${input.accountId} AND j.queue = ${input.queue} AND j.state = 'queued'
      AND j.payload->>${input.key}::text = s.value`)
}
