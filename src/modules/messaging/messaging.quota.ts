import { and, eq, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { perTick } from '../../platform/db/per-tick.ts'
import { recordsetSql } from '../../platform/db/rows.ts'
import { messageQuota } from './messaging.tables.ts'

// building an Intl.DateTimeFormat costs about 0.1 ms, a tenth of a template send's acceptance: one per timezone
const monthFormats = new Map<string, Intl.DateTimeFormat>()
function monthFormat(timezone: string): Intl.DateTimeFormat {
  let format = monthFormats.get(timezone)
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: timezone, year: 'numeric', month: '2-digit' })
    monthFormats.set(timezone, format)
  }
  return format
}

/** The calendar month (`YYYY-MM`) of an instant in an IANA timezone. */
export function monthIn(instant: Date, timezone: string): string {
  const parts = monthFormat(timezone).formatToParts(instant)
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? ''
  return `${part('year')}-${part('month')}`
}

/**
 * Takes one unit of the month's quota, atomically, in one statement: the upsert only counts up while `used` is
 * below the plan's limit (read in the same statement), so of two concurrent sends at the last free unit exactly one
 * gets a row back; a plan without messages inserts nothing.
 */
const reserveSql = (accountId: string, month: string) => {
  const limitOf = (account: unknown) =>
    sql`(SELECT p.messages_per_month FROM accounts a JOIN plans p ON p.name = a.plan WHERE a.id = ${account})`
  return sql`
    INSERT INTO message_quota (account_id, month, used)
    SELECT ${accountId}::uuid, ${month}, 1 WHERE ${limitOf(sql`${accountId}::uuid`)} >= 1
    ON CONFLICT (account_id, month) DO UPDATE SET used = message_quota.used + 1
      WHERE message_quota.used < ${limitOf(sql`message_quota.account_id`)}
    RETURNING used`
}

const rowCount = (result: unknown) => (result as { rows: unknown[] }).rows.length

export async function reserveUnit(db: Db, accountId: string, month: string): Promise<boolean> {
  return rowCount(await db.execute(reserveSql(accountId, month))) === 1
}

/**
 * The send worker's reservation for a batch, in one statement: takes as many of the month's units as are free, up
 * to one per send (the database function herold_reserve_units, migration 0037, which locks the month's row so
 * concurrent batches never together go over the plan's limit), and moves that many sends, in the given order, to
 * `sending` with their attempt's token. Call it under the sends' row locks, with them seen `queued`. Returns the ids
 * moved; the others got no unit and are unchanged.
 */
export async function reserveUnitsAndMarkSending(
  tx: Db,
  accountId: string,
  sends: Array<{ id: string; token: string }>,
  mark: { month: string; at: Date },
): Promise<Set<string>> {
  if (sends.length === 0) return new Set()
  const at = mark.at.toISOString()
  const wanted = JSON.stringify(sends.map((s, i) => ({ id: s.id, token: s.token, ord: i + 1 })))
  const result = await tx.execute(sql`
    WITH unit AS (SELECT herold_reserve_units(${accountId}::uuid, ${mark.month}, ${sends.length}::int) AS granted)
    UPDATE template_sends s SET status = 'sending', attempt_token = w.token, attempts = s.attempts + 1,
      quota_month = ${mark.month}, sending_at = ${at}::timestamptz, updated_at = ${at}::timestamptz
    FROM ${recordsetSql(wanted, sends.length, 'w', 'id uuid, token uuid, ord int')}, unit
    WHERE s.account_id = ${accountId}::uuid AND s.id = w.id AND w.ord <= unit.granted
    RETURNING s.id`)
  return new Set((result as unknown as { rows: Array<{ id: string }> }).rows.map((r) => r.id))
}

/** Gives a reserved unit back (the message was certainly not sent). */
export async function releaseUnit(db: Db, accountId: string, month: string): Promise<void> {
  await releaseUnits(db, accountId, month, 1)
}

/** Gives `count` reserved units back in one statement (those messages were certainly not sent). */
export async function releaseUnits(db: Db, accountId: string, month: string, count: number): Promise<void> {
  if (count < 1) return
  await db
    .update(messageQuota)
    .set({ used: sql`GREATEST(${messageQuota.used} - ${count}::int, 0)` })
    .where(and(eq(messageQuota.accountId, accountId), eq(messageQuota.month, month)))
}

export async function usedIn(db: Db, accountId: string, month: string): Promise<number> {
  const [row] = await db
    .select({ used: messageQuota.used })
    .from(messageQuota)
    .where(and(eq(messageQuota.accountId, accountId), eq(messageQuota.month, month)))
  return row?.used ?? 0
}

/** Whether a unit of the month is still free, as an SQL boolean of an account id and a month (both SQL). */
export const unitLeftSql = (accountId: SQL, month: SQL) =>
  sql`(COALESCE((SELECT q.used FROM message_quota q WHERE q.account_id = ${accountId} AND q.month = ${month}), 0)
    < COALESCE((SELECT p.messages_per_month FROM accounts a JOIN plans p ON p.name = a.plan WHERE a.id = ${accountId}), 0))`

/**
 * Whether a unit of the month is still free; a check only (POST /messages of a template), nothing is reserved. The
 * checks of the requests of one turn of the event loop are one statement (the plan's limit and the month's count).
 */
export function hasUnitLeft(db: Db, accountId: string, month: string): Promise<boolean> {
  return unitsLeft(db, { accountId, month })
}

const unitsLeft = perTick(async (db, keys: readonly { accountId: string; month: string }[]): Promise<boolean[]> => {
  const result = await db.execute(sql`
    SELECT k.at, COALESCE(q.used, 0) < COALESCE(p.messages_per_month, 0) AS left
    FROM unnest(${sql.param(keys.map((k) => k.accountId))}::uuid[], ${sql.param(keys.map((k) => k.month))}::text[])
      WITH ORDINALITY AS k(account_id, month, at)
    LEFT JOIN accounts a ON a.id = k.account_id
    LEFT JOIN plans p ON p.name = a.plan
    LEFT JOIN message_quota q ON q.account_id = k.account_id AND q.month = k.month`)
  const left: boolean[] = new Array(keys.length).fill(false)
  for (const row of (result as unknown as { rows: Array<{ at: number | string; left: boolean }> }).rows) {
    left[Number(row.at) - 1] = row.left
  }
  return left
})
