import { and, desc, eq, inArray, ne, sql } from 'drizzle-orm'
import { accounts, plans } from '../../platform/auth/auth.tables.ts'
import type { Db } from '../../platform/db/client.ts'
import { events } from '../../platform/events/events.tables.ts'
import { webhookDeliveries, webhookDeliveryAttempts, webhookSubscriptions } from './webhooks.tables.ts'

export type SubscriptionRow = typeof webhookSubscriptions.$inferSelect
export type DeliveryRow = typeof webhookDeliveries.$inferSelect
export type AttemptRow = typeof webhookDeliveryAttempts.$inferSelect
export type EventRow = typeof events.$inferSelect

const bySubscription = (accountId: string, id: string) =>
  and(eq(webhookSubscriptions.accountId, accountId), eq(webhookSubscriptions.id, id))

/** The account's subscription limit, with the account row locked so concurrent creates count one at a time. */
export async function lockWebhookLimit(tx: Db, accountId: string): Promise<number> {
  const [row] = await tx
    .select({ limit: plans.webhooksLimit })
    .from(accounts)
    .innerJoin(plans, eq(plans.name, accounts.plan))
    .where(eq(accounts.id, accountId))
    .for('update', { of: accounts })
  return row?.limit ?? 0
}

export async function countSubscriptions(tx: Db, accountId: string): Promise<number> {
  const [row] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(webhookSubscriptions)
    .where(eq(webhookSubscriptions.accountId, accountId))
  return Number(row?.n ?? 0)
}

export async function insertSubscription(
  tx: Db,
  row: typeof webhookSubscriptions.$inferInsert,
): Promise<SubscriptionRow> {
  const [created] = await tx.insert(webhookSubscriptions).values(row).returning()
  return created
}

/** Newest first; fetches limit + 1 so the caller can tell whether more exist. */
export function listSubscriptions(
  db: Db,
  accountId: string,
  limit: number,
  offset: number,
): Promise<SubscriptionRow[]> {
  return db
    .select()
    .from(webhookSubscriptions)
    .where(eq(webhookSubscriptions.accountId, accountId))
    .orderBy(desc(webhookSubscriptions.createdAt), desc(webhookSubscriptions.id))
    .limit(limit + 1)
    .offset(offset)
}

export async function findSubscription(
  db: Db,
  accountId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<SubscriptionRow | null> {
  const query = db.select().from(webhookSubscriptions).where(bySubscription(accountId, id))
  const [row] = options.lock ? await query.for('update') : await query
  return row ?? null
}

export async function deleteSubscription(tx: Db, accountId: string, id: string): Promise<boolean> {
  const rows = await tx
    .delete(webhookSubscriptions)
    .where(bySubscription(accountId, id))
    .returning({ id: webhookSubscriptions.id })
  return rows.length > 0
}

export async function updateSubscription(
  tx: Db,
  accountId: string,
  id: string,
  change: Partial<typeof webhookSubscriptions.$inferInsert>,
): Promise<SubscriptionRow | null> {
  const [row] = await tx.update(webhookSubscriptions).set(change).where(bySubscription(accountId, id)).returning()
  return row ?? null
}

/** Counts one failed attempt; returns the new count of failures in a row. */
export async function countFailure(tx: Db, accountId: string, id: string): Promise<number> {
  const [row] = await tx
    .update(webhookSubscriptions)
    .set({ consecutiveFailures: sql`${webhookSubscriptions.consecutiveFailures} + 1` })
    .where(bySubscription(accountId, id))
    .returning({ n: webhookSubscriptions.consecutiveFailures })
  return row?.n ?? 0
}

export async function resetFailures(tx: Db, accountId: string, id: string): Promise<void> {
  await tx
    .update(webhookSubscriptions)
    .set({ consecutiveFailures: 0 })
    .where(and(bySubscription(accountId, id), ne(webhookSubscriptions.consecutiveFailures, 0)))
}

/** Newest attempts first, limit + 1. */
export function listAttempts(
  db: Db,
  accountId: string,
  subscriptionId: string,
  limit: number,
  offset: number,
): Promise<AttemptRow[]> {
  return db
    .select()
    .from(webhookDeliveryAttempts)
    .where(
      and(eq(webhookDeliveryAttempts.accountId, accountId), eq(webhookDeliveryAttempts.subscriptionId, subscriptionId)),
    )
    .orderBy(desc(webhookDeliveryAttempts.attemptedAt), desc(webhookDeliveryAttempts.id))
    .limit(limit + 1)
    .offset(offset)
}

export async function findEvent(db: Db, accountId: string, eventId: string): Promise<EventRow | null> {
  const [row] = await db
    .select()
    .from(events)
    .where(and(eq(events.accountId, accountId), eq(events.id, eventId)))
  return row ?? null
}

/** Enabled subscriptions of the account that want this event. */
export function subscribersOf(db: Db, accountId: string, eventName: string): Promise<SubscriptionRow[]> {
  return db
    .select()
    .from(webhookSubscriptions)
    .where(
      and(
        eq(webhookSubscriptions.accountId, accountId),
        eq(webhookSubscriptions.status, 'enabled'),
        sql`${eventName} = ANY(${webhookSubscriptions.events})`,
      ),
    )
}

/** Inserts the deliveries an event owes; ones that already exist (a re-run dispatch) are skipped. */
export function insertDeliveries(tx: Db, rows: (typeof webhookDeliveries.$inferInsert)[]): Promise<DeliveryRow[]> {
  if (rows.length === 0) return Promise.resolve([])
  return tx.insert(webhookDeliveries).values(rows).onConflictDoNothing().returning()
}

export async function findDelivery(db: Db, accountId: string, id: string): Promise<DeliveryRow | null> {
  const [row] = await db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.accountId, accountId), eq(webhookDeliveries.id, id)))
  return row ?? null
}

export async function updateDelivery(
  tx: Db,
  accountId: string,
  id: string,
  change: Partial<typeof webhookDeliveries.$inferInsert>,
): Promise<void> {
  await tx
    .update(webhookDeliveries)
    .set(change)
    .where(and(eq(webhookDeliveries.accountId, accountId), eq(webhookDeliveries.id, id)))
}

/** A disabled subscription owes nothing more: its pending deliveries are dropped. */
export async function dropPendingDeliveries(
  tx: Db,
  accountId: string,
  subscriptionId: string,
  at: Date,
): Promise<void> {
  await tx
    .update(webhookDeliveries)
    .set({ state: 'dropped', nextAttemptAt: null, finishedAt: at })
    .where(
      and(
        eq(webhookDeliveries.accountId, accountId),
        eq(webhookDeliveries.subscriptionId, subscriptionId),
        inArray(webhookDeliveries.state, ['pending']),
      ),
    )
}

export async function insertAttempt(tx: Db, row: typeof webhookDeliveryAttempts.$inferInsert): Promise<void> {
  await tx.insert(webhookDeliveryAttempts).values(row)
}
