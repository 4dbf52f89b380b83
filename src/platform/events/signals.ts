import { sql } from 'drizzle-orm'
import type { Clock } from '../clock.ts'
import type { Db } from '../db/client.ts'

/**
 * What happened to a contact, told to the modules that react to it (automation triggers) inside the transaction
 * of the change: a reaction exists exactly when the change does. The public events (contact.created,
 * message.received, conversation.created) are signals too; opt-in confirmations, opt-outs and added tags are signals only.
 */
export type SignalName =
  | 'contact.created'
  | 'message.received'
  | 'conversation.created'
  | 'optin.confirmed'
  | 'optin.opted_out'
  | 'tag.added'

export interface Signal {
  accountId: string
  name: SignalName
  contactId: string | null
  /** `optin.confirmed`, `optin.opted_out`: `{channel}`; `tag.added`: `{tag}`; events: their data */
  data: Record<string, unknown>
}

export interface SignalListener {
  /** one cheap query: does anything of this account react to this signal now? (bulk writes skip loading otherwise) */
  accepts(tx: Db, accountId: string, name: SignalName): Promise<boolean>
  handle(tx: Db, clock: Clock, signals: Signal[]): Promise<void>
}

const listeners: SignalListener[] = []

/** Modules register from their index.ts. */
export function onSignals(listener: SignalListener): void {
  if (!listeners.includes(listener)) listeners.push(listener)
}

async function acceptedBy(tx: Db, listener: SignalListener, signals: Signal[]): Promise<Signal[]> {
  const groups = new Map<string, boolean>()
  const kept: Signal[] = []
  for (const signal of signals) {
    const group = `${signal.accountId}/${signal.name}`
    let accepted = groups.get(group)
    if (accepted === undefined) {
      accepted = await listener.accepts(tx, signal.accountId, signal.name)
      groups.set(group, accepted)
    }
    if (accepted) kept.push(signal)
  }
  return kept
}

export async function emitSignals(tx: Db, clock: Clock, signals: Signal[]): Promise<void> {
  if (signals.length === 0) return
  for (const listener of listeners) {
    const accepted = await acceptedBy(tx, listener, signals)
    if (accepted.length > 0) await listener.handle(tx, clock, accepted)
  }
}

/** For bulk writes that recorded events by SQL (contact import): loads them only when a listener wants them. */
export async function emitSignalsForEvents(
  tx: Db,
  clock: Clock,
  input: { accountId: string; name: SignalName; eventIds: string[] },
): Promise<void> {
  if (input.eventIds.length === 0 || listeners.length === 0) return
  let wanted = false
  for (const listener of listeners) wanted ||= await listener.accepts(tx, input.accountId, input.name)
  if (!wanted) return
  const result = await tx.execute(sql`
    SELECT contact_id, data FROM events WHERE account_id = ${input.accountId} AND id = ANY(${`{${input.eventIds.join(',')}}`}::uuid[])`)
  const rows = (result as unknown as { rows: Array<{ contact_id: string | null; data: Record<string, unknown> }> }).rows
  await emitSignals(
    tx,
    clock,
    rows.map((row) => ({ accountId: input.accountId, name: input.name, contactId: row.contact_id, data: row.data })),
  )
}
