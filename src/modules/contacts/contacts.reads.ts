import DataLoader from 'dataloader'
import { and, desc, eq, gt, sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { hotStatement } from '../../platform/db/hot-statement.ts'
import { isUuidKey, perTick } from '../../platform/db/per-tick.ts'
import type { ContactTag, TagOrigin } from './contacts.rules.ts'
import { contacts, contactTags } from './contacts.tables.ts'

// The hot reads of the API, each filtered on account_id like the rest of the repository (which re-exports them).

type ContactRow = typeof contacts.$inferSelect

/**
 * The hot reads of the API (GET /contacts/{id}, GET /contacts without a search), built once per database handle as
 * prepared statements with placeholders: a request binds its values and skips building the query (on PostgreSQL,
 * also the parse and plan: the statement is prepared once per connection). Each row comes with its tags.
 */
const preparedReads = new WeakMap<Db, ReturnType<typeof prepareReads>>()

function withTagsColumns() {
  return {
    contact: contacts,
    // `origin:name` per tag as a text array: building a jsonb object per tag cost PostgreSQL about three times the
    // page itself (0.45 against 0.18 ms a page of 51, pgbench); the origins never hold a colon. The outer columns
    // are qualified by hand: Drizzle writes a single table's columns bare, and a bare "account_id" here meant
    // t.account_id, so every row's tags were found by scanning all of contact_tags (51 scans a page).
    tags: sql<string[]>`ARRAY(SELECT t.origin || ':' || t.name FROM ${contactTags} t
      WHERE t.account_id = ${contacts}.${sql.identifier(contacts.accountId.name)}
        AND t.contact_id = ${contacts}.${sql.identifier(contacts.id.name)})`,
  }
}

function prepareReads(db: Db) {
  const accountId = sql.placeholder('accountId')
  const limit = sql.placeholder('limit')
  const offset = sql.placeholder('offset')
  const order = [desc(contacts.createdAt), desc(contacts.id)]
  return {
    page: db
      .select(withTagsColumns())
      .from(contacts)
      .where(eq(contacts.accountId, accountId))
      .orderBy(...order)
      .limit(limit)
      .offset(offset)
      .prepare('contacts_page'),
    pageAfter: db
      .select(withTagsColumns())
      .from(contacts)
      .where(and(eq(contacts.accountId, accountId), gt(contacts.createdAt, sql.placeholder('createdAfter'))))
      .orderBy(...order)
      .limit(limit)
      .offset(offset)
      .prepare('contacts_page_after'),
  }
}

/**
 * A page of contacts as the API shows them (contactView), written as JSON text by the database: the server passes
 * the text on instead of turning 51 rows into objects and back into JSON, which cost it about four fifths of the
 * route's CPU (bench/api.ts). Must show exactly what contactView shows (contacts.test.ts compares the two): tags each
 * name once in code point order, created_at in UTC with milliseconds as Date.toISOString writes it.
 */
function pageJson(db: Db, after: boolean) {
  const accountId = sql.placeholder('accountId')
  const limit = sql.placeholder('limit')
  const offset = sql.placeholder('offset')
  const r = sql.identifier('r')
  // one row past the page tells whether more follow (a second look for it cost PostgreSQL a fifth of the statement)
  const rows = sql`SELECT * FROM ${contacts} WHERE ${contacts.accountId} = ${accountId}
    ${after ? sql`AND ${contacts.createdAt} > ${sql.placeholder('createdAfter')}` : sql``}
    ORDER BY ${contacts.createdAt} DESC, ${contacts.id} DESC LIMIT ${limit}::int + 1 OFFSET ${offset}::int`
  // json_agg of whole rows (their column names are the keys) costs PostgreSQL about a fifth less than
  // json_build_object per contact
  return db
    .select({
      page: sql<string | null>`json_agg(v ORDER BY ${r}.n) FILTER (WHERE ${r}.n <= ${limit}::int)::text`,
      more: sql<number>`(count(*) > ${limit}::int)::int`,
    })
    .from(
      sql`(SELECT p.*, row_number() OVER (ORDER BY p.created_at DESC, p.id DESC) AS n FROM (${rows}) p) ${r}
        CROSS JOIN LATERAL (SELECT ${viewColumns(r)}) v`,
    )
}

const pageJsonStatement = hotStatement('contacts_page_json', (db) => pageJson(db, false))
const pageJsonAfterStatement = hotStatement('contacts_page_json_after', (db) => pageJson(db, true))

/**
 * The columns of contactView, named as its fields, of the contacts row `c`: tags each name once in code point order,
 * created_at in UTC with milliseconds as Date.toISOString writes it.
 */
function viewColumns(c: ReturnType<typeof sql.identifier>) {
  const column = (name: string) => sql`${c}.${sql.identifier(name)}`
  return sql`${column('id')}, ${column('name')}, ${column('email')}, ${column('phone')}, ${column('optin_chat')},
    ${column('optin_email')}, ARRAY(SELECT DISTINCT t.name COLLATE "C" FROM ${contactTags} t
      WHERE t.account_id = ${column('account_id')} AND t.contact_id = ${column('id')} ORDER BY 1) AS tags,
    ${column('language')}, ${column('source')}, ${column('acquisition')}, ${column('fields')},
    to_char(${column('created_at')} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at`
}

/**
 * One contact as the API shows it (contactView), written as JSON text by the database, as pageOfContactsJson writes
 * a page: for GET /contacts/{id}, passed on as it is. The lookups of one turn of the event loop (the requests that
 * arrived together) go to the database as one statement: under load each statement and its round trip, not the
 * row, cost the server and the database most of the route's CPU.
 */
export async function contactJson(db: Db, accountId: string, id: string): Promise<string | undefined> {
  let loader = contactLoaders.get(db)
  if (!loader) {
    loader = contactLoader(db)
    contactLoaders.set(db, loader)
  }
  return loader.load({ accountId, id })
}

type ContactKey = { accountId: string; id: string }
const contactLoaders = new WeakMap<Db, DataLoader<ContactKey, string | undefined>>()

function contactLoader(db: Db) {
  return new DataLoader<ContactKey, string | undefined>(
    async (keys) => {
      const rows = await contactsJsonStatement(db, {
        accountIds: keys.map((key) => key.accountId),
        ids: keys.map((key) => key.id),
      })
      const found: Array<string | undefined> = new Array(keys.length).fill(undefined)
      for (const [at, json] of rows) found[Number(at) - 1] = json as string
      return found
    },
    // every lookup reads the database (no memo between requests); a batch is what arrived before the next turn
    { cache: false, maxBatchSize: 100, batchScheduleFn: (run) => setImmediate(run) },
  )
}

/** Each (account, id) pair's contact with its place in the lists, only where the account holds it. */
const contactsJsonStatement = hotStatement('contacts_by_ids_json', (db) => {
  const c = sql.identifier('c')
  return db.select({ at: sql<number>`k.at`, contact: sql<string>`row_to_json(x)::text` }).from(
    sql`unnest(${sql.placeholder('accountIds')}::uuid[], ${sql.placeholder('ids')}::uuid[]) WITH ORDINALITY
          AS k(account_id, id, at)
        CROSS JOIN LATERAL (SELECT ${viewColumns(c)} FROM ${contacts} ${c}
          WHERE ${c}.account_id = k.account_id AND ${c}.id = k.id) x`,
  )
})

/** pageOfContacts's page as the JSON text of its contacts (an array), and whether more follow. */
export async function pageOfContactsJson(
  db: Db,
  accountId: string,
  filter: { createdAfter?: Date; limit: number; offset: number },
): Promise<{ json: string; hasMore: boolean }> {
  const page = { accountId, limit: filter.limit, offset: filter.offset }
  const [row] = filter.createdAfter
    ? await pageJsonAfterStatement(db, { ...page, createdAfter: filter.createdAfter.toISOString() })
    : await pageJsonStatement(db, page)
  return { json: (row?.[0] as string | null) ?? '[]', hasMore: Number(row?.[1] ?? 0) > 0 }
}

function reads(db: Db) {
  let prepared = preparedReads.get(db)
  if (!prepared) {
    prepared = prepareReads(db)
    preparedReads.set(db, prepared)
  }
  return prepared
}

export type ContactWithTags = { contact: ContactRow; tags: ContactTag[] }

const tagsOfRow = (row: { contact: ContactRow; tags: string[] }): ContactWithTags => ({
  contact: row.contact,
  tags: row.tags.map((tag) => {
    const colon = tag.indexOf(':')
    return { origin: tag.slice(0, colon) as TagOrigin, name: tag.slice(colon + 1) }
  }),
})

/**
 * contactWithTags for the requests of one turn of the event loop in one statement (perTick): POST /messages reads its
 * contact first, and 32 requests at once were 32 statements.
 */
export const contactWithTagsBatched = (db: Db, accountId: string, id: string) =>
  isUuidKey(id) ? contactsWithTags(db, { accountId, id }) : Promise.resolve(undefined)

const contactsWithTags = perTick(
  async (db, keys: readonly { accountId: string; id: string }[]): Promise<Array<ContactWithTags | undefined>> => {
    const rows = await db
      .select({ at: sql<number>`k.at`, ...withTagsColumns() })
      .from(
        sql`unnest(${sql.param(keys.map((k) => k.accountId))}::uuid[], ${sql.param(keys.map((k) => k.id))}::uuid[])
          WITH ORDINALITY AS k(account_id, id, at)`,
      )
      .innerJoin(contacts, and(eq(contacts.accountId, sql`k.account_id`), eq(contacts.id, sql`k.id`)))
    const found: Array<ContactWithTags | undefined> = new Array(keys.length).fill(undefined)
    for (const row of rows) found[Number(row.at) - 1] = tagsOfRow(row)
    return found
  },
)

/** listContacts without a search, with each contact's tags, in one prepared statement. */
export async function pageOfContacts(
  db: Db,
  accountId: string,
  filter: { createdAfter?: Date; limit: number; offset: number },
): Promise<ContactWithTags[]> {
  const page = { accountId, limit: filter.limit + 1, offset: filter.offset }
  const rows = filter.createdAfter
    ? await reads(db).pageAfter.execute({ ...page, createdAfter: filter.createdAfter.toISOString() })
    : await reads(db).page.execute(page)
  return rows.map(tagsOfRow)
}
