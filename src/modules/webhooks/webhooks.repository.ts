import { and, desc, eq, inArray, ne, sql } from 'drizzle-orm'
import { accounts, plans } from '../../platform/auth/auth.tables.ts'
import { accountRowFinder, inAccount, newestFirst } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { recordsJson } from '../../platform/db/rows.ts'
import { events } from '../../platform/events/events.tables.ts'
import { enqueueSelectSql, notifyJobsSql } from '../../platform/jobs/jobs.ts'
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
  const query = db.select().from(webhookSubscriptions).where(inAccount(webhookSubscriptions, accountId)).$dynamic()
  return newestFirst(query, { at: webhookSubscriptions.createdAt, id: webhookSubscriptions.id }, { limit, offset })
}

export const findSubscription = accountRowFinder(webhookSubscriptions)

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
  const query = db
    .select()
    .from(webhookDeliveryAttempts)
    .where(inAccount(webhookDeliveryAttempts, accountId, eq(webhookDeliveryAttempts.subscriptionId, subscriptionId)))
    .$dynamic()
  const by = { at: webhookDeliveryAttempts.attemptedAt, id: webhookDeliveryAttempts.id }
  return newestFirst(query, by, { limit, offset })
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
      inAccount(
        webhookSubscriptions,
        accountId,
        eq(webhookSubscriptions.status, 'enabled'),
        sql`${eventName} = ANY(${webhookSubscriptions.events})`,
      ),
    )
}

/**
 * Fans recorded events out in one statement, in their own transaction: a pending delivery for each enabled
 * subscription of the event's account that wants its name (none twice: the unique index), each delivery's job keyed by
 * its subscription, and the jobs' NOTIFY. An account without subscriptions pays one index probe.
 */
export async function fanOutDeliveries(
  tx: Db,
  queue: string,
  now: Date,
  recorded: Array<{ accountId: string; id: string; name: string }>,
): Promise<void> {
  const at = sql`${now.toISOString()}::timestamptz`
  const input = JSON.stringify(recorded.map((e) => ({ account_id: e.accountId, id: e.id, name: e.name })))
  await tx.execute(sql`
    WITH recorded AS (
      SELECT r.account_id, r.id, r.name
      FROM jsonb_to_recordset(${input}::jsonb) AS r(account_id uuid, id uuid, name text)
    ), delivery AS (
      INSERT INTO webhook_deliveries (account_id, id, subscription_id, event_id, event_name, state, attempts,
        next_attempt_at, created_at)
      SELECT e.account_id, gen_random_uuid(), s.id, e.id, e.name, 'pending', 0, ${at}, ${at}
      FROM recorded e
      JOIN webhook_subscriptions s ON s.account_id = e.account_id AND s.status = 'enabled' AND e.name = ANY(s.events)
      ON CONFLICT DO NOTHING
      RETURNING account_id, id, subscription_id
    ), job AS (${enqueueSelectSql(now, {
      queue,
      keyed: true,
      select: sql`SELECT account_id, jsonb_build_object('deliveryId', id) AS payload,
        subscription_id::text AS concurrency_key FROM delivery`,
    })})
    SELECT ${notifyJobsSql('job')} AS notified`)
}

/** Rows per INSERT: eight bound parameters each stay well under PostgreSQL's 65,535 per statement. */
const INSERT_CHUNK = 5_000

/** Inserts the deliveries an event owes; ones that already exist (a re-run dispatch) are skipped. */
export async function insertDeliveries(
  tx: Db,
  rows: (typeof webhookDeliveries.$inferInsert)[],
): Promise<DeliveryRow[]> {
  const created: DeliveryRow[] = []
  for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
    const chunk = rows.slice(start, start + INSERT_CHUNK)
    created.push(...(await tx.insert(webhookDeliveries).values(chunk).onConflictDoNothing().returning()))
  }
  return created
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
      inAccount(
        webhookDeliveries,
        accountId,
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

/** What an attempt needs of a delivery (a claim's read returns no more). */
export interface DeliveryToAttempt {
  delivery: Pick<DeliveryRow, 'accountId' | 'id' | 'subscriptionId' | 'eventId' | 'eventName' | 'state' | 'attempts'>
  subscription: Pick<SubscriptionRow, 'id' | 'status' | 'url' | 'secretSealed'> | null
  event: Pick<EventRow, 'id' | 'name' | 'createdAt' | 'data'> | null
}

interface LoadedRow {
  account_id: string
  id: string
  subscription_id: string
  event_id: string
  event_name: string
  state: DeliveryRow['state']
  attempts: number | string
  subscription_status: SubscriptionRow['status'] | null
  url: string | null
  secret_sealed: string | null
  event_created_at: Date | string | null
  event_data: Record<string, unknown> | string | null
}

/**
 * A claimed delivery job's read in the claim's own statement (JobHandler.claimAlso): the delivery with its
 * subscription and event as one jsonb value (read by deliveryToAttempt), null when the delivery is gone.
 */
export const deliveryOfClaimedJob = sql`SELECT to_jsonb(l) AS also
  FROM herold_load_webhook_deliveries(ARRAY[c.account_id], ARRAY[(c.payload->>'deliveryId')::uuid]) l`

/** A delivery as deliveryOfClaimedJob read it (a jsonb object, or its text), null when it is gone. */
export function deliveryToAttempt(value: unknown): DeliveryToAttempt | null {
  if (value === null || value === undefined) return null
  return toAttempt((typeof value === 'string' ? JSON.parse(value) : value) as LoadedRow)
}

function toAttempt(row: LoadedRow): DeliveryToAttempt {
  return {
    delivery: {
      accountId: row.account_id,
      id: row.id,
      subscriptionId: row.subscription_id,
      eventId: row.event_id,
      eventName: row.event_name,
      state: row.state,
      attempts: Number(row.attempts),
    },
    subscription:
      row.subscription_status === null
        ? null
        : {
            id: row.subscription_id,
            status: row.subscription_status,
            url: row.url ?? '',
            secretSealed: row.secret_sealed ?? '',
          },
    event:
      row.event_created_at === null || row.event_data === null
        ? null
        : {
            id: row.event_id,
            name: row.event_name,
            createdAt: new Date(row.event_created_at),
            data: typeof row.event_data === 'string' ? JSON.parse(row.event_data) : row.event_data,
          },
  }
}

/**
 * Each delivery with its subscription and event, for a batch of jobs in one query; the key is `account:id`.
 * herold_load_webhook_deliveries (migration 0070_lean_delivery_load) keeps its plan across calls and returns only the
 * columns an attempt reads.
 */
export async function loadDeliveries(
  db: Db,
  refs: Array<{ accountId: string; deliveryId: string }>,
): Promise<Map<string, DeliveryToAttempt>> {
  const accountIds = `{${[...new Set(refs.map((r) => r.accountId))].join(',')}}`
  const ids = `{${refs.map((r) => r.deliveryId).join(',')}}`
  const result = await db.execute(
    sql`SELECT * FROM herold_load_webhook_deliveries(${accountIds}::uuid[], ${ids}::uuid[])`,
  )
  const found = new Map<string, DeliveryToAttempt>()
  for (const row of (result as unknown as { rows: LoadedRow[] }).rows)
    found.set(`${row.account_id}:${row.id}`, toAttempt(row))
  return found
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
  const input = recordsJson(attempts, [
    'accountId',
    'jobId',
    'leaseToken',
    'attemptId',
    'deliveryId',
    'subscriptionId',
    'eventId',
    'eventName',
    'attempt',
    'attemptedAt',
    'durationMs',
    'statusCode',
  ])
  // herold_record_webhook_successes (migration 0010_batched_delivery) keeps its plan across calls
  const result = await tx.execute(
    sql`SELECT id FROM herold_record_webhook_successes(${input}::jsonb, ${now.toISOString()}::timestamptz) AS id`,
  )
  return new Set((result as unknown as { rows: Array<{ id: string }> }).rows.map((row) => row.id))
}

/** The attempts of one delivery, newest first (the list index narrows to its subscription). */
export function attemptsOfDelivery(db: Db, accountId: string, subscriptionId: string, deliveryId: string) {
  return db
    .select()
    .from(webhookDeliveryAttempts)
    .where(
      inAccount(
        webhookDeliveryAttempts,
        accountId,
        eq(webhookDeliveryAttempts.subscriptionId, subscriptionId),
        eq(webhookDeliveryAttempts.deliveryId, deliveryId),
      ),
    )
    .orderBy(desc(webhookDeliveryAttempts.attemptedAt), desc(webhookDeliveryAttempts.id))
    .limit(50)
}

/** A delivery due again from its first attempt (redelivery): pending, no attempts counted, due now. */
export async function restartDelivery(tx: Db, accountId: string, id: string, now: Date): Promise<DeliveryRow | null> {
  const [row] = await tx
    .update(webhookDeliveries)
    .set({ state: 'pending', attempts: 0, nextAttemptAt: now, finishedAt: null })
    .where(
      inAccount(webhookDeliveries, accountId, eq(webhookDeliveries.id, id), ne(webhookDeliveries.state, 'pending')),
    )
    .returning()
  return row ?? null
}
