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

/** Events of one dispatch batch, by id. Accounts and ids are matched pairwise by the caller. */
export function findEvents(db: Db, accountIds: string[], eventIds: string[]): Promise<EventRow[]> {
  if (eventIds.length === 0) return Promise.resolve([])
  return db
    .select()
    .from(events)
    .where(and(inArray(events.accountId, accountIds), inArray(events.id, eventIds)))
}

/** The enabled subscriptions of these accounts, for a dispatch batch to match against each event's name. */
export function enabledSubscriptions(db: Db, accountIds: string[]): Promise<SubscriptionRow[]> {
  return db
    .select()
    .from(webhookSubscriptions)
    .where(and(inArray(webhookSubscriptions.accountId, accountIds), eq(webhookSubscriptions.status, 'enabled')))
}

export interface DeliveryToAttempt {
  delivery: DeliveryRow
  subscription: SubscriptionRow | null
  event: EventRow | null
}

/** Each delivery with its subscription and event, for a batch of jobs in one query; the key is `account:id`. */
export async function loadDeliveries(
  db: Db,
  refs: Array<{ accountId: string; deliveryId: string }>,
): Promise<Map<string, DeliveryToAttempt>> {
  const found = await db
    .select({ delivery: webhookDeliveries, subscription: webhookSubscriptions, event: events })
    .from(webhookDeliveries)
    .leftJoin(
      webhookSubscriptions,
      and(
        eq(webhookSubscriptions.accountId, webhookDeliveries.accountId),
        eq(webhookSubscriptions.id, webhookDeliveries.subscriptionId),
      ),
    )
    .leftJoin(events, and(eq(events.accountId, webhookDeliveries.accountId), eq(events.id, webhookDeliveries.eventId)))
    .where(
      and(
        inArray(webhookDeliveries.accountId, [...new Set(refs.map((r) => r.accountId))]),
        inArray(
          webhookDeliveries.id,
          refs.map((r) => r.deliveryId),
        ),
      ),
    )
  return new Map(found.map((row) => [`${row.delivery.accountId}:${row.delivery.id}`, row]))
}

export interface SucceededAttempt {
  accountId: string
  jobId: string
  leaseToken: string
  attemptId: string
  deliveryId: string
  subscriptionId: string
  eventId: string
  eventName: string
  attempt: number
  attemptedAt: Date
  durationMs: number
  statusCode: number
}

/**
 * Records successful attempts in one statement, atomic on its own: each attempt row, its delivery as succeeded, its
 * subscription's failure streak reset, and its job finished. Only jobs still held (lease token matches) are
 * recorded; the ids of those are returned. A subscription row is locked only when its streak is reset, so
 * successes need no lock of their own; if this ever meets a failure that is disabling the same subscription
 * (deadlock) or a subscription deleted under it, the statement fails as a whole and the caller records each
 * attempt on its own.
 */
export async function recordSuccesses(tx: Db, attempts: SucceededAttempt[], now: Date): Promise<Set<string>> {
  const input = JSON.stringify(
    attempts.map((a) => ({
      account_id: a.accountId,
      job_id: a.jobId,
      lease_token: a.leaseToken,
      attempt_id: a.attemptId,
      delivery_id: a.deliveryId,
      subscription_id: a.subscriptionId,
      event_id: a.eventId,
      event_name: a.eventName,
      attempt: a.attempt,
      attempted_at: a.attemptedAt.toISOString(),
      duration_ms: a.durationMs,
      status_code: a.statusCode,
    })),
  )
  const result = await tx.execute(sql`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${input}::jsonb) AS r(account_id uuid, job_id uuid, lease_token uuid,
        attempt_id uuid, delivery_id uuid, subscription_id uuid, event_id uuid, event_name text, attempt int,
        attempted_at timestamptz, duration_ms int, status_code int)
    ),
    done AS (
      DELETE FROM jobs j USING input i
      WHERE j.account_id = i.account_id AND j.id = i.job_id AND j.lease_token = i.lease_token AND j.state = 'running'
      RETURNING j.account_id, j.id
    ),
    held AS (
      SELECT i.* FROM input i
      JOIN done d ON d.account_id = i.account_id AND d.id = i.job_id
      JOIN webhook_subscriptions s ON s.account_id = i.account_id AND s.id = i.subscription_id
    ),
    attempts AS (
      INSERT INTO ${webhookDeliveryAttempts} (account_id, id, subscription_id, delivery_id, event_id, event_name,
        attempt, attempted_at, duration_ms, status_code, error, succeeded, delivery_state, next_attempt_at)
      SELECT account_id, attempt_id, subscription_id, delivery_id, event_id, event_name, attempt, attempted_at,
        duration_ms, status_code, NULL, true, 'succeeded', NULL
      FROM held
    ),
    deliveries AS (
      UPDATE ${webhookDeliveries} w SET attempts = h.attempt, state = 'succeeded', next_attempt_at = NULL,
        finished_at = ${now.toISOString()}::timestamptz
      FROM held h WHERE w.account_id = h.account_id AND w.id = h.delivery_id
    ),
    healthy AS (
      UPDATE ${webhookSubscriptions} s SET consecutive_failures = 0
      FROM (SELECT DISTINCT account_id, subscription_id FROM held) h
      WHERE s.account_id = h.account_id AND s.id = h.subscription_id AND s.consecutive_failures <> 0
    )
    SELECT id FROM done`)
  return new Set((result as unknown as { rows: Array<{ id: string }> }).rows.map((row) => row.id))
}
