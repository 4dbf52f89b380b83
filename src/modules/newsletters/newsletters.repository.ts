import { sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { rows } from '../../platform/db/rows.ts'
import { notFound } from '../../platform/http/errors.ts'
import { notifyJobsSql } from '../../platform/jobs/jobs.ts'
import { type FieldConditionContext, fieldConditionContext, fieldConditionsSql } from '../contacts/index.ts'
import { countSends, queueSendJobsSql, queueSendsSql, WAIT_REASONS } from '../messaging/index.ts'
import {
  type CtaTracking,
  type NewsletterCta,
  type NewsletterHeaderMedia,
  type NewsletterPhase,
  type NewsletterSegment,
  type NewsletterStatus,
  newsletters,
} from './newsletters.tables.ts'

// Every query here filters on account_id; a repository never decides a rule.

export type NewsletterRow = typeof newsletters.$inferSelect

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const isUuid = (value: string) => UUID.test(value)

/** A text[] literal of the names (quoted, so a tag may hold commas, quotes and backslashes). */
const textArray = (names: string[]) => `{${names.map((n) => `"${n.replace(/["\\]/g, (m) => `\\${m}`)}"`).join(',')}}`

/**
 * The segment's tag and field conditions on contacts `c` (confirmed chat opt-in is added by the callers); `fields`
 * is what its field conditions need (the account's definitions and today), null when it has none.
 */
export function segmentSql(segment: NewsletterSegment | null, fields: FieldConditionContext | null) {
  const parts = [sql`TRUE`]
  const any = segment?.tags_any ?? []
  const all = [...new Set(segment?.tags_all ?? [])]
  const exclude = segment?.tags_exclude ?? []
  if (any.length > 0) {
    parts.push(sql`EXISTS (SELECT 1 FROM contact_tags t WHERE t.account_id = c.account_id AND t.contact_id = c.id
      AND t.name = ANY(${textArray(any)}::text[]))`)
  }
  if (all.length > 0) {
    parts.push(sql`(SELECT count(DISTINCT t.name) FROM contact_tags t WHERE t.account_id = c.account_id
      AND t.contact_id = c.id AND t.name = ANY(${textArray(all)}::text[])) = ${all.length}`)
  }
  if (exclude.length > 0) {
    parts.push(sql`NOT EXISTS (SELECT 1 FROM contact_tags t WHERE t.account_id = c.account_id AND t.contact_id = c.id
      AND t.name = ANY(${textArray(exclude)}::text[]))`)
  }
  if (segment?.fields?.length) {
    // the callers resolve the context of a segment with field conditions; without it they select nobody
    parts.push(fields ? fieldConditionsSql(segment.fields, fields) : sql`FALSE`)
  }
  return sql.join(parts, sql` AND `)
}

/** What a segment's field conditions need now (definitions, today in the account's timezone); null without any. */
export async function segmentFieldContext(
  db: Db,
  accountId: string,
  segment: NewsletterSegment | null,
  now: Date,
  timezone?: string,
): Promise<FieldConditionContext | null> {
  if (!segment?.fields?.length) return null
  return fieldConditionContext(db, accountId, now, timezone)
}

export async function findNewsletter(
  db: Db,
  accountId: string,
  id: string,
  lock = false,
): Promise<NewsletterRow | undefined> {
  if (!isUuid(id)) return undefined
  const result = await db.execute(
    sql`SELECT * FROM newsletters WHERE account_id = ${accountId} AND id = ${id} ${lock ? sql`FOR UPDATE` : sql``}`,
  )
  const [raw] = rows<Record<string, unknown>>(result)
  return raw ? fromRaw(raw) : undefined
}

/** findNewsletter, or a 404. */
export async function requireNewsletter(db: Db, accountId: string, id: string, lock = false): Promise<NewsletterRow> {
  const row = await findNewsletter(db, accountId, id, lock)
  if (!row) throw notFound('newsletter')
  return row
}

export async function updateNewsletter(
  db: Db,
  row: NewsletterRow,
  change: Partial<NewsletterRow>,
  now: Date,
): Promise<NewsletterRow> {
  const [saved] = await db
    .update(newsletters)
    .set({ ...change, updatedAt: now })
    .where(sql`${newsletters.accountId} = ${row.accountId} AND ${newsletters.id} = ${row.id}`)
    .returning()
  return saved
}

export async function insertNewsletter(db: Db, row: typeof newsletters.$inferInsert): Promise<NewsletterRow> {
  const [inserted] = await db.insert(newsletters).values(row).returning()
  return inserted
}

export function listNewsletters(db: Db, accountId: string, limit: number, offset: number) {
  return db
    .select()
    .from(newsletters)
    .where(sql`${newsletters.accountId} = ${accountId}`)
    .orderBy(sql`${newsletters.createdAt} DESC, ${newsletters.id} DESC`)
    .limit(limit)
    .offset(offset)
}

export async function deleteNewsletter(tx: Db, accountId: string, id: string): Promise<void> {
  await tx.execute(sql`DELETE FROM newsletters WHERE account_id = ${accountId} AND id = ${id}`)
}

export async function countRecipients(
  db: Db,
  accountId: string,
  segment: NewsletterSegment | null,
  fields: FieldConditionContext | null,
): Promise<number> {
  const result = await db.execute(sql`SELECT count(*)::int AS n FROM contacts c
    WHERE c.account_id = ${accountId} AND c.optin_chat = 'confirmed' AND ${segmentSql(segment, fields)}`)
  return Number(rows<{ n: number }>(result)[0]?.n ?? 0)
}

/** The names among `names` that some contact of the account carries as a tag. */
export async function knownTags(db: Db, accountId: string, names: string[]): Promise<Set<string>> {
  const result = await db.execute(sql`SELECT DISTINCT name FROM contact_tags
    WHERE account_id = ${accountId} AND name = ANY(${textArray(names)}::text[])`)
  return new Set(rows<{ name: string }>(result).map((r) => r.name))
}

/** A contact as a preview shows it, with whether the segment selects it (null: no such contact). */
export async function previewContact(
  db: Db,
  accountId: string,
  contactId: string,
  segment: NewsletterSegment | null,
  fields: FieldConditionContext | null,
) {
  const found = await db.execute(sql`SELECT c.name, c.email, c.phone, c.optin_chat, c.language, c.fields,
      (${segmentSql(segment, fields)}) AS selected
    FROM contacts c WHERE c.account_id = ${accountId} AND c.id = ${contactId}`)
  const [contact] = rows<{
    name: string
    email: string
    phone: string
    optin_chat: string
    language: string
    fields: Record<string, unknown> | null
    selected: unknown
  }>(found)
  return contact ?? null
}

/** The newsletter's send records counted by status and reason. */
export function sendCountsByReason(db: Db, row: NewsletterRow) {
  return countSends(db, { accountId: row.accountId, origin: 'newsletter', originIds: [row.id] }, ['status', 'reason'])
}

/** The newsletter's send records counted by status. */
export function sendCountsByStatus(db: Db, row: NewsletterRow) {
  return countSends(db, { accountId: row.accountId, origin: 'newsletter', originIds: [row.id] }, ['status'])
}

/** The clicks on the newsletter's tracked CTA links and the contacts who clicked. */
export async function ctaClickCounts(db: Db, row: NewsletterRow) {
  const clicked = await db.execute(sql`SELECT count(*)::int AS clicks, count(DISTINCT k.contact_id)::int AS contacts
    FROM tracked_links l JOIN link_clicks k ON k.account_id = l.account_id AND k.link_id = l.id
    WHERE l.account_id = ${row.accountId} AND l.newsletter_id = ${row.id}`)
  const [counted] = rows<{ clicks: number; contacts: number }>(clicked)
  return { clicks: Number(counted?.clicks ?? 0), contacts: Number(counted?.contacts ?? 0) }
}

/** A page (limit + 1 rows) of the newsletter's send records by contact. */
export async function listRecipients(
  db: Db,
  row: NewsletterRow,
  query: { status?: string; limit: number; offset: number },
) {
  const result = await db.execute(sql`SELECT id, contact_id, status, reason, reason_detail, sent_at, delivered_at,
      read_at, failed_at, skipped_at, created_at FROM template_sends
    WHERE account_id = ${row.accountId} AND origin = 'newsletter' AND origin_id = ${row.id}
      ${query.status ? sql`AND status = ${query.status}` : sql``}
    ORDER BY contact_id LIMIT ${query.limit + 1} OFFSET ${query.offset}`)
  return rows<Record<string, unknown>>(result)
}

/** A page (limit + 1 rows) of the clicks on the newsletter's CTA links, newest first. */
export async function listClicks(db: Db, row: NewsletterRow, query: { limit: number; offset: number }) {
  const result = await db.execute(sql`SELECT k.contact_id, k.clicked_at, l.url
    FROM tracked_links l JOIN link_clicks k ON k.account_id = l.account_id AND k.link_id = l.id
    WHERE l.account_id = ${row.accountId} AND l.newsletter_id = ${row.id}
    ORDER BY k.clicked_at DESC, k.contact_id LIMIT ${query.limit + 1} OFFSET ${query.offset}`)
  return rows<{ contact_id: string; clicked_at: string; url: string }>(result)
}

const ZERO_UUID = '00000000-0000-0000-0000-000000000000'

/**
 * Writes one batch of send records (the recipients snapshot) in one statement: contacts in id order after the
 * fan-out's cursor, read and written on the server. A tracked CTA's short-link id is drawn here, as the send's
 * variable {{1}}; its link row is written with the send's job (feedSends). Answers the last contact id and the count.
 */
export async function fanoutBatch(
  tx: Db,
  row: NewsletterRow,
  input: { templateId: string; batch: number; now: Date; fields: FieldConditionContext | null },
): Promise<{ last: string | null; picked: number }> {
  const cursor = row.fanoutCursor ?? ZERO_UUID
  const sends = queueSendsSql({
    accountId: row.accountId,
    templateId: input.templateId,
    origin: 'newsletter',
    originId: row.id,
    recipients: 'picked',
    // a tracked CTA: each recipient's button gets its own short link, its id the send's variable {{1}}
    trackedLink: row.ctaTracking === 'tracked' && row.cta !== null,
    now: input.now,
  })
  const result = await tx.execute(sql`
    WITH picked AS (
      SELECT c.id FROM contacts c
      WHERE c.account_id = ${row.accountId} AND c.optin_chat = 'confirmed' AND c.id > ${cursor}::uuid
        AND ${segmentSql(row.segment ?? null, input.fields)}
      ORDER BY c.id LIMIT ${input.batch}
    ), ${sends}
    SELECT (SELECT max(id::text) FROM picked) AS last, (SELECT count(*) FROM picked)::int AS picked`)
  const [out] = rows<{ last: string | null; picked: number }>(result)
  return { last: out.last, picked: Number(out.picked) }
}

/**
 * Gives the newsletter's next `room` send records after feed_cursor (and up to `upTo`) their send jobs and a tracked
 * CTA's short links, with the jobs' NOTIFY, in one statement. Answers the last contact fed and how many jobs it wrote.
 */
export async function feedSends(
  tx: Db,
  row: NewsletterRow,
  input: { upTo: string | null; room: number; now: Date },
): Promise<{ last: string | null; queued: number }> {
  const fed = queueSendJobsSql({
    accountId: row.accountId,
    origin: 'newsletter',
    originId: row.id,
    after: row.feedCursor,
    upTo: input.upTo,
    limit: input.room,
    cta: row.ctaTracking === 'tracked' && row.cta ? { url: row.cta.url } : null,
    priority: 1,
    now: input.now,
  })
  const result = await tx.execute(sql`
    WITH ${fed}
    SELECT (SELECT max(contact_id::text) FROM fed) AS last, (SELECT count(*) FROM queued)::int AS queued,
      ${notifyJobsSql('queued')} AS notified`)
  const [out] = rows<{ last: string | null; queued: number }>(result)
  return { last: out.last, queued: Number(out.queued) }
}

/**
 * Whether a send of the newsletter is still open, and the sends waiting for sending to be possible again (with the
 * reason they wait for): index probes (the origin index by status, the partial index of waiting sends), not a count
 * of all the newsletter's sends, which at a million recipients cost seconds of the database every 5 s.
 */
export async function openAndWaiting(db: Db, accountId: string, id: string) {
  const result = await db.execute(sql`SELECT o.open, w.waiting, w.reason, w.quiet_until
    FROM (SELECT EXISTS (SELECT 1 FROM template_sends WHERE account_id = ${accountId} AND origin_id = ${id}
      AND status IN ('queued', 'sending')) AS open) o,
    (SELECT count(*)::int AS waiting, max(reason) AS reason,
        min(reason_detail) FILTER (WHERE reason = 'quiet_hours') AS quiet_until FROM template_sends
      WHERE account_id = ${accountId} AND origin_id = ${id} AND status = 'queued' AND reason IS NOT NULL
        AND reason IN (${sql.join(
          [...WAIT_REASONS].map((r) => sql`${r}`),
          sql`, `,
        )})) w`)
  const counted = rows<{ open: boolean | string; waiting: number; reason: string | null; quiet_until: string | null }>(
    result,
  )[0]
  return {
    open: counted?.open === true || counted?.open === 't',
    waiting: Number(counted?.waiting ?? 0),
    reason: counted?.reason ?? null,
    // the earliest end of a waiting send's quiet hours (its reason_detail, an ISO instant)
    quietUntil: counted?.quiet_until ? new Date(counted.quiet_until) : null,
  }
}

/** Rows from raw SQL (snake_case) into the table's shape. */
function fromRaw(raw: Record<string, unknown>): NewsletterRow {
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string))
  const json = <T>(v: unknown): T | null =>
    v === null || v === undefined ? null : typeof v === 'string' ? (JSON.parse(v) as T) : (v as T)
  return {
    accountId: String(raw.account_id),
    id: String(raw.id),
    name: String(raw.name),
    subject: String(raw.subject),
    content: String(raw.content),
    channel: 'chat',
    status: raw.status as NewsletterStatus,
    phase: raw.phase as NewsletterPhase,
    cta: json<NewsletterCta>(raw.cta),
    ctaTracking: (raw.cta_tracking as CtaTracking | null) ?? null,
    headerMedia: json<NewsletterHeaderMedia>(raw.header_media),
    segment: json<NewsletterSegment>(raw.segment),
    scheduledAt: date(raw.scheduled_at),
    templateId: (raw.template_id as string | null) ?? null,
    stopReason: (raw.stop_reason as string | null) ?? null,
    resumesAt: date(raw.resumes_at),
    fanoutCursor: (raw.fanout_cursor as string | null) ?? null,
    feedCursor: (raw.feed_cursor as string | null) ?? null,
    startedAt: date(raw.started_at),
    finishedAt: date(raw.finished_at),
    createdAt: new Date(raw.created_at as string),
    updatedAt: new Date(raw.updated_at as string),
  }
}
