import { and, asc, count, countDistinct, eq, exists, inArray, ne, type SQL, sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { emitSignals } from '../../platform/events/signals.ts'
import { badRequest, notFound } from '../../platform/http/errors.ts'
import {
  assertFieldConditions,
  type FieldCondition,
  fieldConditionContext,
  fieldConditionsSql,
} from './contacts.field-conditions.ts'
import { CSV_ATTRIBUTES, valueText } from './contacts.fields.rules.ts'
import { type FieldDefinition, fieldDefinitionsOf } from './contacts.fields-read.ts'
import { type ContactsTenant, contactView } from './contacts.ports.ts'
import * as repo from './contacts.repository.ts'
import {
  displayTags,
  isSystemTagName,
  MAX_TAG_LENGTH,
  MAX_TAGS_PER_CONTACT,
  normalizeEmail,
  normalizePhone,
  type OptinState,
} from './contacts.rules.ts'
import { type CustomFieldValue, contacts, contactTags } from './contacts.tables.ts'

/**
 * Account-wide contact and tag operations the web app offers beyond the REST API: looking a contact up by its exact
 * address, a tag's count, renaming and deleting a tag on every contact, and tagging, untagging, deleting and exporting
 * the contacts that match a filter. Every statement names the account.
 */

/** The contacts an account-wide operation is about; no criterion: every contact. */
export interface ContactFilter {
  tag?: string
  optin_chat?: OptinState
  optin_email?: OptinState
  source?: string
  /** conditions on custom fields, all of which must hold */
  fields?: FieldCondition[]
}

/** Contacts changed or deleted by one call at most (the answer says when more match). */
export const BULK_MAX = 10_000
export const BULK_DELETE_MAX = 1000
export const EXPORT_MAX = 50_000

/**
 * The filter as SQL on `contacts`; its field conditions are checked against the account's fields (400
 * field_condition_invalid naming the field and the rule) and dated by `now` in the account's timezone.
 */
async function filterSql(db: Db, accountId: string, filter: ContactFilter, now: Date): Promise<SQL> {
  const conditions: SQL[] = [eq(contacts.accountId, accountId)]
  if (filter.fields?.length) {
    const context = await fieldConditionContext(db, accountId, now)
    assertFieldConditions(filter.fields, context.definitions, 'filter.fields')
    conditions.push(fieldConditionsSql(filter.fields, context, 'contacts'))
  }
  if (filter.tag !== undefined) {
    conditions.push(
      exists(
        sql`(SELECT 1 FROM ${contactTags} t WHERE t.account_id = ${contacts.accountId} AND t.contact_id = ${contacts.id} AND t.name = ${filter.tag})`,
      ),
    )
  }
  if (filter.optin_chat) conditions.push(eq(contacts.optinChat, filter.optin_chat))
  if (filter.optin_email) conditions.push(eq(contacts.optinEmail, filter.optin_email))
  if (filter.source !== undefined) conditions.push(eq(contacts.source, filter.source))
  return and(...conditions) as SQL
}

/** How many contacts match, for a preview. */
export async function countMatching(db: Db, accountId: string, filter: ContactFilter, now: Date): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(contacts)
    .where(await filterSql(db, accountId, filter, now))
  return Number(row?.n ?? 0)
}

async function matchingIds(
  db: Db,
  accountId: string,
  filter: ContactFilter,
  limit: number,
  now: Date,
): Promise<string[]> {
  const rows = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(await filterSql(db, accountId, filter, now))
    .orderBy(asc(contacts.createdAt), asc(contacts.id))
    .limit(limit)
  return rows.map((r) => r.id)
}

function checkTagName(raw: string, what = 'tag'): string {
  const name = raw.trim()
  if (name === '' || name.length > MAX_TAG_LENGTH) {
    throw badRequest(`${what} must be 1 to ${MAX_TAG_LENGTH} characters`, 'tag_invalid')
  }
  if (isSystemTagName(name)) {
    throw badRequest(`The system tag ${name} cannot be changed through the API`, 'system_tag', { tags: [name] })
  }
  return name
}

/** The contact holding exactly this e-mail address or phone number (normalized as on create); 404 when none. */
export async function lookupContact(db: Db, accountId: string, address: { email?: string; phone?: string }) {
  const email = address.email ? normalizeEmail(address.email) : ''
  const phone = address.phone ? normalizePhone(address.phone) : ''
  if (phone === null) throw badRequest('phone must be a valid phone number in international format')
  if (email === '' && phone === '') throw badRequest('Give an email or a phone', 'email_or_phone_required')
  const conditions: SQL[] = [eq(contacts.accountId, accountId)]
  if (email !== '') conditions.push(and(ne(contacts.email, ''), eq(contacts.email, email)) as SQL)
  if (phone !== '') conditions.push(and(ne(contacts.phone, ''), eq(contacts.phone, phone)) as SQL)
  const [row] = await db
    .select()
    .from(contacts)
    .where(and(...conditions))
    .limit(1)
  if (!row) throw notFound('contact')
  const tags = await repo.tagsOf(db, accountId, [row.id])
  return contactView(row, tags)
}

/** One tag: how many contacts carry it (all of them, not a sample) and under which origins. */
export async function getTag(db: Db, accountId: string, raw: string) {
  const name = raw.trim()
  const rows = await db
    .select({ origin: contactTags.origin, contacts: countDistinct(contactTags.contactId) })
    .from(contactTags)
    .where(and(eq(contactTags.accountId, accountId), eq(contactTags.name, name)))
    .groupBy(contactTags.origin)
  if (rows.length === 0) throw notFound('tag')
  const [total] = await db
    .select({ n: countDistinct(contactTags.contactId) })
    .from(contactTags)
    .where(and(eq(contactTags.accountId, accountId), eq(contactTags.name, name)))
  const origin = displayTags(rows.map((r) => ({ name, origin: r.origin })))[0].origin
  return {
    name,
    origin,
    system: isSystemTagName(name) || origin === 'system',
    contacts: Number(total.n),
    by_origin: Object.fromEntries(rows.map((r) => [r.origin, Number(r.contacts)])),
  }
}

/** How many contacts carry a tag under an origin the API may change (manuell, ki). */
export async function contactsWithTag(db: Db, accountId: string, name: string): Promise<number> {
  const [row] = await db
    .select({ n: countDistinct(contactTags.contactId) })
    .from(contactTags)
    .where(and(eq(contactTags.accountId, accountId), eq(contactTags.name, name), ne(contactTags.origin, 'system')))
  return Number(row?.n ?? 0)
}

/**
 * Renames a tag on every contact, keeping each row's origin; a contact that already has the new name keeps one (the
 * two merge). System tags are neither renamed nor made.
 */
export async function renameTag(db: Db, accountId: string, rawFrom: string, rawTo: string) {
  const from = checkTagName(rawFrom)
  const to = checkTagName(rawTo, 'new_name')
  if (from === to) throw badRequest('The new name is the same as the old one')
  return db.transaction(async (tx) => {
    const where = and(
      eq(contactTags.accountId, accountId),
      eq(contactTags.name, from),
      ne(contactTags.origin, 'system'),
    )
    const affected = await tx.selectDistinct({ id: contactTags.contactId }).from(contactTags).where(where)
    if (affected.length === 0) throw notFound('tag')
    await tx.execute(sql`INSERT INTO ${contactTags} (account_id, contact_id, name, origin, created_at)
      SELECT account_id, contact_id, ${to}, origin, created_at FROM ${contactTags}
      WHERE account_id = ${accountId}::uuid AND name = ${from} AND origin <> 'system'
      ON CONFLICT DO NOTHING`)
    await tx.delete(contactTags).where(where)
    return { from, to, contacts: affected.length }
  })
}

/** Removes a tag from every contact (system tags refused); answers how many contacts lost it. */
export async function deleteTag(db: Db, accountId: string, raw: string) {
  const name = checkTagName(raw)
  return db.transaction(async (tx) => {
    const removed = await tx
      .delete(contactTags)
      .where(and(eq(contactTags.accountId, accountId), eq(contactTags.name, name), ne(contactTags.origin, 'system')))
      .returning({ id: contactTags.contactId })
    if (removed.length === 0) throw notFound('tag')
    return { tag: name, contacts: new Set(removed.map((r) => r.id)).size }
  })
}

/**
 * Adds a tag (origin manuell) to at most BULK_MAX matching contacts, the oldest first; contacts that have it already
 * change nothing, contacts at the limit of 30 tags are skipped. Each addition signals tag.added (automations).
 */
export async function tagMatching(db: Db, clock: Clock, accountId: string, filter: ContactFilter, raw: string) {
  const tag = checkTagName(raw)
  return db.transaction(async (tx) => {
    const ids = await matchingIds(tx, accountId, { ...filter }, BULK_MAX + 1, clock.now())
    const chosen = ids.slice(0, BULK_MAX)
    if (chosen.length === 0) return { tag, matched: 0, tagged: 0, skipped_full: 0, has_more: false }
    const counts = await tx
      .select({ id: contactTags.contactId, shown: countDistinct(contactTags.name) })
      .from(contactTags)
      .where(and(eq(contactTags.accountId, accountId), inArray(contactTags.contactId, chosen)))
      .groupBy(contactTags.contactId)
    const having = await tx
      .selectDistinct({ id: contactTags.contactId })
      .from(contactTags)
      .where(
        and(eq(contactTags.accountId, accountId), inArray(contactTags.contactId, chosen), eq(contactTags.name, tag)),
      )
    const has = new Set(having.map((r) => r.id))
    const full = new Set(counts.filter((c) => Number(c.shown) >= MAX_TAGS_PER_CONTACT).map((c) => c.id))
    const add = chosen.filter((id) => !has.has(id) && !full.has(id))
    await repo.insertTags(
      tx,
      add.map((contactId) => ({ accountId, contactId, name: tag, origin: 'manuell' as const })),
    )
    await emitSignals(
      tx,
      clock,
      add.map((contactId) => ({ accountId, name: 'tag.added', contactId, data: { tag } })),
    )
    const skipped = chosen.filter((id) => !has.has(id) && full.has(id)).length
    return { tag, matched: chosen.length, tagged: add.length, skipped_full: skipped, has_more: ids.length > BULK_MAX }
  })
}

/** Removes a tag (not a system one) from every matching contact that carries it. */
export async function untagMatching(db: Db, accountId: string, filter: ContactFilter, raw: string, now: Date) {
  const tag = checkTagName(raw)
  const matching = await filterSql(db, accountId, filter, now)
  const removed = await db
    .delete(contactTags)
    .where(
      and(
        eq(contactTags.accountId, accountId),
        eq(contactTags.name, tag),
        ne(contactTags.origin, 'system'),
        inArray(contactTags.contactId, db.select({ id: contacts.id }).from(contacts).where(matching)),
      ),
    )
    .returning({ id: contactTags.contactId })
  return { tag, untagged: new Set(removed.map((r) => r.id)).size }
}

/** Whether a filter names at least one criterion (bulk deletion needs one). */
export function hasCriterion(filter: ContactFilter): boolean {
  return Object.entries(filter).some(([key, v]) => v !== undefined && (key !== 'fields' || (v as unknown[]).length > 0))
}

/**
 * Deletes the matching contacts (at most BULK_DELETE_MAX per call, oldest first), each exactly as DELETE
 * /contacts/{id} deletes one: conversations, messages, sends and runs removed, consent records anonymized. A filter
 * without any criterion is refused: deleting every contact is not one call.
 */
export async function deleteMatching(
  db: Db,
  service: {
    delete: (tenant: ContactsTenant, id: string, options: { requestedByContact: boolean }) => Promise<unknown>
  },
  tenant: ContactsTenant,
  filter: ContactFilter,
  now: Date,
) {
  if (!hasCriterion(filter)) throw badRequest('Give at least one filter criterion', 'filter_required')
  const ids = await matchingIds(db, tenant.accountId, filter, BULK_DELETE_MAX + 1, now)
  let deleted = 0
  for (const id of ids.slice(0, BULK_DELETE_MAX)) {
    try {
      await service.delete(tenant, id, { requestedByContact: false })
      deleted++
    } catch (error) {
      // deleted meanwhile by another request: nothing left to do for it
      if ((error as { status?: number }).status !== 404) throw error
    }
  }
  return { deleted, has_more: ids.length > BULK_DELETE_MAX }
}

/** A CSV cell: quoted when needed; text a spreadsheet would run as a formula gets a leading apostrophe. */
function cell(value: string, guard: boolean): string {
  const safe = guard && /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe
}

/** A custom field's value in a cell: numbers, dates and booleans as the import reads them; texts guarded. */
function fieldCell(definition: FieldDefinition, value: CustomFieldValue | undefined): string {
  if (value === undefined) return ''
  if (definition.type === 'text' || definition.type === 'choice') return cell(valueText(value), true)
  return cell(valueText(value), false)
}

/**
 * The matching contacts as CSV (header line first, oldest first from offset; tags separated by `;`; then one column
 * per custom field, named by its key), the columns `import_contacts_csv` reads back.
 */
export async function exportCsv(
  db: Db,
  accountId: string,
  filter: ContactFilter,
  page: { limit: number; offset: number },
  now: Date,
) {
  const rows = await db
    .select()
    .from(contacts)
    .where(await filterSql(db, accountId, filter, now))
    .orderBy(asc(contacts.createdAt), asc(contacts.id))
    .limit(page.limit + 1)
    .offset(page.offset)
  const shown = rows.slice(0, page.limit)
  const tags = await repo.tagsOf(
    db,
    accountId,
    shown.map((r) => r.id),
  )
  const definitions = await fieldDefinitionsOf(db, accountId)
  const lines = [[...CSV_ATTRIBUTES, ...definitions.map((d) => d.key)].join(',')]
  for (const row of shown) {
    const view = contactView(
      row,
      tags.filter((t) => t.contactId === row.id),
    )
    lines.push(
      [
        cell(view.id, false),
        cell(view.name, true),
        cell(view.email, true),
        cell(view.phone, false),
        view.optin_chat,
        view.optin_email,
        cell(view.tags.join(';'), true),
        cell(view.language, false),
        cell(view.source, true),
        view.created_at,
        ...definitions.map((d) => fieldCell(d, row.fields[d.key])),
      ].join(','),
    )
  }
  const hasMore = rows.length > page.limit
  return {
    csv: `${lines.join('\n')}\n`,
    rows: shown.length,
    has_more: hasMore,
    next_offset: hasMore ? page.offset + page.limit : null,
  }
}
