import { and, eq, sql } from 'drizzle-orm'
import { accounts, plans } from '../../platform/auth/auth.tables.ts'
import type { Db } from '../../platform/db/client.ts'
import { messageQuota } from './messaging.tables.ts'

/** The calendar month (`YYYY-MM`) of an instant in an IANA timezone. */
export function monthIn(instant: Date, timezone: string): string {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    year: 'numeric',
    month: '2-digit',
  }).formatToParts(instant)
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? ''
  return `${part('year')}-${part('month')}`
}

async function monthlyLimit(db: Db, accountId: string): Promise<number> {
  const [row] = await db
    .select({ limit: plans.messagesPerMonth })
    .from(accounts)
    .innerJoin(plans, eq(plans.name, accounts.plan))
    .where(eq(accounts.id, accountId))
  return row?.limit ?? 0
}

/**
 * Takes one unit of the month's quota, atomically: the upsert only counts up while `used` is below the plan's
 * limit, so of two concurrent sends at the last free unit exactly one gets a row back.
 */
export async function reserveUnit(db: Db, accountId: string, month: string): Promise<boolean> {
  const limit = await monthlyLimit(db, accountId)
  if (limit < 1) return false
  const rows = await db
    .insert(messageQuota)
    .values({ accountId, month, used: 1 })
    .onConflictDoUpdate({
      target: [messageQuota.accountId, messageQuota.month],
      set: { used: sql`${messageQuota.used} + 1` },
      setWhere: sql`${messageQuota.used} < ${limit}`,
    })
    .returning({ used: messageQuota.used })
  return rows.length === 1
}

/** Gives a reserved unit back (the message was certainly not sent). */
export async function releaseUnit(db: Db, accountId: string, month: string): Promise<void> {
  await db
    .update(messageQuota)
    .set({ used: sql`GREATEST(${messageQuota.used} - 1, 0)` })
    .where(and(eq(messageQuota.accountId, accountId), eq(messageQuota.month, month)))
}

export async function usedIn(db: Db, accountId: string, month: string): Promise<number> {
  const [row] = await db
    .select({ used: messageQuota.used })
    .from(messageQuota)
    .where(and(eq(messageQuota.accountId, accountId), eq(messageQuota.month, month)))
  return row?.used ?? 0
}

/** Whether a unit of the month is still free; a check only (POST /messages of a template), nothing is reserved. */
export async function hasUnitLeft(db: Db, accountId: string, month: string): Promise<boolean> {
  const limit = await monthlyLimit(db, accountId)
  return (await usedIn(db, accountId, month)) < limit
}
