import { and, eq, inArray, type SQL, sql } from 'drizzle-orm'
import { accounts } from '../../platform/auth/auth.tables.ts'
import { accountRowFinder, deleteContactRows, ofContact } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { perTick } from '../../platform/db/per-tick.ts'
import { recordsetSql, recordsJson, rows } from '../../platform/db/rows.ts'
import { type FieldDefinition, fieldDefinitionsFromJson, fieldDefinitionsJsonSql } from '../contacts/index.ts'
import { type TemplateRow, templateAsJsonSql, templateFromJson } from '../templates/index.ts'
import type { Protection } from './messaging.protection.ts'
import { unitLeftSql } from './messaging.quota.ts'
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
  return {
    link_clicks: await deleteContactRows(db, linkClicks, accountId, contactId),
    tracked_links: await deleteContactRows(db, trackedLinks, accountId, contactId),
  }
}

export type TemplateSendRow = typeof templateSends.$inferSelect
export type TemplateSendPatch = Partial<Omit<TemplateSendRow, 'accountId' | 'id'>>
export type NewTemplateSendRow = typeof templateSends.$inferInsert

const bySend = (accountId: string, id: string) => and(eq(templateSends.accountId, accountId), eq(templateSends.id, id))

export async function insertSends(tx: Db, rows: Array<typeof templateSends.$inferInsert>): Promise<void> {
  if (rows.length > 0) await tx.insert(templateSends).values(rows)
}

/**
 * insertSends of `queued` API sends as SQL, for a statement that also enqueues their jobs (a data-modifying CTE): the
 * rows in one JSON parameter, no limit of bound parameters on a large group.
 */
export function insertQueuedSendsSql(rows: NewTemplateSendRow[]): SQL {
  const json = recordsJson(
    rows,
    ['accountId', 'id', 'contactId', 'templateId', 'variables', 'createdAt', 'updatedAt'],
    { variables: {} },
  )
  return sql`INSERT INTO template_sends (account_id, id, contact_id, template_id, variables, status, created_at, updated_at)
    SELECT r.account_id, r.id, r.contact_id, r.template_id, r.variables, 'queued', r.created_at, r.updated_at
    FROM jsonb_to_recordset(${json}::jsonb)
      AS r(account_id uuid, id uuid, contact_id uuid, template_id uuid, variables jsonb, created_at timestamptz,
        updated_at timestamptz)
    RETURNING id`
}

export const findSend = accountRowFinder(templateSends)

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
    .where(ofContact(templateSends, accountId, contactId))
    .returning({ status: templateSends.status })
  return { send_jobs: removed.filter((r) => r.status === 'queued').length }
}

const rowsOf = <T>(result: unknown) => (result as { rows: T[] }).rows

/** Provider statuses of many sends in one statement: each row's status fields as given (applySendStatuses). */
export async function setSendStatuses(
  tx: Db,
  accountId: string,
  sends: Array<
    Pick<
      TemplateSendRow,
      'id' | 'status' | 'reason' | 'errorCode' | 'deliveredAt' | 'readAt' | 'failedAt' | 'updatedAt'
    >
  >,
): Promise<void> {
  if (sends.length === 0) return
  const rows = recordsJson(sends, [
    'id',
    'status',
    'reason',
    'errorCode',
    'deliveredAt',
    'readAt',
    'failedAt',
    'updatedAt',
  ])
  await tx.execute(sql`
    UPDATE template_sends s SET status = r.status, reason = r.reason, error_code = r.error_code,
      delivered_at = r.delivered_at, read_at = r.read_at, failed_at = r.failed_at, updated_at = r.updated_at
    FROM ${recordsetSql(
      rows,
      sends.length,
      'r',
      'id uuid, status text, reason text, error_code text, delivered_at timestamptz, read_at timestamptz, failed_at timestamptz, updated_at timestamptz',
    )}
    WHERE s.account_id = ${accountId}::uuid AND s.id = r.id`)
}

/**
 * The worker's re-check of a batch of sends in one query: each send with its account (status, sending paused,
 * language, timezone), its contact (null when deleted: name, e-mail, phone, chat opt-in) and whether the account's
 * chat number is connected. The rules are applied by the caller. The contact and the number are read by name in
 * subqueries (the contacts and channels modules own those tables; this read changes nothing), so the batch costs
 * one round trip instead of a service call per send.
 */
export async function recheckSends(db: Db, accountId: string, ids: string[]) {
  if (ids.length === 0) return []
  return db
    .select({
      send: templateSends,
      account: {
        status: accounts.status,
        sendingPaused: accounts.sendingPaused,
        language: accounts.language,
        timezone: accounts.timezone,
      },
      contact: sql<{
        name: string
        email: string
        phone: string
        optin_chat: string
        language: string
        fields: Record<string, unknown>
      } | null>`(
        SELECT json_build_object('name', c.name, 'email', c.email, 'phone', c.phone, 'optin_chat', c.optin_chat,
          'language', c.language, 'fields', c.fields)
        FROM contacts c WHERE c.account_id = ${templateSends.accountId} AND c.id = ${templateSends.contactId})`,
      chatConnected: sql<boolean | null>`(SELECT cc.status = 'connected' FROM channel_connections cc
        WHERE cc.account_id = ${templateSends.accountId} AND cc.channel = 'chat')`,
      // each template of the batch once (on its first send), and the account's field definitions once (on the first
      // send): read here, they are not three more statements a batch
      template: sql<unknown>`CASE WHEN row_number() OVER (PARTITION BY ${templateSends.templateId}
        ORDER BY ${templateSends.id}) = 1
        THEN ${templateAsJsonSql(sql`${templateSends.accountId}`, sql`${templateSends.templateId}`)} END`,
      definitions: sql<unknown>`CASE WHEN row_number() OVER (ORDER BY ${templateSends.id}) = 1
        THEN ${fieldDefinitionsJsonSql(sql`${templateSends.accountId}`)} END`,
      protection: sql<Protection | null>`(SELECT json_build_object('capEnabled', ss.cap_enabled,
          'capMessages', ss.cap_messages, 'capWindowHours', ss.cap_window_hours, 'quietEnabled', ss.quiet_enabled,
          'quietFrom', ss.quiet_from, 'quietTo', ss.quiet_to)
        FROM sending_settings ss WHERE ss.account_id = ${templateSends.accountId})`,
    })
    .from(templateSends)
    .innerJoin(accounts, eq(accounts.id, templateSends.accountId))
    .where(and(eq(templateSends.accountId, accountId), inArray(templateSends.id, ids)))
}

/**
 * The frequency cap's count for a batch's contacts, in one statement over the capped index: per contact, the
 * campaign marketing sends that went to the provider at or after `since` and may have reached the contact (a
 * refused one, or one sent back to the queue, did not).
 */
export async function cappedSince(tx: Db, accountId: string, contactIds: string[], since: Date) {
  const counts = new Map<string, number>()
  if (contactIds.length === 0) return counts
  const result = await tx.execute(sql`SELECT contact_id, count(*)::int AS n FROM template_sends
    WHERE account_id = ${accountId}::uuid AND contact_id = ANY(${sql.param([...new Set(contactIds)])}::uuid[])
      AND capped_at >= ${since.toISOString()}::timestamptz AND status NOT IN ('queued', 'skipped')
      AND NOT (status = 'failed' AND reason IN ('provider_refused', 'contact_opted_out', 'rate_limited'))
    GROUP BY contact_id`)
  for (const row of rowsOf<{ contact_id: string; n: number }>(result)) counts.set(String(row.contact_id), Number(row.n))
  return counts
}

/** Counts these sends for the frequency cap from `at` on (they go to the provider now); a wait's detail is cleared. */
export async function markCapped(tx: Db, accountId: string, ids: string[], at: Date): Promise<void> {
  if (ids.length === 0) return
  await tx.execute(sql`UPDATE template_sends SET capped_at = ${at.toISOString()}::timestamptz, reason_detail = NULL
    WHERE account_id = ${accountId}::uuid AND id = ANY(${sql.param(ids)}::uuid[])`)
}

/** The sends of a batch, locked (in id order, so concurrent batches lock alike). */
export async function lockSends(tx: Db, accountId: string, ids: string[]) {
  if (ids.length === 0) return []
  return tx
    .select()
    .from(templateSends)
    .where(and(eq(templateSends.accountId, accountId), inArray(templateSends.id, ids)))
    .orderBy(templateSends.id)
    .for('update')
}

/** The columns patchSends can set, as the database names them. */
const PATCHABLE = {
  status: 'text',
  reason: 'text',
  reasonDetail: 'text',
  errorCode: 'text',
  attemptToken: 'uuid',
  quotaMonth: 'text',
  messageId: 'uuid',
  providerMessageId: 'text',
  sentAt: 'timestamptz',
  failedAt: 'timestamptz',
  skippedAt: 'timestamptz',
  updatedAt: 'timestamptz',
} as const
const column = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/**
 * updateSend for many sends in one statement, each with its own patch (only the fields it names change); a patch
 * with `token` only while that attempt still holds the send. Returns the ids changed.
 */
export async function patchSends(
  tx: Db,
  accountId: string,
  patches: Array<{ id: string; patch: Pick<TemplateSendPatch, keyof typeof PATCHABLE>; token?: string }>,
): Promise<Set<string>> {
  if (patches.length === 0) return new Set()
  const rows = JSON.stringify(
    patches.map(({ id, patch, token }) => ({
      id,
      token: token ?? null,
      p: Object.fromEntries(
        Object.entries(patch).map(([field, value]) => [
          column(field),
          value instanceof Date ? value.toISOString() : (value ?? null),
        ]),
      ),
    })),
  )
  const sets = Object.entries(PATCHABLE).map(([field, type]) => {
    const name = column(field)
    return sql.raw(`${name} = CASE WHEN r.p ? '${name}' THEN (r.p->>'${name}')::${type} ELSE s.${name} END`)
  })
  const result = await tx.execute(sql`
    UPDATE template_sends s SET ${sql.join(sets, sql`, `)}
    FROM ${recordsetSql(rows, patches.length, 'r', 'id uuid, token uuid, p jsonb')}
    WHERE s.account_id = ${accountId}::uuid AND s.id = r.id AND (r.token IS NULL OR s.attempt_token = r.token)
    RETURNING s.id`)
  return new Set(rowsOf<{ id: string }>(result).map((r) => String(r.id)))
}

/** The short links of a batch of sends in one insert. */
export async function insertLinksOf(
  db: Db,
  accountId: string,
  links: Array<{ contactId: string; id: string; url: string }>,
  now: Date,
): Promise<void> {
  if (links.length === 0) return
  await db.insert(trackedLinks).values(links.map((link) => ({ accountId, ...link, createdAt: now })))
}

/** The contact as POST /messages checks and renders it. */
export type CheckedContact = {
  id: string
  name: string
  email: string
  phone: string
  optin_chat: string
  language: string
  fields: Record<string, unknown> | null
}

/** Everything POST /messages with a template checks, as one statement reads it (sendChecks). */
export type SendChecks = {
  contact: CheckedContact | null
  template: TemplateRow | null
  definitions: FieldDefinition[]
  unitLeft: boolean
  chatConnected: boolean
}

export type SendCheckKey = { accountId: string; contactId: string; templateId: string | null; month: string }

/**
 * What POST /messages with a template checks before it writes (the contact, the template, the account's custom field
 * definitions, a unit of the month's quota left, a connected chat number), for the requests of one turn of the event
 * loop in one statement: read one by one they were five statements a turn, each a round trip on the server's busy
 * thread. Grouped (perTick): while one such statement is on its way, the requests arriving meanwhile wait to go
 * together in the next. Every lookup is by the key's account. A template id that is no uuid reads as no template.
 */
export const sendChecks = perTick(
  async (db, keys: readonly SendCheckKey[]): Promise<SendChecks[]> => {
    const result = await db.execute(sql`
    SELECT k.at,
      (SELECT json_build_object('id', c.id, 'name', c.name, 'email', c.email, 'phone', c.phone,
          'optin_chat', c.optin_chat, 'language', c.language, 'fields', c.fields)
        FROM contacts c WHERE c.account_id = k.account_id AND c.id = k.contact_id) AS contact,
      ${templateAsJsonSql(sql`k.account_id`, sql`k.template_id`)} AS template,
      ${fieldDefinitionsJsonSql(sql`k.account_id`)} AS definitions,
      ${unitLeftSql(sql`k.account_id`, sql`k.month`)} AS unit_left,
      EXISTS (SELECT 1 FROM channel_connections cc
        WHERE cc.account_id = k.account_id AND cc.channel = 'chat' AND cc.status = 'connected') AS chat_connected
    FROM unnest(${sql.param(keys.map((k) => k.accountId))}::uuid[], ${sql.param(keys.map((k) => k.contactId))}::uuid[],
        ${sql.param(keys.map((k) => k.templateId))}::uuid[], ${sql.param(keys.map((k) => k.month))}::text[])
      WITH ORDINALITY AS k(account_id, contact_id, template_id, month, at)`)
    const found: SendChecks[] = keys.map(() => ({
      contact: null,
      template: null,
      definitions: [],
      unitLeft: false,
      chatConnected: false,
    }))
    type Row = {
      at: number | string
      contact: unknown
      template: unknown
      definitions: unknown
      unit_left: boolean
      chat_connected: boolean
    }
    for (const row of rows<Row>(result)) {
      found[Number(row.at) - 1] = {
        contact: (typeof row.contact === 'string' ? JSON.parse(row.contact) : row.contact) as CheckedContact | null,
        template: templateFromJson(row.template),
        definitions: fieldDefinitionsFromJson(row.definitions),
        unitLeft: row.unit_left === true,
        chatConnected: row.chat_connected === true,
      }
    }
    return found
  },
  { grouped: true },
)
