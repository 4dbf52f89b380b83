import { type SQL, sql } from 'drizzle-orm'
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
  /** the same question as a boolean SQL expression, so a hot path can ask it inside a statement of its own */
  acceptsSql?(accountId: string, name: SignalName): SQL
  handle(tx: Db, clock: Clock, signals: Signal[]): Promise<void>
}

let listeners: readonly SignalListener[] = []

/**
 * The process's signal listeners: the modules' `reactions.signals`, set by the composition root (src/services.ts)
 * when it builds the services. Signals are sent from inside every module's writes, so the platform keeps the one list.
 */
export function setSignalListeners(reacting: readonly SignalListener[]): void {
  listeners = [...reacting]
}

/**
 * Answers read ahead by the caller's own statement (see acceptsSql): listener, then `account/name`, to whether it
 * accepts. What is not in it is asked with `accepts`.
 */
export type KnownAccepts = Map<SignalListener, Map<string, boolean>>

/**
 * Every listener's acceptance of these signals as one SQL expression (a jsonb array) to fold into a statement the
 * caller runs anyway; `read` turns its value into the KnownAccepts for emitSignals.
 */
export function acceptsSql(accountId: string, names: SignalName[]): { sql: SQL; read(value: unknown): KnownAccepts } {
  const asked: Array<[SignalListener, SignalName]> = []
  for (const listener of listeners) {
    if (!listener.acceptsSql) continue
    for (const name of names) asked.push([listener, name])
  }
  const expressions = asked.map(([listener, name]) => sql`(${listener.acceptsSql?.(accountId, name)})`)
  return {
    sql: expressions.length > 0 ? sql`jsonb_build_array(${sql.join(expressions, sql`, `)})` : sql`'[]'::jsonb`,
    read(value) {
      const answers = (typeof value === 'string' ? JSON.parse(value) : value) as unknown[]
      const known: KnownAccepts = new Map()
      asked.forEach(([listener, name], i) => {
        if (typeof answers?.[i] !== 'boolean') return
        const ofListener = known.get(listener) ?? new Map<string, boolean>()
        ofListener.set(`${accountId}/${name}`, answers[i] as boolean)
        known.set(listener, ofListener)
      })
      return known
    },
  }
}

async function acceptedBy(
  tx: Db,
  listener: SignalListener,
  signals: Signal[],
  known?: KnownAccepts,
): Promise<Signal[]> {
  const groups = new Map<string, boolean>(known?.get(listener))
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

export async function emitSignals(tx: Db, clock: Clock, signals: Signal[], known?: KnownAccepts): Promise<void> {
  if (signals.length === 0) return
  for (const listener of listeners) {
    const accepted = await acceptedBy(tx, listener, signals, known)
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
