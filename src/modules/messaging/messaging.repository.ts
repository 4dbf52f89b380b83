import { and, eq } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { linkClicks, trackedLinks } from './messaging.tables.ts'

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
