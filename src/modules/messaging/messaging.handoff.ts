import { type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { cancelQueuedJobsFor } from '../../platform/jobs/jobs.ts'
import { handOffJobsSql } from '../../platform/jobs/lease.ts'
import { TEMPLATE_SEND_QUEUE } from './messaging.sends.ts'
import type { SendOrigin } from './messaging.tables.ts'

/** A send record another module hands to the template send pipeline: `skipped` with its reason, or `queued`. */
export interface HandedSend {
  id: string
  contact_id: string
  template_id: string
  status: 'queued' | 'skipped'
  reason: string | null
  origin_id: string
}

/**
 * Two data-modifying CTE bodies for a statement of the caller's: `sends` inserts the send records (one per origin and
 * contact: a duplicate is left out) and returns `id, status`; `jobs`, over the CTE named `sendsCte`, adds the send job
 * of each queued one, already claimed by this process until `leaseUntil` when given (see handOffJobsSql).
 */
export function handOffSendsSql(input: {
  accountId: string
  origin: SendOrigin
  sends: HandedSend[]
  sendsCte: string
  now: Date
  leaseUntil: Date | null
}): { sends: SQL; jobs: SQL } {
  const now = input.now.toISOString()
  const cte = sql.identifier(input.sendsCte)
  return {
    sends: sql`INSERT INTO template_sends (account_id, id, contact_id, template_id, variables, status, reason, origin,
        origin_id, created_at, updated_at, skipped_at)
      SELECT ${input.accountId}::uuid, r.id, r.contact_id, r.template_id, '{}'::jsonb, r.status, r.reason, ${input.origin},
        r.origin_id, ${now}::timestamptz, ${now}::timestamptz, CASE WHEN r.status = 'skipped' THEN ${now}::timestamptz END
      FROM jsonb_to_recordset(${JSON.stringify(input.sends)}::jsonb)
        AS r(id uuid, contact_id uuid, template_id uuid, status text, reason text, origin_id uuid)
      ON CONFLICT DO NOTHING
      RETURNING id, status`,
    jobs: handOffJobsSql({
      accountId: input.accountId,
      queue: TEMPLATE_SEND_QUEUE,
      payload: sql`jsonb_build_object('send_id', ${cte}.id)`,
      from: sql`${cte} WHERE ${cte}.status = 'queued'`,
      now: input.now,
      leaseUntil: input.leaseUntil,
    }),
  }
}

/**
 * The queued sends of an origin's records (`originIds`, a query of one column) are skipped with `reason`, and their
 * queued send jobs removed, in the caller's transaction (a running one finds its send skipped).
 */
export async function skipQueuedSends(
  tx: Db,
  input: { accountId: string; origin: SendOrigin; originIds: SQL; reason: string; now: Date },
): Promise<void> {
  const queued = sql`s.account_id = ${input.accountId} AND s.origin = ${input.origin} AND s.status = 'queued'
    AND s.origin_id IN (${input.originIds})`
  await cancelQueuedJobsFor(tx, {
    accountId: input.accountId,
    queue: TEMPLATE_SEND_QUEUE,
    key: 'send_id',
    select: sql`SELECT s.id::text FROM template_sends s WHERE ${queued}`,
  })
  const now = input.now.toISOString()
  await tx.execute(sql`UPDATE template_sends s SET status = 'skipped', reason = ${input.reason},
      skipped_at = ${now}::timestamptz, updated_at = ${now}::timestamptz
    WHERE ${queued}`)
}
