import { and, eq, inArray } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { linkClicks, templateSends, trackedLinks } from './messaging.tables.ts'

export async function insertLinks(
  db: Db,
  accountId: string,
  contactId: string,
  links: Array<{ id: string; url: string }>,
  now: Date,
): Promise<void> {
  if (links.length === 0) return
  await db.insert(trackedLinks).values(links.map((link) => ({ accountId, contactId, ...link, createdAt: now })))
}

/** The public redirect's lookup: by the global id alone. */
export async function linkById(db: Db, id: string) {
  const [row] = await db.select().from(trackedLinks).where(eq(trackedLinks.id, id))
  return row
}

export async function insertClick(db: Db, click: typeof linkClicks.$inferInsert): Promise<void> {
  await db.insert(linkClicks).values(click)
}

/** DELETE /contacts/{id}: the contact's short links and their clicks go with it. */
export async function deleteContactLinks(db: Db, accountId: string, contactId: string) {
  const clicks = await db
    .delete(linkClicks)
    .where(and(eq(linkClicks.accountId, accountId), eq(linkClicks.contactId, contactId)))
    .returning({ linkId: linkClicks.linkId })
  const links = await db
    .delete(trackedLinks)
    .where(and(eq(trackedLinks.accountId, accountId), eq(trackedLinks.contactId, contactId)))
    .returning({ id: trackedLinks.id })
  return { link_clicks: clicks.length, tracked_links: links.length }
}

export type TemplateSendRow = typeof templateSends.$inferSelect
export type TemplateSendPatch = Partial<Omit<TemplateSendRow, 'accountId' | 'id'>>

const bySend = (accountId: string, id: string) => and(eq(templateSends.accountId, accountId), eq(templateSends.id, id))

export async function insertSends(tx: Db, rows: Array<typeof templateSends.$inferInsert>): Promise<void> {
  if (rows.length > 0) await tx.insert(templateSends).values(rows)
}

export async function findSend(db: Db, accountId: string, id: string, options: { lock?: boolean } = {}) {
  const query = db.select().from(templateSends).where(bySend(accountId, id))
  const [row] = options.lock ? await query.for('update') : await query
  return row ?? null
}

/** Updates a send; with `token` only while that attempt still holds it. Returns the row, or null when not matched. */
export async function updateSend(
  tx: Db,
  accountId: string,
  id: string,
  patch: TemplateSendPatch,
  options: { token?: string } = {},
) {
  const where = options.token
    ? and(bySend(accountId, id), eq(templateSends.attemptToken, options.token))
    : bySend(accountId, id)
  const [row] = await tx.update(templateSends).set(patch).where(where).returning()
  return row ?? null
}

/** The sends of these outbound messages, locked: provider statuses are applied one message at a time. */
export async function sendsByMessageIds(tx: Db, accountId: string, messageIds: string[]) {
  if (messageIds.length === 0) return []
  return tx
    .select()
    .from(templateSends)
    .where(and(eq(templateSends.accountId, accountId), inArray(templateSends.messageId, messageIds)))
    .for('update')
}

/** DELETE /contacts/{id}: the contact's send records go; the ones still waiting are counted as `send_jobs`. */
export async function deleteContactSends(db: Db, accountId: string, contactId: string) {
  const removed = await db
    .delete(templateSends)
    .where(and(eq(templateSends.accountId, accountId), eq(templateSends.contactId, contactId)))
    .returning({ status: templateSends.status })
  return { send_jobs: removed.filter((r) => r.status === 'queued').length }
}
