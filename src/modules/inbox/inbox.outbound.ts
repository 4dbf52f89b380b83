import { eq, inArray, sql } from 'drizzle-orm'
import { inAccount } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { recordsetSql } from '../../platform/db/rows.ts'
import { batchClock, draftsJson } from './inbox.batch.ts'
import { conversations } from './inbox.tables.ts'

// Batch writes of the send pipeline (many outbound messages of one account at once). Every query filters on
// account_id; the single-message forms are in inbox.repository.ts.

export type ConversationRow = typeof conversations.$inferSelect

/**
 * The contacts' conversations on the channel, created when missing (one insert, then one locking read of the ones
 * that existed), in contact order so concurrent batches lock in the same order. `created` holds the new ones.
 */
export async function findOrCreateConversations(
  tx: Db,
  input: { accountId: string; channel: string; contactIds: string[]; now: Date; newId: () => string },
): Promise<{ byContact: Map<string, ConversationRow>; created: ConversationRow[] }> {
  const contactIds = [...new Set(input.contactIds)].sort()
  const byContact = new Map<string, ConversationRow>()
  if (contactIds.length === 0) return { byContact, created: [] }
  const created = await tx
    .insert(conversations)
    .values(
      contactIds.map((contactId) => ({
        accountId: input.accountId,
        id: input.newId(),
        contactId,
        channel: input.channel,
        createdAt: input.now,
        lastMessageAt: input.now,
      })),
    )
    .onConflictDoNothing()
    .returning()
  for (const row of created) byContact.set(row.contactId, row)
  const existing = contactIds.filter((id) => !byContact.has(id))
  if (existing.length > 0) {
    const rows = await tx
      .select()
      .from(conversations)
      .where(
        inAccount(
          conversations,
          input.accountId,
          eq(conversations.channel, input.channel),
          inArray(conversations.contactId, existing),
        ),
      )
      .orderBy(conversations.contactId)
      .for('update')
    for (const row of rows) byContact.set(row.contactId, row)
  }
  return { byContact, created }
}

export interface OutboundDraft {
  id: string
  conversationId: string
  contactId: string
  type: string
  text: string
  providerMessageId: string | null
  status: 'sent' | 'failed'
  errorCode: string | null
  automated: boolean
  ai: boolean
  template: unknown
  preview: string
}

/**
 * insertMessageInOrder for many outbound messages of one account in one statement: the account's message clock moves
 * once by as many milliseconds as there are messages, each message gets its own strictly increasing time in the
 * given order, and each touched conversation takes its latest message. As with the single form, the clock row stays
 * locked until the commit, so this must be the transaction's last statement. Returns the stored ids (a provider
 * message id stored before is skipped).
 */
export async function insertOutboundMessagesInOrder(
  tx: Db,
  input: { accountId: string; channel: string; drafts: OutboundDraft[]; now: Date },
): Promise<Set<string>> {
  const { accountId, drafts } = input
  if (drafts.length === 0) return new Set()
  const { clock, draftAt } = batchClock(accountId, input.now, drafts.length)
  const rows = draftsJson(drafts, (d) => ({
    provider_message_id: d.providerMessageId,
    status: d.status,
    error_code: d.errorCode,
    automated: d.automated,
    ai: d.ai,
    template: d.template ?? null,
  }))
  const result = await tx.execute(sql`
    WITH clock AS (${clock}
    ), draft AS (
      SELECT * FROM jsonb_to_recordset(${rows}::jsonb) AS r(ord int, id uuid, conversation_id uuid, contact_id uuid,
        type text, text text, provider_message_id text, status text, error_code text, automated boolean, ai boolean,
        template jsonb, preview text)
    ), stored AS (
      INSERT INTO messages (account_id, id, conversation_id, contact_id, channel, direction, type, text, media_url,
        media_mime, provider_message_id, status, error_code, automated, ai, template, created_at)
      SELECT ${accountId}::uuid, d.id, d.conversation_id, d.contact_id, ${input.channel}, 'outbound', d.type, d.text,
        '', '', d.provider_message_id, d.status, d.error_code, d.automated, d.ai, d.template,
        ${draftAt}
      FROM draft d, clock
      ON CONFLICT DO NOTHING
      RETURNING id, conversation_id, created_at
    ), touched AS (
      SELECT stored.conversation_id,
        (array_agg(stored.created_at ORDER BY stored.created_at DESC))[1] AS last_at,
        (array_agg(draft.preview ORDER BY stored.created_at DESC))[1] AS preview,
        bool_and(draft.automated) AS automated,
        bool_and(draft.automated OR draft.ai) AS not_personal
      FROM stored JOIN draft ON draft.id = stored.id
      GROUP BY stored.conversation_id
    ), conversation AS (
      UPDATE conversations c SET
        last_message_at = touched.last_at,
        last_message_preview = touched.preview,
        last_message_direction = 'outbound',
        automated_only = c.automated_only AND touched.automated,
        needs_person = c.needs_person AND touched.not_personal,
        needs_person_reason = CASE WHEN touched.not_personal THEN c.needs_person_reason ELSE NULL END
      FROM touched
      WHERE c.account_id = ${accountId}::uuid AND c.id = touched.conversation_id
      RETURNING c.id
    )
    SELECT stored.id, (SELECT count(*) FROM conversation) AS touched FROM stored`)
  return new Set((result as unknown as { rows: Array<{ id: string }> }).rows.map((r) => String(r.id)))
}

/** Provider statuses for many messages in one statement. */
export async function setMessageStatuses(
  tx: Db,
  accountId: string,
  changes: Array<{ id: string; status: string; errorCode: string | null }>,
): Promise<void> {
  if (changes.length === 0) return
  const rows = JSON.stringify(changes.map((c) => ({ id: c.id, status: c.status, error_code: c.errorCode })))
  await tx.execute(sql`
    UPDATE messages m SET status = r.status, error_code = r.error_code
    FROM ${recordsetSql(rows, changes.length, 'r', 'id uuid, status text, error_code text')}
    WHERE m.account_id = ${accountId}::uuid AND m.id = r.id`)
}
