import { sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { rows } from '../../platform/db/rows.ts'

/** WhatsApp counts the different customers a number starts conversations with over a rolling 24 hours. */
export const DAILY_WINDOW_MS = 24 * 3600_000
/** WhatsApp's messaging limit tiers; a number may be told any limit from 1 (useful with the sandbox) */
export const DAILY_LIMIT_TIERS = [250, 1000, 10_000, 100_000] as const
export const MAX_DAILY_LIMIT = 1_000_000

export type ConversationClaim = { ok: true } | { ok: false; limit: number; resumesAt: Date }

/**
 * A business-initiated message to this contact is about to go out: with a daily limit, it may only when the contact
 * already has a conversation started within the window, or the window has room for one more (then this start is
 * recorded). Serialized per account by a transaction-scoped advisory lock, so concurrent workers never overshoot.
 * When the window is full, says when its oldest start leaves it. Unlimited numbers record nothing.
 */
export async function claimConversation(
  tx: Db,
  input: { accountId: string; contactId: string; limit: number | null; now: Date },
): Promise<ConversationClaim> {
  const { accountId, contactId, limit, now } = input
  if (limit === null) return { ok: true }
  const since = new Date(now.getTime() - DAILY_WINDOW_MS).toISOString()
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`herold_daily:${accountId}`}, 0))`)
  const [own] = rows<{ open: boolean }>(
    await tx.execute(sql`SELECT started_at > ${since}::timestamptz AS open FROM conversation_starts
      WHERE account_id = ${accountId} AND contact_id = ${contactId}`),
  )
  if (own?.open) return { ok: true }
  const [window] = rows<{ used: number; oldest: Date | string | null }>(
    await tx.execute(sql`SELECT count(*)::int AS used, min(started_at) AS oldest FROM (
        SELECT started_at FROM conversation_starts
        WHERE account_id = ${accountId} AND started_at > ${since}::timestamptz
        ORDER BY started_at LIMIT ${limit}) AS recent`),
  )
  if (Number(window?.used ?? 0) >= limit) {
    const oldest = new Date(window?.oldest ?? now)
    return { ok: false, limit, resumesAt: new Date(oldest.getTime() + DAILY_WINDOW_MS) }
  }
  await tx.execute(sql`INSERT INTO conversation_starts (account_id, contact_id, started_at)
    VALUES (${accountId}, ${contactId}, ${now.toISOString()}::timestamptz)
    ON CONFLICT (account_id, contact_id) DO UPDATE SET started_at = excluded.started_at`)
  return { ok: true }
}

/**
 * claimConversation for the contacts of a send batch, in their order, with three statements however many there are
 * (the lock, one read of the window and of the contacts' own starts, one write of the starts granted): one by one it
 * was three or four statements a message, for every number with a tier. The same answers as claiming each in turn;
 * a contact twice in the batch is claimed once.
 */
export async function claimConversations(
  tx: Db,
  input: { accountId: string; contactIds: readonly string[]; limit: number | null; now: Date },
): Promise<ConversationClaim[]> {
  const { accountId, contactIds, limit, now } = input
  if (limit === null || contactIds.length === 0) return contactIds.map(() => ({ ok: true }))
  const since = new Date(now.getTime() - DAILY_WINDOW_MS).toISOString()
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`herold_daily:${accountId}`}, 0))`)
  const unique = [...new Set(contactIds)]
  const [window] = rows<{ used: number; oldest: Date | string | null; open: string[] | null }>(
    await tx.execute(sql`SELECT
        (SELECT count(*)::int FROM (SELECT 1 FROM conversation_starts
          WHERE account_id = ${accountId} AND started_at > ${since}::timestamptz LIMIT ${limit}) AS recent) AS used,
        (SELECT min(started_at) FROM conversation_starts
          WHERE account_id = ${accountId} AND started_at > ${since}::timestamptz) AS oldest,
        (SELECT array_agg(contact_id::text) FROM conversation_starts
          WHERE account_id = ${accountId} AND contact_id = ANY(${sql.param(unique)}::uuid[])
            AND started_at > ${since}::timestamptz) AS open`),
  )
  const open = new Set(window?.open ?? [])
  let used = Number(window?.used ?? 0)
  const oldest = window?.oldest ? new Date(window.oldest) : null
  const granted: string[] = []
  const claims = contactIds.map((contactId): ConversationClaim => {
    if (open.has(contactId)) return { ok: true }
    if (used >= limit) {
      return { ok: false, limit, resumesAt: new Date((oldest ?? now).getTime() + DAILY_WINDOW_MS) }
    }
    used++
    open.add(contactId)
    granted.push(contactId)
    return { ok: true }
  })
  if (granted.length > 0) {
    await tx.execute(sql`INSERT INTO conversation_starts (account_id, contact_id, started_at)
      SELECT ${accountId}::uuid, c, ${now.toISOString()}::timestamptz FROM unnest(${sql.param(granted)}::uuid[]) AS c
      ON CONFLICT (account_id, contact_id) DO UPDATE SET started_at = excluded.started_at`)
  }
  return claims
}

/** The window as it stands: how many conversations were started, and when the oldest leaves it. */
export async function dailyWindow(
  db: Db,
  input: { accountId: string; limit: number | null; now: Date },
): Promise<{ limit: number | null; used: number; resumesAt: Date | null }> {
  if (input.limit === null) return { limit: null, used: 0, resumesAt: null }
  const since = new Date(input.now.getTime() - DAILY_WINDOW_MS).toISOString()
  const [window] = rows<{ used: number; oldest: Date | string | null }>(
    await db.execute(sql`SELECT count(*)::int AS used, min(started_at) AS oldest FROM conversation_starts
      WHERE account_id = ${input.accountId} AND started_at > ${since}::timestamptz`),
  )
  const used = Number(window?.used ?? 0)
  const resumesAt =
    used >= input.limit && window?.oldest ? new Date(new Date(window.oldest).getTime() + DAILY_WINDOW_MS) : null
  return { limit: input.limit, used, resumesAt }
}
