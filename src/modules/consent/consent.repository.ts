import { and, eq, isNull, sql } from 'drizzle-orm'
import { ofContact } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { rowAsJsonSql, rowFromJson } from '../../platform/db/rows.ts'
import { chatOptinRequests, consentSettings, emailOptinTokens } from './consent.tables.ts'

// Every query here filters on account_id, except the look-up of a link token by its hash (the token is the key).

export type SettingsRow = typeof consentSettings.$inferSelect
export type ChatOptinRequestRow = typeof chatOptinRequests.$inferSelect
export type EmailOptinTokenRow = typeof emailOptinTokens.$inferSelect

export async function settingsOf(db: Db, accountId: string): Promise<SettingsRow | null> {
  const [row] = await db.select().from(consentSettings).where(eq(consentSettings.accountId, accountId))
  return row ?? null
}

/** settingsOf as a jsonb expression for a statement of another module; settingsFromJson reads its value. */
export const settingsAsJsonSql = (accountId: string) =>
  rowAsJsonSql(consentSettings, eq(consentSettings.accountId, accountId))
export const settingsFromJson = (value: unknown): SettingsRow | null => rowFromJson(consentSettings, value)

export async function saveSettings(
  db: Db,
  accountId: string,
  change: Partial<Omit<typeof consentSettings.$inferInsert, 'accountId'>>,
  now: Date,
): Promise<SettingsRow> {
  const [row] = await db
    .insert(consentSettings)
    .values({ accountId, ...change, updatedAt: now })
    .onConflictDoUpdate({ target: consentSettings.accountId, set: { ...change, updatedAt: now } })
    .returning()
  return row
}

export async function upsertChatRequest(
  db: Db,
  row: typeof chatOptinRequests.$inferInsert & { updatedAt: Date },
): Promise<void> {
  const { accountId: _a, contactId: _c, ...change } = row
  await db
    .insert(chatOptinRequests)
    .values(row)
    .onConflictDoUpdate({
      target: [chatOptinRequests.accountId, chatOptinRequests.contactId],
      set: {
        state: change.state,
        inboundMessageId: change.inboundMessageId ?? null,
        templateId: change.templateId ?? null,
        language: change.language ?? null,
        buttonText: change.buttonText ?? null,
        messageId: change.messageId ?? null,
        reason: change.reason ?? null,
        updatedAt: change.updatedAt,
      },
    })
}

/**
 * Moves a queued request to `sending` with the template it gets, under the row's lock: of two runs of one job
 * (a lease that ran out), only one sends.
 */
export async function claimChatRequest(
  db: Db,
  accountId: string,
  contactId: string,
  change: { templateId: string; language: string; buttonText: string; updatedAt: Date },
): Promise<boolean> {
  const claimed = await db
    .update(chatOptinRequests)
    .set({ ...change, state: 'sending', reason: null })
    .where(ofContact(chatOptinRequests, accountId, contactId, eq(chatOptinRequests.state, 'queued')))
    .returning({ contactId: chatOptinRequests.contactId })
  return claimed.length > 0
}

export async function chatRequestOf(db: Db, accountId: string, contactId: string) {
  const [row] = await db
    .select()
    .from(chatOptinRequests)
    .where(ofContact(chatOptinRequests, accountId, contactId))
  return row ?? null
}

export async function deleteChatRequest(db: Db, accountId: string, contactId: string): Promise<void> {
  await db.delete(chatOptinRequests).where(ofContact(chatOptinRequests, accountId, contactId))
}

export async function countChatRequests(db: Db, accountId: string, state: ChatOptinRequestRow['state']) {
  const [row] = await db
    .select({ count: sql<number>`count(*)::int` })
    .from(chatOptinRequests)
    .where(and(eq(chatOptinRequests.accountId, accountId), eq(chatOptinRequests.state, state)))
  return Number(row?.count ?? 0)
}

export async function insertEmailToken(db: Db, row: typeof emailOptinTokens.$inferInsert): Promise<void> {
  await db.insert(emailOptinTokens).values(row)
}

export async function deleteEmailToken(db: Db, accountId: string, id: string): Promise<void> {
  await db.delete(emailOptinTokens).where(and(eq(emailOptinTokens.accountId, accountId), eq(emailOptinTokens.id, id)))
}

export async function emailTokenByHash(db: Db, hash: string, options: { lock?: boolean } = {}) {
  const query = db.select().from(emailOptinTokens).where(eq(emailOptinTokens.tokenHash, hash))
  const [row] = options.lock ? await query.for('update') : await query
  return row ?? null
}

export async function markEmailTokenUsed(db: Db, accountId: string, id: string, now: Date): Promise<boolean> {
  const used = await db
    .update(emailOptinTokens)
    .set({ usedAt: now })
    .where(and(eq(emailOptinTokens.accountId, accountId), eq(emailOptinTokens.id, id), isNull(emailOptinTokens.usedAt)))
    .returning({ id: emailOptinTokens.id })
  return used.length > 0
}

/** Moves the account's chat opt-ins that waited for an approved template back to queued; their contacts. */
export async function requeueWaitingChatRequests(db: Db, accountId: string, now: Date): Promise<string[]> {
  const rows = await db
    .update(chatOptinRequests)
    .set({ state: 'queued', updatedAt: now })
    .where(and(eq(chatOptinRequests.accountId, accountId), eq(chatOptinRequests.state, 'no_template')))
    .returning({ contactId: chatOptinRequests.contactId })
  return rows.map((row) => row.contactId)
}
