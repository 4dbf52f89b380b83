import { and, desc, eq, gt, inArray, ne, or, type SQL, sql } from 'drizzle-orm'
import { accounts, plans } from '../../platform/auth/auth.tables.ts'
import { findAccountRow, ofContact, updateContactRows } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { insertEventsSql } from '../../platform/events/events.ts'
import { timeOrderedId } from '../../platform/ids.ts'
import { likeContains, type OptinState, type SearchTerms, type TagOrigin } from './contacts.rules.ts'
import { type CustomFieldValue, consentRecords, contactCounts, contacts, contactTags } from './contacts.tables.ts'

// Every query here filters on account_id; a repository never decides a rule. The hot reads of the API and the tag
// rows live beside it and are handed out here too.
export * from './contacts.reads.ts'
export * from './contacts.tag-rows.ts'

export type ContactRow = typeof contacts.$inferSelect
export type NewContactRow = typeof contacts.$inferInsert
export type ConsentRecordInput = Omit<typeof consentRecords.$inferInsert, 'id'>

/** Must stay identical to the expression of contacts_search_trgm_idx (db/migrations/0004_contacts_search.sql). */
const SEARCH_TEXT = sql`(${contacts.name} || E'\\n' || ${contacts.email} || E'\\n' || ${contacts.phone})`

export async function findContact(
  db: Db,
  accountId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ContactRow | undefined> {
  return (await findAccountRow(db, contacts, accountId, id, options)) ?? undefined
}

/** Many contacts of an account by id, locked in id order with `lock` (a batch of automation steps). */
export async function findContacts(
  db: Db,
  accountId: string,
  ids: string[],
  options: { lock?: boolean } = {},
): Promise<ContactRow[]> {
  if (ids.length === 0) return []
  const query = db
    .select()
    .from(contacts)
    .where(and(eq(contacts.accountId, accountId), inArray(contacts.id, ids)))
    .orderBy(contacts.id)
  return options.lock ? query.for('update') : query
}

/** The contacts holding this email or this phone (at most two), locked for the caller's transaction. */
export async function findByAddress(
  db: Db,
  accountId: string,
  address: { email: string; phone: string },
): Promise<ContactRow[]> {
  const matches: SQL[] = []
  // `<> ''` lets the planner use the partial unique indexes
  if (address.email !== '') matches.push(and(ne(contacts.email, ''), eq(contacts.email, address.email))!)
  if (address.phone !== '') matches.push(and(ne(contacts.phone, ''), eq(contacts.phone, address.phone))!)
  if (matches.length === 0) return []
  return db
    .select()
    .from(contacts)
    .where(and(eq(contacts.accountId, accountId), or(...matches)))
    .for('update')
}

/**
 * findByAddress's id for many addresses as SQL (locked the same way), for a statement of another module (a CTE body
 * with the columns `ord` and `id`: the position of the address in the list and the contact's id; an address with no
 * contact has no row). Every address is a phone or an e-mail address, the other field ''.
 */
export function idsByAddressesSql(accountId: string, addresses: Array<{ email: string; phone: string }>): SQL {
  const rows = JSON.stringify(addresses.map((a, ord) => ({ ord, email: a.email, phone: a.phone })))
  const phones = JSON.stringify(addresses.flatMap((a) => (a.phone !== '' ? [a.phone] : [])))
  const emails = JSON.stringify(addresses.flatMap((a) => (a.phone === '' && a.email !== '' ? [a.email] : [])))
  // the contacts are found through the unique address indexes (arrays, not a join the planner would scan)
  return sql`SELECT a.ord, c.id
    FROM jsonb_to_recordset(${rows}::jsonb) AS a(ord int, email text, phone text)
    JOIN (
      SELECT ${contacts.id} AS id, ${contacts.phone} AS phone, ${contacts.email} AS email FROM ${contacts}
      WHERE ${contacts.accountId} = ${accountId}::uuid AND (
        (${contacts.phone} <> '' AND ${contacts.phone} = ANY(ARRAY(SELECT jsonb_array_elements_text(${phones}::jsonb))))
        OR (${contacts.email} <> '' AND ${contacts.email} = ANY(ARRAY(SELECT jsonb_array_elements_text(${emails}::jsonb)))))
      FOR UPDATE
    ) c ON (a.phone <> '' AND c.phone = a.phone) OR (a.phone = '' AND a.email <> '' AND c.email = a.email)`
}

/** Inserts unless a unique index (email or phone) already holds the address; then returns undefined. */
export async function insertContact(db: Db, row: NewContactRow): Promise<ContactRow | undefined> {
  const [inserted] = await db.insert(contacts).values(row).onConflictDoNothing().returning()
  return inserted
}

export async function updateContact(
  db: Db,
  accountId: string,
  id: string,
  change: Partial<Pick<ContactRow, 'name' | 'email' | 'phone' | 'optinChat' | 'optinEmail' | 'fields'>>,
): Promise<ContactRow> {
  const [row] = await db
    .update(contacts)
    .set(change)
    .where(and(eq(contacts.accountId, accountId), eq(contacts.id, id)))
    .returning()
  return row
}

export async function deleteContactRow(db: Db, accountId: string, id: string): Promise<number> {
  const rows = await db
    .delete(contacts)
    .where(and(eq(contacts.accountId, accountId), eq(contacts.id, id)))
    .returning({ id: contacts.id })
  return rows.length
}

export interface ListFilter {
  terms: SearchTerms | null
  /** conditions on custom fields (fieldConditionsSql on `contacts`) */
  byFields?: SQL | null
  createdAfter?: Date
  limit: number
  offset: number
}

/** Newest first (created_at, then id); fetches limit + 1 rows so the caller knows whether more exist. */
export async function listContacts(db: Db, accountId: string, filter: ListFilter): Promise<ContactRow[]> {
  const conditions: SQL[] = [eq(contacts.accountId, accountId)]
  if (filter.createdAfter) conditions.push(gt(contacts.createdAt, filter.createdAfter))
  if (filter.terms) {
    const { text, phone } = filter.terms
    const byText = sql`${SEARCH_TEXT} ILIKE ${likeContains(text)}`
    conditions.push(phone ? sql`(${byText} OR ${SEARCH_TEXT} LIKE ${likeContains(phone)})` : byText)
  }
  if (filter.byFields) conditions.push(filter.byFields)
  return db
    .select()
    .from(contacts)
    .where(and(...conditions))
    .orderBy(desc(contacts.createdAt), desc(contacts.id))
    .limit(filter.limit + 1)
    .offset(filter.offset)
}

/** The ids of the newest `size + 1` contacts: the extra one only says whether the sample was capped. */
export async function newestContactIds(db: Db, accountId: string, size: number): Promise<string[]> {
  const rows = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(eq(contacts.accountId, accountId))
    .orderBy(desc(contacts.createdAt), desc(contacts.id))
    .limit(size + 1)
  return rows.map((r) => r.id)
}

export async function contactsLimitOf(db: Db, plan: string): Promise<number> {
  const [row] = await db.select({ limit: plans.contactsLimit }).from(plans).where(eq(plans.name, plan))
  return row?.limit ?? 0
}

/**
 * Counts `n` new contacts against the plan limit in one statement. The counter row is locked until the caller's
 * transaction ends, so concurrent creates of one account take turns and can never overshoot the limit.
 */
export async function reserveContacts(db: Db, accountId: string, n: number, limit: number): Promise<boolean> {
  const result = await db.execute(sql`
    INSERT INTO ${contactCounts} (account_id, count)
    SELECT ${accountId}::uuid, ${n}::int WHERE ${n}::int <= ${limit}::int
    ON CONFLICT (account_id) DO UPDATE SET count = ${contactCounts}.count + EXCLUDED.count
      WHERE ${contactCounts}.count + EXCLUDED.count <= ${limit}::int
    RETURNING count`)
  return rowsOf(result).length === 1
}

/** How many more contacts the account may create now; locks the counter row like reserveContacts. */
export async function remainingContacts(db: Db, accountId: string, limit: number): Promise<number> {
  await db.insert(contactCounts).values({ accountId, count: 0 }).onConflictDoNothing()
  const [row] = await db
    .select({ count: contactCounts.count })
    .from(contactCounts)
    .where(eq(contactCounts.accountId, accountId))
    .for('update')
  return Math.max(0, limit - (row?.count ?? 0))
}

/** How many more contacts the account may create, read without a lock (a batch beside another checks its guess). */
export async function contactsRoom(db: Db, accountId: string, limit: number): Promise<number> {
  const [row] = await db
    .select({ count: contactCounts.count })
    .from(contactCounts)
    .where(eq(contactCounts.accountId, accountId))
  return Math.max(0, limit - (row?.count ?? 0))
}

export async function releaseContacts(db: Db, accountId: string, n: number): Promise<void> {
  await db
    .update(contactCounts)
    .set({ count: sql`greatest(${contactCounts.count} - ${n}::int, 0)` })
    .where(eq(contactCounts.accountId, accountId))
}

export async function insertConsentRecords(db: Db, records: ConsentRecordInput[]): Promise<void> {
  if (records.length === 0) return
  await db.insert(consentRecords).values(records.map((r) => ({ ...r, id: timeOrderedId() })))
}

export async function consentRecordsOf(db: Db, accountId: string, contactId: string) {
  return db
    .select()
    .from(consentRecords)
    .where(ofContact(consentRecords, accountId, contactId))
    .orderBy(consentRecords.recordedAt)
}

/** GDPR: the records stay (the business must show what happened) without the contact, address or evidence. */
export async function anonymizeConsentRecords(db: Db, accountId: string, contactId: string): Promise<number> {
  const change = { contactId: null, address: null, evidence: { anonymized: true } }
  return updateContactRows(db, consentRecords, accountId, contactId, change)
}

export async function setOptin(
  db: Db,
  accountId: string,
  contactId: string,
  channel: 'chat' | 'email',
  state: OptinState,
): Promise<void> {
  await db
    .update(contacts)
    .set(channel === 'chat' ? { optinChat: state } : { optinEmail: state })
    .where(and(eq(contacts.accountId, accountId), eq(contacts.id, contactId)))
}

/** Both drivers answer raw SQL with `{rows}`. */
export function rowsOf<T = Record<string, unknown>>(result: unknown): T[] {
  return (result as { rows: T[] }).rows
}

// Bulk import statements pass their rows as one JSON parameter: building thousands of bound parameters through
// the query builder cost more than the database work (measured: 5,300 rows/s before, see the commit).

const jsonArray = (values: unknown[]) => sql`${JSON.stringify(values)}::jsonb`

/**
 * Bulk import: the contacts holding any of these emails or phones, locked for the caller's transaction. One index
 * probe per address (a join against the list), whatever the planner's statistics say about the table's size.
 */
export async function findByAddresses(
  db: Db,
  accountId: string,
  emails: string[],
  phones: string[],
): Promise<ContactRow[]> {
  const found = new Map<string, ContactRow>()
  const lookups: Array<[typeof contacts.email | typeof contacts.phone, string[]]> = [
    [contacts.email, emails],
    [contacts.phone, phones],
  ]
  for (const [column, values] of lookups) {
    if (values.length === 0) continue
    const rows = await db
      .select({ contact: contacts })
      .from(contacts)
      .innerJoin(
        sql`jsonb_array_elements_text(${jsonArray(values)}) AS wanted(address)`,
        sql`${column} = wanted.address`,
      )
      // `<> ''` lets the planner use the partial unique index
      .where(and(eq(contacts.accountId, accountId), ne(column, '')))
      .for('update', { of: contacts })
    for (const { contact } of rows) found.set(contact.id, contact)
  }
  return [...found.values()]
}

/** A contact's id, name, addresses and opt-ins under their column names, for the JSON of a bulk statement. */
const addressColumns = (r: Pick<ContactRow, 'id' | 'name' | 'email' | 'phone' | 'optinChat' | 'optinEmail'>) => ({
  id: r.id,
  name: r.name,
  email: r.email,
  phone: r.phone,
  optin_chat: r.optinChat,
  optin_email: r.optinEmail,
})

/** Bulk import: one multi-row INSERT; returns the ids inserted (a concurrent writer's address is skipped). */
export async function insertContacts(db: Db, rows: Required<NewContactRow>[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set()
  const values = rows.map((r) => ({
    account_id: r.accountId,
    ...addressColumns(r),
    language: r.language,
    source: r.source,
    acquisition: r.acquisition,
    created_at: r.createdAt.toISOString(),
  }))
  const result = await db.execute(sql`
    INSERT INTO ${contacts} (account_id, id, name, email, phone, optin_chat, optin_email, language, source,
      acquisition, created_at)
    SELECT * FROM jsonb_to_recordset(${jsonArray(values)}) AS r(account_id uuid, id uuid, name text, email text,
      phone text, optin_chat text, optin_email text, language text, source text, acquisition text,
      created_at timestamptz)
    ON CONFLICT DO NOTHING
    RETURNING id`)
  return new Set(rowsOf<{ id: string }>(result).map((r) => r.id))
}

/**
 * The foreign keys out of the tables insertImportedContacts writes, each of which that statement satisfies by
 * construction: the account is locked once per batch (lockAccountForImport), and the tags and events reference
 * contacts inserted by the same statement.
 */
const IMPORT_FOREIGN_KEYS = [
  'contact_tags_account_id_contact_id_contacts_account_id_id_fk',
  'contacts_account_id_accounts_id_fk',
  'events_account_id_accounts_id_fk',
]

/**
 * Whether insertImportedContacts may run without per-row foreign key triggers: the role may set
 * session_replication_role, every trigger of the three tables' own fires in that role too (ENABLE ALWAYS, as the
 * contact statistics' do since migration 0066), and their foreign keys are exactly those the statement satisfies by
 * construction (a new trigger that `replica` would skip, or a new key, makes every batch checked row by row again).
 */
export async function importMayLoadUnchecked(db: Db): Promise<boolean> {
  const result = await db.execute(sql`
    SELECT has_parameter_privilege('session_replication_role', 'SET') AS may,
      (SELECT count(*)::int FROM pg_trigger
        WHERE tgrelid IN ('contacts'::regclass, 'contact_tags'::regclass, 'events'::regclass) AND NOT tgisinternal
          AND tgenabled <> 'A') AS triggers,
      (SELECT coalesce(jsonb_agg(conname::text ORDER BY conname::text), '[]') FROM pg_constraint
        WHERE contype = 'f' AND conrelid IN ('contacts'::regclass, 'contact_tags'::regclass, 'events'::regclass))
        AS foreign_keys`)
  const [row] = rowsOf<{ may: boolean; triggers: number; foreign_keys: string[] | string }>(result)
  const keys = typeof row.foreign_keys === 'string' ? JSON.parse(row.foreign_keys) : row.foreign_keys
  return row.may && row.triggers === 0 && JSON.stringify(keys) === JSON.stringify(IMPORT_FOREIGN_KEYS)
}

/** The one check the foreign keys to accounts would make per row: the account exists and stays until the commit. */
async function lockAccountForImport(db: Db, accountId: string): Promise<void> {
  const rows = await db.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId)).for('key share')
  if (rows.length === 0) throw new Error(`account ${accountId} no longer exists`)
}

export interface ImportedContact {
  id: string
  /** the id of its contact.created event */
  eventId: string
  name: string
  email: string
  phone: string
  /** the tags to add, in display order (the contact is new, so all are shown, origin manuell) */
  tags: string[]
  /** custom field values, checked against their definitions */
  fields: Record<string, CustomFieldValue>
}

/**
 * Bulk import, one statement: inserts the new contacts (an address some contact already holds skips its row), their
 * tags, and a contact.created event per inserted contact built from the inserted row. Returns the ids of the
 * contacts inserted and of their events.
 */
export async function insertImportedContacts(
  db: Db,
  accountId: string,
  fields: { language: string; source: string; createdAt: Date },
  rows: ImportedContact[],
  options: { unchecked: boolean },
): Promise<{ contactIds: Set<string>; eventIds: string[] }> {
  if (rows.length === 0) return { contactIds: new Set(), eventIds: [] }
  if (options.unchecked) {
    // Bulk load: the foreign keys hold by construction (see IMPORT_FOREIGN_KEYS), so the per-row trigger checks,
    // a fifth of the import's time on PGlite, are replaced by the one lock on the account.
    await lockAccountForImport(db, accountId)
    await db.execute(sql`SET LOCAL session_replication_role = replica`)
  }
  const createdAt = fields.createdAt.toISOString()
  // The event's data is the contact as the API shows it: to_jsonb of a row of those columns (keyed by column name)
  // gives the same value as jsonb_build_object of the eleven pairs for about 30 % less CPU on PostgreSQL 15
  // (50,000 rows: 497 against 717 ms, medians of five; see docs/performance.md).
  const eventRows = sql`SELECT input.event_id AS id, created.id AS contact_id, to_jsonb(data) AS data
    FROM created JOIN input USING (id)
    CROSS JOIN LATERAL (SELECT created.id, created.name, created.email, created.phone, created.optin_chat,
      created.optin_email, input.tags, created.language, created.source, created.fields,
      ${createdAt}::text AS created_at) AS data`
  const input = rows.map(({ eventId, ...row }) => ({ ...row, event_id: eventId }))
  const result = await db.execute(sql`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${jsonArray(input)})
        AS r(id uuid, event_id uuid, name text, email text, phone text, tags text[], fields jsonb)
    ), created AS (
      INSERT INTO ${contacts} (account_id, id, name, email, phone, optin_chat, optin_email, language, source,
        acquisition, fields, created_at)
      SELECT ${accountId}::uuid, id, name, email, phone, 'none', 'none', ${fields.language}, ${fields.source},
        'marketing', fields, ${createdAt}::timestamptz
      FROM input
      ON CONFLICT DO NOTHING
      RETURNING id, name, email, phone, optin_chat, optin_email, language, source, fields
    ), created_tags AS (
      INSERT INTO ${contactTags} (account_id, contact_id, name, origin)
      SELECT ${accountId}::uuid, created.id, tag.name, 'manuell'
      FROM created JOIN input USING (id) CROSS JOIN unnest(input.tags) AS tag(name)
    ), created_events AS (
      ${insertEventsSql({ accountId, name: 'contact.created', createdAt: fields.createdAt, rows: eventRows })}
    )
    SELECT (SELECT coalesce(jsonb_agg(id), '[]') FROM created) AS contact_ids,
      (SELECT coalesce(jsonb_agg(id), '[]') FROM created_events) AS event_ids`)
  if (options.unchecked) await db.execute(sql`SET LOCAL session_replication_role = origin`)
  const [row] = rowsOf<{ contact_ids: string[] | string; event_ids: string[] | string }>(result)
  const parsed = (value: string[] | string): string[] => (typeof value === 'string' ? JSON.parse(value) : value)
  return { contactIds: new Set(parsed(row.contact_ids)), eventIds: parsed(row.event_ids) }
}

/** Bulk import: tags of many contacts in one statement. */
export async function insertTagRows(
  db: Db,
  rows: Array<{ accountId: string; contactId: string; name: string; origin: TagOrigin }>,
): Promise<void> {
  if (rows.length === 0) return
  const values = rows.map((r) => ({ account_id: r.accountId, contact_id: r.contactId, name: r.name, origin: r.origin }))
  await db.execute(sql`
    INSERT INTO ${contactTags} (account_id, contact_id, name, origin)
    SELECT * FROM jsonb_to_recordset(${jsonArray(values)}) AS r(account_id uuid, contact_id uuid, name text, origin text)
    ON CONFLICT DO NOTHING`)
}

/**
 * Bulk import: one UPDATE for many contacts, each with its new name, addresses and opt-ins; `fields` are merged into
 * the contact's custom field values (`fields || new`).
 */
export async function updateContacts(
  db: Db,
  accountId: string,
  rows: Array<Pick<ContactRow, 'id' | 'name' | 'email' | 'phone' | 'optinChat' | 'optinEmail' | 'fields'>>,
): Promise<void> {
  if (rows.length === 0) return
  const values = rows.map((r) => ({ ...addressColumns(r), fields: r.fields }))
  await db.execute(sql`
    UPDATE ${contacts} SET name = v.name, email = v.email, phone = v.phone,
      optin_chat = v.optin_chat, optin_email = v.optin_email, fields = ${contacts.fields} || v.fields
    FROM jsonb_to_recordset(${jsonArray(values)})
      AS v(id uuid, name text, email text, phone text, optin_chat text, optin_email text, fields jsonb)
    WHERE ${contacts.accountId} = ${accountId}::uuid AND ${contacts.id} = v.id`)
}

/** The account's contacts as the plan counts them (the counter every create and import reserves in). */
export async function contactCount(db: Db, accountId: string): Promise<number> {
  const [row] = await db
    .select({ count: contactCounts.count })
    .from(contactCounts)
    .where(eq(contactCounts.accountId, accountId))
  return row?.count ?? 0
}

/** Name, phone and e-mail of the given contacts of one account (ids not found are left out). */
export async function contactLabels(db: Db, accountId: string, ids: string[]) {
  if (ids.length === 0) return []
  return db
    .select({ id: contacts.id, name: contacts.name, phone: contacts.phone, email: contacts.email })
    .from(contacts)
    .where(and(eq(contacts.accountId, accountId), inArray(contacts.id, ids)))
}
