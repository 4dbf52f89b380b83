import { type SQL, sql } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { recordsetSql } from '../db/rows.ts'
import type { ClaimedJob } from './jobs.ts'

/**
 * The lease protocol's pieces for handlers that fold their job writes into a statement of their own (settle, requeue,
 * hand off) or into their own transaction (cancel queued, reschedule); cancelQueuedJobsFor (jobs.ts) cancels by a
 * payload field. The `…Sql` pieces are data-modifying CTE bodies: the caller's statement checks what they return (a
 * held job missing from it lost its lease).
 */

const heldJson = (jobs: ClaimedJob[]) =>
  JSON.stringify(jobs.map((job) => ({ account_id: job.accountId, id: job.id, lease_token: job.leaseToken })))

/** Settles held jobs (deletes them) as their work is recorded; returns `jobs.id` of those this process still held. */
export function settleHeldSql(jobs: ClaimedJob[]): SQL {
  return sql`DELETE FROM jobs USING ${recordsetSql(heldJson(jobs), jobs.length, 'h', 'account_id uuid, id uuid, lease_token uuid')}
    WHERE jobs.account_id = h.account_id AND jobs.id = h.id AND jobs.lease_token = h.lease_token
      AND jobs.state = 'running'
    RETURNING jobs.id`
}

/**
 * Puts held jobs of an account back to run at `runAt`, each with its reason as last error; returns `jobs.id` of those
 * this process still held.
 */
export function requeueHeldSql(
  accountId: string,
  list: Array<{ job: ClaimedJob; error: string }>,
  runAt: Date,
  now: Date,
): SQL {
  const held = JSON.stringify(list.map(({ job, error }) => ({ id: job.id, lease_token: job.leaseToken, error })))
  return sql`UPDATE jobs SET state = 'queued', run_at = ${runAt.toISOString()}::timestamptz, lease_token = NULL,
      locked_until = NULL, last_error = w.error, updated_at = ${now.toISOString()}::timestamptz
    FROM ${recordsetSql(held, list.length, 'w', 'id uuid, lease_token uuid, error text')}
    WHERE jobs.account_id = ${accountId} AND jobs.id = w.id AND jobs.lease_token = w.lease_token
      AND jobs.state = 'running'
    RETURNING jobs.id`
}

/**
 * Adds a job of `queue` for every row `from` selects (its payload built by `payload` over them), due now: already
 * claimed by this process until `leaseUntil` when given (handed off to it, see BatchContext.handOff; the rows with a
 * lease token), else queued (the caller's statement then NOTIFYs their queue). Returns the JobRow columns.
 */
export function handOffJobsSql(input: {
  accountId: string
  queue: string
  payload: SQL
  from: SQL
  now: Date
  leaseUntil: Date | null
}): SQL {
  const now = input.now.toISOString()
  const held = input.leaseUntil !== null
  return sql`INSERT INTO jobs (account_id, id, queue, payload, run_at, created_at, state, lease_token, locked_until,
      attempts)
    SELECT ${input.accountId}::uuid, gen_random_uuid(), ${input.queue}, ${input.payload},
      ${now}::timestamptz, ${now}::timestamptz, ${held ? 'running' : 'queued'},
      CASE WHEN ${held}::boolean THEN gen_random_uuid() END, ${input.leaseUntil?.toISOString() ?? null}::timestamptz,
      ${held ? 1 : 0}::int
    FROM ${input.from}
    RETURNING account_id, id, queue, payload, concurrency_key, attempts, run_at, created_at, lease_token`
}

/** Removes an account's queued (not running) jobs whose ids `jobIds` selects (a query of one column). */
export async function cancelQueued(tx: Db, accountId: string, jobIds: SQL): Promise<void> {
  await tx.execute(sql`DELETE FROM jobs j USING (${jobIds}) AS k(id)
    WHERE j.account_id = ${accountId} AND j.id = k.id AND j.state = 'queued'`)
}

/** Moves an account's queued jobs to new run times (a running one keeps its time). */
export async function rescheduleQueued(
  tx: Db,
  accountId: string,
  list: Array<{ jobId: string | null; runAt: Date }>,
): Promise<void> {
  const times = JSON.stringify(list.map((c) => ({ job_id: c.jobId, run: c.runAt.toISOString() })))
  await tx.execute(sql`UPDATE jobs j SET run_at = c.run
    FROM ${recordsetSql(times, list.length, 'c', 'job_id uuid, run timestamptz')}
    WHERE j.account_id = ${accountId} AND j.id = c.job_id AND j.state = 'queued'`)
}
