import { randomBytes } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Db } from '../db/client.ts'

/**
 * The one channel of the console's live updates (see live-hub.ts): every API process LISTENs on it once and fans
 * what it hears out to its open streams. A notification is fired at the commit of the transaction that sent it, so
 * a rolled-back change is never heard, and every process hears the notifications in the same (commit) order.
 */
export const LIVE_CHANNEL = 'herold_live'

/** PostgreSQL refuses a NOTIFY payload of 8000 bytes or more; ours stay below this. */
export const LIVE_PAYLOAD_MAX = 7900

/**
 * What travels on the channel (JSON): a change of an account's data for its open streams (`i` the event's id,
 * random, the same in every process; `a` the account; `k` the kind of change and `d` its data, or `r` when the
 * change was too big to name and the streams should refetch everything), or the end of sessions (`e`): their streams
 * close at once on every process.
 */
export type LiveNotice =
  | { i: string; a: string; k: string; d: unknown }
  | { i: string; a: string; r: 1 }
  | { e: { u: string | null; a: string | null; s: string | null } }

/** A new event id: 72 random bits, 12 characters (the `id:` of the event and the Last-Event-ID it comes back as). */
export function liveEventId(): string {
  return randomBytes(9).toString('base64url')
}

async function notify(tx: Db, payload: string): Promise<void> {
  await tx.execute(sql`SELECT pg_notify(${LIVE_CHANNEL}, ${payload})`)
}

/**
 * Publishes one change of an account to its open streams, inside the writing transaction: one pg_notify, heard at
 * the commit. `data` is what the streams send as the event's data; when its JSON would be too big for one
 * notification the streams are told to refetch everything instead (`resync`).
 */
export async function publishLive(tx: Db, accountId: string, kind: string, data: unknown): Promise<void> {
  const i = liveEventId()
  let payload = JSON.stringify({ i, a: accountId, k: kind, d: data } satisfies LiveNotice)
  if (Buffer.byteLength(payload) > LIVE_PAYLOAD_MAX) payload = JSON.stringify({ i, a: accountId, r: 1 })
  await notify(tx, payload)
}

/**
 * Ends the live streams of sessions that end (sign-out, password change, a member removed): of one session, or of
 * every session of a user (in one account, or in all). Inside the transaction that revokes them.
 */
export async function publishSessionsEnded(
  tx: Db,
  ended: { sessionId: string } | { userId: string; accountId?: string },
): Promise<void> {
  const notice: LiveNotice =
    'sessionId' in ended
      ? { e: { u: null, a: null, s: ended.sessionId } }
      : { e: { u: ended.userId, a: ended.accountId ?? null, s: null } }
  await notify(tx, JSON.stringify(notice))
}
