import { type SQL, sql } from 'drizzle-orm'
import { messageClocks } from './inbox.tables.ts'

// What the batch inserts of messages (inbound and outbound, insertMessageInOrder's many form) share.

interface Draft {
  id: string
  conversationId: string
  contactId: string
  type: string
  text: string
  preview: string
}

/**
 * A batch's messages as jsonb_to_recordset reads them: `ord` (the place in the batch), the fields every message has
 * and the batch's own (`more`).
 */
export function draftsJson<D extends Draft>(drafts: D[], more: (d: D) => Record<string, unknown>): string {
  const row = (d: D, ord: number) => ({
    ord,
    id: d.id,
    conversation_id: d.conversationId,
    contact_id: d.contactId,
    type: d.type,
    text: d.text,
    preview: d.preview,
    ...more(d),
  })
  return JSON.stringify(drafts.map(row))
}

/**
 * The account's message clock for a batch of `count` messages at `now`, moved once: `clock`, the statement of the CTE
 * `clock (last_at)`; `draftAt`, the strictly increasing time of the draft `d` by its place in the batch.
 */
export function batchClock(accountId: string, now: Date, count: number): { clock: SQL; draftAt: SQL } {
  const spread = count - 1
  const at = now.toISOString()
  const clock = sql`
      INSERT INTO ${messageClocks} (account_id, last_at)
      VALUES (${accountId}::uuid, ${at}::timestamptz + ${spread}::int * interval '1 millisecond')
      ON CONFLICT (account_id) DO UPDATE
        SET last_at = GREATEST(${at}::timestamptz, ${messageClocks}.last_at + interval '1 millisecond')
          + ${spread}::int * interval '1 millisecond'
      RETURNING last_at`
  return { clock, draftAt: sql`clock.last_at - (${spread}::int - d.ord) * interval '1 millisecond'` }
}
