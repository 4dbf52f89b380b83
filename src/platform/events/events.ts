import { type SQL, sql } from 'drizzle-orm'
import type { Clock } from '../clock.ts'
import { updateContactRows } from '../db/account-rows.ts'
import type { Db } from '../db/client.ts'
import { timeOrderedId } from '../ids.ts'
import { enqueue } from '../jobs/jobs.ts'
import { events } from './events.tables.ts'
import { emitSignals, emitSignalsForEvents } from './signals.ts'

export const EVENT_NAMES = ['contact.created', 'message.received', 'conversation.created'] as const
export type EventName = (typeof EVENT_NAMES)[number]

/** The job queue that hands each recorded event to its consumers (webhook subscriptions). */
export const EVENT_DISPATCH_QUEUE = 'event.dispatch'

/**
 * A consumer of recorded events that writes what it owes for them in the event's own transaction (the webhooks
 * module: one delivery and its job per subscription that wants the event), so nothing has to pick the events up
 * later. Declared as the consumer's `reactions.eventsRecorded`; with none, a dispatch job hands the events on.
 */
export interface EventFanOut {
  fanOut(tx: Db, clock: Clock, events: Array<{ accountId: string; id: string; name: EventName }>): Promise<void>
}

let fanOuts: readonly EventFanOut[] = []

/**
 * The process's consumers of recorded events: the modules' `reactions.eventsRecorded`, set by the composition root
 * (src/services.ts) when it builds the services. Events are recorded from inside every module's writes, so the
 * platform keeps the one list.
 */
export function setEventFanOuts(reacting: readonly EventFanOut[]): void {
  fanOuts = [...reacting]
}

/**
 * Hands recorded events on in the caller's transaction: to the fan-outs, or else to one dispatch job an
 * account. For a module that writes its events in a statement of its own (the inbox's inbound messages); recordEvent
 * and recordEvents call it themselves.
 */
export async function handOnEvents(
  tx: Db,
  clock: Clock,
  recorded: Array<{ accountId: string; id: string; name: EventName }>,
): Promise<void> {
  if (recorded.length === 0) return
  if (fanOuts.length > 0) {
    for (const fanOut of fanOuts) await fanOut.fanOut(tx, clock, recorded)
    return
  }
  const byAccount = new Map<string, string[]>()
  for (const event of recorded) {
    const ids = byAccount.get(event.accountId)
    if (ids) ids.push(event.id)
    else byAccount.set(event.accountId, [event.id])
  }
  await enqueue(
    tx,
    clock,
    [...byAccount].map(([accountId, eventIds]) => ({
      accountId,
      queue: EVENT_DISPATCH_QUEUE,
      payload: eventIds.length === 1 ? { eventId: eventIds[0] } : { eventIds },
    })),
  )
}

export interface RecordedEvent {
  id: string
  name: EventName
  /** the wire id: `<event name>:<uuid>` */
  wireId: string
  createdAt: Date
}

/**
 * Appends an event to the outbox. Call it with the transaction handle of the change it reports, so the
 * event exists exactly when the change does. What its consumers owe for it (handOn) is written in the same
 * transaction, and their jobs' NOTIFY wakes a worker at the commit.
 */
export async function recordEvent(
  tx: Db,
  clock: Clock,
  input: { accountId: string; name: EventName; contactId?: string | null; data: Record<string, unknown> },
): Promise<RecordedEvent> {
  const id = timeOrderedId()
  const createdAt = clock.now()
  await tx.insert(events).values({
    accountId: input.accountId,
    id,
    name: input.name,
    contactId: input.contactId ?? null,
    data: input.data,
    createdAt,
  })
  await handOnEvents(tx, clock, [{ accountId: input.accountId, id, name: input.name }])
  await emitSignals(tx, clock, [
    { accountId: input.accountId, name: input.name, contactId: input.contactId ?? null, data: input.data },
  ])
  return { id, name: input.name, wireId: `${input.name}:${id}`, createdAt }
}

/**
 * A test event (POST /webhooks/{id}/test): stored for one delivery only, never dispatched to other subscriptions or
 * automations, so no dispatch job and no signal.
 */
export async function recordTestEvent(
  tx: Db,
  row: { accountId: string; id: string; name: EventName; data: Record<string, unknown>; createdAt: Date },
): Promise<void> {
  await tx.insert(events).values({ ...row, contactId: null })
}

/** GDPR: the events about a deleted contact stay (they happened) but lose every personal field. */
export async function anonymizeContactEvents(tx: Db, accountId: string, contactId: string): Promise<number> {
  return updateContactRows(tx, events, accountId, contactId, { contactId: null, data: { anonymized: true } })
}

/** Appends many events in one statement (bulk imports); same rules as recordEvent. */
export async function recordEvents(
  tx: Db,
  clock: Clock,
  inputs: Array<{ accountId: string; name: EventName; contactId?: string | null; data: Record<string, unknown> }>,
): Promise<number> {
  if (inputs.length === 0) return 0
  const createdAt = clock.now().toISOString()
  const withIds = inputs.map((input) => ({ ...input, id: timeOrderedId() }))
  // One JSON parameter instead of a bound parameter per field: the query builder is the bottleneck at this size.
  const rows = JSON.stringify(
    withIds.map((input) => ({
      account_id: input.accountId,
      id: input.id,
      name: input.name,
      contact_id: input.contactId ?? null,
      data: input.data,
      created_at: createdAt,
    })),
  )
  await tx.execute(sql`
    INSERT INTO ${events} (account_id, id, name, contact_id, data, created_at)
    SELECT * FROM jsonb_to_recordset(${rows}::jsonb)
      AS r(account_id uuid, id uuid, name text, contact_id uuid, data jsonb, created_at timestamptz)`)
  await handOnEvents(
    tx,
    clock,
    withIds.map((input) => ({ accountId: input.accountId, id: input.id, name: input.name })),
  )
  await emitSignals(
    tx,
    clock,
    inputs.map((input) => ({
      accountId: input.accountId,
      name: input.name,
      contactId: input.contactId ?? null,
      data: input.data,
    })),
  )
  return inputs.length
}

/**
 * Bulk, for a statement that derives its events from rows it writes itself (contact import): the INSERT into the
 * outbox to use as a data-modifying CTE. `rows` is a SELECT of (id uuid, contact_id uuid, data jsonb), the ids made
 * by timeOrderedId in the order of the rows; the CTE returns the new event ids, which the caller hands to
 * dispatchEvents in the same transaction.
 */
export function insertEventsSql(input: { accountId: string; name: EventName; createdAt: Date; rows: SQL }): SQL {
  return sql`INSERT INTO ${events} (account_id, id, name, contact_id, data, created_at)
    SELECT ${input.accountId}::uuid, e.id, ${input.name}, e.contact_id, e.data,
      ${input.createdAt.toISOString()}::timestamptz
    FROM (${input.rows}) AS e
    RETURNING id`
}

/** Hands on a batch of recorded events of one account (all named `name`), and sends their signals. */
export async function dispatchEvents(
  tx: Db,
  clock: Clock,
  accountId: string,
  eventIds: string[],
  name: EventName,
): Promise<void> {
  if (eventIds.length === 0) return
  await handOnEvents(
    tx,
    clock,
    eventIds.map((id) => ({ accountId, id, name })),
  )
  await emitSignalsForEvents(tx, clock, { accountId, name, eventIds })
}
