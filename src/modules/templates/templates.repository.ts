import { and, desc, eq, ne, type SQL, sql } from 'drizzle-orm'
import { accountRowFinder, inAccount, newestFirst } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { isUuidKey, perTick } from '../../platform/db/per-tick.ts'
import { rowFromJson } from '../../platform/db/rows.ts'
import { templates } from './templates.tables.ts'

// Every query here filters on account_id; a repository never decides a rule.

export type TemplateRow = typeof templates.$inferSelect
export type NewTemplateRow = typeof templates.$inferInsert

const byTemplate = (accountId: string, id: string) => and(eq(templates.accountId, accountId), eq(templates.id, id))

export async function insertTemplate(tx: Db, row: NewTemplateRow): Promise<TemplateRow> {
  const [created] = await tx.insert(templates).values(row).returning()
  return created
}

export const findTemplate = accountRowFinder(templates)

/** findTemplate for the requests of one turn of the event loop in one statement (POST /messages with a template). */
export const findTemplateBatched = (db: Db, accountId: string, id: string) =>
  isUuidKey(id) ? templatesByIds(db, { accountId, id }) : Promise.resolve(null)

const templatesByIds = perTick(
  async (db, keys: readonly { accountId: string; id: string }[]): Promise<Array<TemplateRow | null>> => {
    const rows = await db
      .select({ at: sql<number>`k.at`, template: templates })
      .from(
        sql`unnest(${sql.param(keys.map((k) => k.accountId))}::uuid[], ${sql.param(keys.map((k) => k.id))}::uuid[])
          WITH ORDINALITY AS k(account_id, id, at)`,
      )
      .innerJoin(templates, and(eq(templates.accountId, sql`k.account_id`), eq(templates.id, sql`k.id`)))
    const found: Array<TemplateRow | null> = new Array(keys.length).fill(null)
    for (const row of rows) found[Number(row.at) - 1] = row.template
    return found
  },
)

/**
 * A template of the account as one jsonb value inside another module's statement (`k` the caller's key relation, its
 * columns SQL of the account id and template id); templateFromJson turns it back into the row.
 */
export const templateAsJsonSql = (accountId: SQL, id: SQL) =>
  sql`(SELECT to_jsonb(t) FROM ${templates} t WHERE t.account_id = ${accountId} AND t.id = ${id})`

export const templateFromJson = (value: unknown): TemplateRow | null => rowFromJson(templates, value)

export interface ListFilter {
  channel?: 'chat' | 'email'
  state?: TemplateRow['state']
  /** only templates POST /messages can send (approved chat templates, neither opt-in confirmation nor system) */
  sendable?: boolean
}

function filterClauses(accountId: string, filter: ListFilter): SQL[] {
  const clauses: SQL[] = [eq(templates.accountId, accountId)]
  if (filter.channel) clauses.push(eq(templates.channel, filter.channel))
  if (filter.state) clauses.push(eq(templates.state, filter.state))
  if (filter.sendable === true) {
    clauses.push(
      eq(templates.providerStatus, 'approved'),
      eq(templates.channel, 'chat'),
      ne(templates.purpose, 'optin_confirm'),
      eq(templates.system, false),
    )
  }
  return clauses
}

/** Newest first; fetches limit + 1 so the caller can tell whether more exist. */
export function listTemplates(
  db: Db,
  accountId: string,
  filter: ListFilter,
  limit: number,
  offset: number,
): Promise<TemplateRow[]> {
  const query = db
    .select()
    .from(templates)
    .where(and(...filterClauses(accountId, filter)))
    .$dynamic()
  return newestFirst(query, { at: templates.createdAt, id: templates.id }, { limit, offset })
}

/** The account's chat templates of this provider name in this language (the provider knows them by that pair). */
const chatTemplatesNamed = (accountId: string, name: { providerName: string; language: string }) =>
  inAccount(
    templates,
    accountId,
    eq(templates.providerName, name.providerName),
    eq(templates.language, name.language),
    eq(templates.channel, 'chat'),
  )

/** Whether another chat template of the account has this provider name in this language. */
export async function providerNameTaken(
  db: Db,
  accountId: string,
  template: { id: string; providerName: string; language: string },
): Promise<boolean> {
  const rows = await db
    .select({ id: templates.id })
    .from(templates)
    .where(and(chatTemplatesNamed(accountId, template), ne(templates.id, template.id)))
    .limit(1)
  return rows.length > 0
}

export async function updateTemplate(
  tx: Db,
  accountId: string,
  id: string,
  change: Partial<NewTemplateRow>,
): Promise<TemplateRow | null> {
  const [row] = await tx.update(templates).set(change).where(byTemplate(accountId, id)).returning()
  return row ?? null
}

export async function deleteTemplate(tx: Db, accountId: string, id: string): Promise<boolean> {
  const rows = await tx.delete(templates).where(byTemplate(accountId, id)).returning({ id: templates.id })
  return rows.length > 0
}

/** The chat template the provider means: by its provider id when known, else by (provider name, language). */
export async function findByProviderRef(
  db: Db,
  accountId: string,
  ref: { providerTemplateId: string | null; providerName: string; language: string },
): Promise<TemplateRow | null> {
  if (ref.providerTemplateId) {
    const [row] = await db
      .select()
      .from(templates)
      .where(and(eq(templates.accountId, accountId), eq(templates.providerTemplateId, ref.providerTemplateId)))
      .limit(1)
    if (row) return row
  }
  if (!ref.providerName || !ref.language) return null
  const [row] = await db
    .select()
    .from(templates)
    .where(chatTemplatesNamed(accountId, ref))
    .orderBy(desc(templates.updatedAt))
    .limit(1)
  return row ?? null
}

/** The account's opt-in confirmation chat templates the provider approved, newest first. */
export function approvedOptinConfirmTemplates(db: Db, accountId: string): Promise<TemplateRow[]> {
  return db
    .select()
    .from(templates)
    .where(
      inAccount(
        templates,
        accountId,
        eq(templates.channel, 'chat'),
        eq(templates.purpose, 'optin_confirm'),
        eq(templates.providerStatus, 'approved'),
      ),
    )
    .orderBy(desc(templates.createdAt), desc(templates.id))
}
