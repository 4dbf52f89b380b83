import { and, eq, inArray, ne, sql } from 'drizzle-orm'
import { deleteContactRows, ofContact } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { recordsetSql } from '../../platform/db/rows.ts'
import type { ContactTag, TagOrigin } from './contacts.rules.ts'
import { contactTags } from './contacts.tables.ts'

// A contact's tags, each statement filtered on account_id (the repository re-exports them).

export async function tagsOf(
  db: Db,
  accountId: string,
  contactIds: string[],
): Promise<Array<ContactTag & { contactId: string }>> {
  if (contactIds.length === 0) return []
  return db
    .select({ contactId: contactTags.contactId, name: contactTags.name, origin: contactTags.origin })
    .from(contactTags)
    .where(and(eq(contactTags.accountId, accountId), inArray(contactTags.contactId, contactIds)))
}

export async function insertTags(
  db: Db,
  rows: Array<{ accountId: string; contactId: string; name: string; origin: TagOrigin }>,
): Promise<void> {
  if (rows.length === 0) return
  await db.insert(contactTags).values(rows).onConflictDoNothing()
}

/** Removes a tag name under the origins the API may remove (never system). */
export async function deleteTag(db: Db, accountId: string, contactId: string, name: string): Promise<number> {
  const rows = await db
    .delete(contactTags)
    .where(ofContact(contactTags, accountId, contactId, eq(contactTags.name, name), ne(contactTags.origin, 'system')))
    .returning({ name: contactTags.name })
  return rows.length
}

/** deleteTag for many (contact, name) pairs of an account in one statement (never a system tag). */
export async function deleteTagsOf(
  db: Db,
  accountId: string,
  pairs: Array<{ contact_id: string; name: string }>,
): Promise<void> {
  if (pairs.length === 0) return
  await db.execute(sql`DELETE FROM contact_tags t
    USING ${recordsetSql(JSON.stringify(pairs), pairs.length, 'p', 'contact_id uuid, name text')}
    WHERE t.account_id = ${accountId} AND t.contact_id = p.contact_id AND t.name = p.name AND t.origin <> 'system'`)
}

export async function deleteAllTags(db: Db, accountId: string, contactId: string): Promise<number> {
  return deleteContactRows(db, contactTags, accountId, contactId)
}

export async function countTags(
  db: Db,
  accountId: string,
  contactIds: string[],
): Promise<Array<{ name: string; origin: TagOrigin; count: number }>> {
  if (contactIds.length === 0) return []
  const rows = await db
    .select({
      name: contactTags.name,
      // the strongest origin of the name (system > ki > manuell)
      origin: sql<TagOrigin>`(ARRAY['manuell', 'ki', 'system'])[max(CASE ${contactTags.origin} WHEN 'system' THEN 3 WHEN 'ki' THEN 2 ELSE 1 END)]`,
      count: sql<number>`count(DISTINCT ${contactTags.contactId})::int`,
    })
    .from(contactTags)
    .where(and(eq(contactTags.accountId, accountId), inArray(contactTags.contactId, contactIds)))
    .groupBy(contactTags.name)
  return rows
}
