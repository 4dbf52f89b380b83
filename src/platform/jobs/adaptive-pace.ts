import { sql } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { rows } from '../db/rows.ts'

/**
 * Adaptive pace of a paced lane (docs/architecture.md#adaptive-pace). A refusal for throughput lowers the lane's pace
 * (job_paces.per_second, what every process's claim reads) to half, at least 1 a second; refusals within
 * LOWER_COOL_OFF_MS of a lowering were sent at the old pace and lower nothing more. Each RECOVERY_STEP_MS without a
 * refusal the pace rises by RECOVERY_SHARE of its full pace until it is full again; the full pace stays in the row
 * (full_per_second) while the pace is lower. Everything is in the database, so every process sees one pace.
 */
export const LOWER_COOL_OFF_MS = 1_000
export const RECOVERY_STEP_MS = 2_000
export const RECOVERY_SHARE = 0.1

export type PaceReason = 'throughput_refused'

export interface LaneState {
  accountId: string
  lane: string
  perSecond: number
  /** the pace it recovers to; equal to perSecond at full pace */
  fullPerSecond: number
  reducedReason: PaceReason | null
  reducedAt: Date | null
  lastRefusalAt: Date | null
}

const stamp = (at: Date) => sql`${at.toISOString()}::timestamptz`

/**
 * The provider refused for throughput: halves the lane's pace unless it was lowered within LOWER_COOL_OFF_MS, and
 * notes the refusal (which postpones recovery). In the transaction that records the refused sends. A lane without a
 * pace (not paced) is left alone.
 */
export async function lowerPace(
  tx: Db,
  input: { accountId: string; lane: string; reason: PaceReason; now: Date },
): Promise<void> {
  const now = stamp(input.now)
  const coolOff = stamp(new Date(input.now.getTime() - LOWER_COOL_OFF_MS))
  const lowers = sql`(changed_at IS NULL OR changed_at <= ${coolOff} OR reduced_reason IS NULL)`
  await tx.execute(sql`UPDATE job_paces SET
      full_per_second = coalesce(full_per_second, per_second),
      per_second = CASE WHEN ${lowers} THEN greatest(1, per_second / 2) ELSE per_second END,
      changed_at = CASE WHEN ${lowers} THEN ${now} ELSE changed_at END,
      reduced_reason = ${input.reason}, reduced_at = coalesce(reduced_at, ${now}), last_refusal_at = ${now}
    WHERE account_id = ${input.accountId} AND lane = ${input.lane}`)
}

/**
 * Sends went out: a lowered lane takes the recovery steps due since its last change or refusal (one statement, a
 * primary-key probe; nothing when the lane is at full pace). Back at its full pace the lowering is forgotten.
 * Idempotent across processes: the steps are counted from changed_at, which each step moves on.
 */
export async function recoverPace(tx: Db, input: { accountId: string; lane: string; now: Date }): Promise<void> {
  const now = stamp(input.now)
  const quiet = sql`(extract(epoch FROM ${now} - greatest(changed_at, last_refusal_at)) * 1000)`
  const steps = sql`floor(${quiet} / ${RECOVERY_STEP_MS}::float8)`
  const raised = sql`least(full_per_second,
    per_second + ${steps}::int * greatest(1, ceil(full_per_second * ${RECOVERY_SHARE}::float8)::int))`
  await tx.execute(sql`UPDATE job_paces SET
      per_second = ${raised},
      changed_at = CASE WHEN ${raised} >= full_per_second THEN NULL ELSE ${now} END,
      full_per_second = CASE WHEN ${raised} >= full_per_second THEN NULL ELSE full_per_second END,
      reduced_reason = CASE WHEN ${raised} >= full_per_second THEN NULL ELSE reduced_reason END,
      reduced_at = CASE WHEN ${raised} >= full_per_second THEN NULL ELSE reduced_at END
    WHERE account_id = ${input.accountId} AND lane = ${input.lane} AND full_per_second IS NOT NULL
      AND ${quiet} >= ${RECOVERY_STEP_MS}::float8`)
}

type LaneRow = {
  account_id: string
  lane: string
  per_second: number
  full_per_second: number | null
  reduced_reason: string | null
  reduced_at: Date | string | null
  last_refusal_at: Date | string | null
}

const laneState = (row: LaneRow): LaneState => ({
  accountId: row.account_id,
  lane: row.lane,
  perSecond: Number(row.per_second),
  fullPerSecond: Number(row.full_per_second ?? row.per_second),
  reducedReason: row.reduced_reason as PaceReason | null,
  reducedAt: row.reduced_at ? new Date(row.reduced_at) : null,
  lastRefusalAt: row.last_refusal_at ? new Date(row.last_refusal_at) : null,
})

const LANE_COLUMNS = sql`account_id, lane, per_second, full_per_second, reduced_reason, reduced_at, last_refusal_at`

/** The lane's pace as it stands; null for a lane without a pace. */
export async function paceOf(db: Db, input: { accountId: string; lane: string }): Promise<LaneState | null> {
  const [row] = rows<LaneRow>(
    await db.execute(sql`SELECT ${LANE_COLUMNS} FROM job_paces
      WHERE account_id = ${input.accountId} AND lane = ${input.lane}`),
  )
  return row ? laneState(row) : null
}

/** Lanes below their full pace, longest lowered first, at most `limit` (an operator's view: status, metrics). */
export async function loweredPaces(db: Db, limit: number): Promise<LaneState[]> {
  const found = await db.execute(sql`SELECT ${LANE_COLUMNS} FROM job_paces WHERE full_per_second IS NOT NULL
    ORDER BY reduced_at, account_id, lane LIMIT ${limit}`)
  return rows<LaneRow>(found).map(laneState)
}
