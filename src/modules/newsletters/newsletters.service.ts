import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { type Page, toPage } from '../../platform/http/pagination.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import { sendFunnel } from '../../platform/http/statistics.ts'
import { type ClaimedJob, cancelQueuedJobs, completeJob, enqueue, JOBS_CHANNEL } from '../../platform/jobs/jobs.ts'
import type { JobContext } from '../../platform/jobs/runner.ts'
import { SEND_WAIT_RETRY_MS, TEMPLATE_SEND_QUEUE, WAIT_REASONS } from '../messaging/index.ts'
import { checkTemplate, renderTemplate } from '../templates/index.ts'
import {
  type CtaTracking,
  type NewsletterCta,
  type NewsletterHeaderMedia,
  type NewsletterPhase,
  type NewsletterSegment,
  type NewsletterStatus,
  newsletters,
} from './newsletters.tables.ts'

export const NEWSLETTER_START_QUEUE = 'newsletters.start'
export const NEWSLETTER_PROGRESS_QUEUE = 'newsletters.progress'
/** how often a waiting newsletter looks again (template approval, sending possible again) */
export const RETRY_WAIT_MS = 60_000
/** how often a sending newsletter checks whether every send reached a final state */
export const PROGRESS_EVERY_MS = 5_000
/** contacts written per fan-out statement (each its own transaction; the cursor survives a crash) */
export const FANOUT_BATCH = 10_000
/**
 * Send jobs of the account kept queued ahead of the sender while a newsletter sends: its send records get their jobs
 * as the queue drains below this (at the fan-out and at every progress check), 20 s of work at 1,000 sends/s.
 */
export const FEED_AHEAD = 20_000
const ZERO_UUID = '00000000-0000-0000-0000-000000000000'

export type NewsletterRow = typeof newsletters.$inferSelect

export interface NewslettersTenant {
  accountId: string
  account: { language: string }
}

/** What the newsletter needs of the templates module (its exported service). */
export interface NewsletterTemplates {
  create(
    tenant: NewslettersTenant,
    input: {
      name: string
      content: string
      channel: 'chat'
      purpose: 'marketing'
      language: string
      buttons?: Array<{ type: 'URL'; text: string; url: string }>
      header_media?: { media_id?: string; url?: string; mime_type?: string }
    },
  ): Promise<{ id: string }>
  submit(tenant: NewslettersTenant, id: string): Promise<unknown>
  get(tenant: NewslettersTenant, id: string): Promise<{ provider_status: string | null }>
  delete(tenant: NewslettersTenant, id: string): Promise<unknown>
}

export interface NewslettersDeps {
  db: Db
  clock: Clock
  /** HEROLD_PUBLIC_URL: the tracked CTA button's short links live under it */
  publicUrl: string
  /** a header image by media library id (of the account) or public address (the media module) */
  resolveHeaderMedia(
    accountId: string,
    input: { media_id?: string; url?: string; mime_type?: string },
  ): Promise<NewsletterHeaderMedia>
  templates: NewsletterTemplates
  /** throws an AppError (chat_not_connected, subscription_locked) when nothing can go out now */
  requireSendingPossible(accountId: string): Promise<void>
  /** the chat number's daily limit of new conversations as it stands (channels) */
  dailyWindow(accountId: string): Promise<{ limit: number | null; used: number; resumesAt: Date | null }>
  /** send jobs kept queued ahead of the sender (default FEED_AHEAD; tests feed a few at a time) */
  feedAhead?: number
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

function rows<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows
}

/** The template body: the subject as a bold first line, then the text. */
export function templateBody(newsletter: Pick<NewsletterRow, 'subject' | 'content'>): string {
  return `*${newsletter.subject}*\n\n${newsletter.content}`
}

/** The CTA button's address at the provider: one short link per recipient, its id the button's variable. */
export function trackedCtaUrl(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/public/t/c/{{1}}`
}

/** Whether the CTA can be a tracked short link, or why it goes out as the plain address. */
export function ctaTrackingFor(publicUrl: string, content: string): CtaTracking {
  if (!/^https:\/\//i.test(publicUrl)) return 'public_url_not_https'
  if (/\{\{\s*\d+\s*\}\}/.test(content)) return 'content_numbered_variables'
  return 'tracked'
}

const CTA_TRACKING_NOTES: Record<CtaTracking, string> = {
  tracked: 'The CTA button opens a short link per recipient that counts the click and redirects to the CTA address.',
  public_url_not_https:
    'Clicks on the CTA are not counted: WhatsApp URL buttons need an https address and HEROLD_PUBLIC_URL is not https, so the button opens the CTA address directly.',
  content_numbered_variables:
    "Clicks on the CTA are not counted: the text uses numbered variables such as {{1}}, which would share the tracked button's {{1}}, so the button opens the CTA address directly.",
}

type HeaderMediaInput = { media_id?: string; url?: string; mime_type?: string }

/** The template's header image: the library file by its id (resolved again), else the address as given. */
function headerMediaReference(header: NewsletterHeaderMedia): HeaderMediaInput {
  if (header.media_id) return { media_id: header.media_id }
  return { url: header.url, ...(header.mime_type ? { mime_type: header.mime_type } : {}) }
}

/** A short-link id made in SQL at the fan-out: 12 random bytes as base64url (16 characters). */
const LINK_ID_SQL = sql.raw(
  `translate(encode(substr(uuid_send(gen_random_uuid()), 1, 6) || substr(uuid_send(gen_random_uuid()), 11, 6), 'base64'), '+/', '-_')`,
)

/** The segment's tag conditions on contacts `c` (confirmed chat opt-in is added by the callers). */
function segmentSql(segment: NewsletterSegment | null) {
  const parts = [sql`TRUE`]
  const any = segment?.tags_any ?? []
  const all = [...new Set(segment?.tags_all ?? [])]
  const exclude = segment?.tags_exclude ?? []
  const list = (names: string[]) => `{${names.map((n) => `"${n.replace(/["\\]/g, (m) => `\\${m}`)}"`).join(',')}}`
  if (any.length > 0) {
    parts.push(sql`EXISTS (SELECT 1 FROM contact_tags t WHERE t.account_id = c.account_id AND t.contact_id = c.id
      AND t.name = ANY(${list(any)}::text[]))`)
  }
  if (all.length > 0) {
    parts.push(sql`(SELECT count(DISTINCT t.name) FROM contact_tags t WHERE t.account_id = c.account_id
      AND t.contact_id = c.id AND t.name = ANY(${list(all)}::text[])) = ${all.length}`)
  }
  if (exclude.length > 0) {
    parts.push(sql`NOT EXISTS (SELECT 1 FROM contact_tags t WHERE t.account_id = c.account_id AND t.contact_id = c.id
      AND t.name = ANY(${list(exclude)}::text[]))`)
  }
  return sql.join(parts, sql` AND `)
}

export function newsletterView(row: NewsletterRow, templateStatus: string | null) {
  return {
    id: row.id,
    name: row.name,
    subject: row.subject,
    content: row.content,
    channel: row.channel,
    status: row.status,
    phase: row.phase,
    cta: row.cta ?? null,
    cta_tracking: row.cta ? (row.ctaTracking ?? null) : null,
    cta_tracking_note: row.cta && row.ctaTracking ? CTA_TRACKING_NOTES[row.ctaTracking] : null,
    header_media: row.headerMedia ?? null,
    segment: row.segment ?? null,
    scheduled_at: row.scheduledAt,
    template_id: row.templateId,
    template_status: templateStatus,
    stop_reason: row.stopReason,
    started_at: row.startedAt,
    finished_at: row.finishedAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

export function newslettersService(deps: NewslettersDeps) {
  const { db, clock } = deps
  const feedAhead = deps.feedAhead ?? FEED_AHEAD

  async function find(dbOrTx: Db, accountId: string, id: string, lock = false): Promise<NewsletterRow | undefined> {
    if (!UUID.test(id)) return undefined
    const result = await dbOrTx.execute(
      sql`SELECT * FROM newsletters WHERE account_id = ${accountId} AND id = ${id} ${lock ? sql`FOR UPDATE` : sql``}`,
    )
    const [raw] = rows<Record<string, unknown>>(result)
    return raw ? fromRaw(raw) : undefined
  }

  async function require(dbOrTx: Db, accountId: string, id: string, lock = false): Promise<NewsletterRow> {
    const row = await find(dbOrTx, accountId, id, lock)
    if (!row) throw notFound('newsletter')
    return row
  }

  async function templateStatus(tenant: NewslettersTenant, row: NewsletterRow): Promise<string | null> {
    if (!row.templateId) return null
    const template = await deps.templates.get(tenant, row.templateId).catch(() => null)
    return template?.provider_status ?? null
  }

  async function save(dbOrTx: Db, row: NewsletterRow, change: Partial<NewsletterRow>): Promise<NewsletterRow> {
    const [saved] = await dbOrTx
      .update(newsletters)
      .set({ ...change, updatedAt: clock.now() })
      .where(sql`${newsletters.accountId} = ${row.accountId} AND ${newsletters.id} = ${row.id}`)
      .returning()
    return saved
  }

  async function recipientsEstimate(accountId: string, segment: NewsletterSegment | null): Promise<number> {
    const result = await db.execute(sql`SELECT count(*)::int AS n FROM contacts c
      WHERE c.account_id = ${accountId} AND c.optin_chat = 'confirmed' AND ${segmentSql(segment)}`)
    return Number(rows<{ n: number }>(result)[0]?.n ?? 0)
  }

  async function detail(tenant: NewslettersTenant, row: NewsletterRow) {
    return {
      ...newsletterView(row, await templateStatus(tenant, row)),
      recipients_estimate: await recipientsEstimate(row.accountId, row.segment ?? null),
    }
  }

  /** 400 naming the segment's tags that no contact of the account carries. */
  async function assertTagsExist(accountId: string, segment: NewsletterSegment) {
    const named = [
      ...new Set([...(segment.tags_any ?? []), ...(segment.tags_all ?? []), ...(segment.tags_exclude ?? [])]),
    ]
    if (named.length === 0) return
    const literal = `{${named.map((n) => `"${n.replace(/["\\]/g, (m) => `\\${m}`)}"`).join(',')}}`
    const result = await db.execute(sql`SELECT DISTINCT name FROM contact_tags
      WHERE account_id = ${accountId} AND name = ANY(${literal}::text[])`)
    const known = new Set(rows<{ name: string }>(result).map((r) => r.name))
    const unknown = named.filter((n) => !known.has(n))
    if (unknown.length > 0) {
      throw badRequest(`The segment names tags that do not exist: ${unknown.join(', ')}`, 'segment_unknown_tags', {
        tags: unknown,
      })
    }
  }

  const locked = (row: NewsletterRow) => row.status === 'sending' || row.status === 'sent'

  /**
   * Makes the newsletter's marketing template as it stands (its text, button and header image) and submits it; the
   * template check's problems are a 400 and leave nothing behind.
   */
  async function makeTemplate(
    tenant: NewslettersTenant,
    current: NewsletterRow,
  ): Promise<{ templateId: string; ctaTracking: NewsletterRow['ctaTracking'] }> {
    const ctaTracking = current.cta ? ctaTrackingFor(deps.publicUrl, current.content) : null
    const button = current.cta
      ? {
          type: 'URL' as const,
          text: current.cta.text,
          url: ctaTracking === 'tracked' ? trackedCtaUrl(deps.publicUrl) : current.cta.url,
        }
      : null
    const template = await deps.templates.create(tenant, {
      name: `newsletter ${current.id.slice(0, 8)} ${randomBytes(3).toString('hex')}`,
      content: templateBody(current),
      channel: 'chat',
      purpose: 'marketing',
      language: tenant.account.language,
      ...(button ? { buttons: [button] } : {}),
      ...(current.headerMedia ? { header_media: headerMediaReference(current.headerMedia) } : {}),
    })
    try {
      await deps.templates.submit(tenant, template.id)
    } catch (error) {
      await dropTemplate(tenant, template.id)
      if (error instanceof AppError && error.status === 400) {
        throw badRequest(
          `The newsletter cannot go out as a WhatsApp template: ${error.message}`,
          'newsletter_template_invalid',
          { ...error.details, template_key: error.key },
        )
      }
      throw error
    }
    return { templateId: template.id, ctaTracking }
  }

  /** Drops the newsletter's template when its text or button changed (a new one is made when it is scheduled). */
  async function dropTemplate(tenant: NewslettersTenant, templateId: string | null) {
    if (templateId) await deps.templates.delete(tenant, templateId).catch(() => {})
  }

  async function enqueueStart(tx: Db, row: NewsletterRow, at: Date) {
    await cancelQueuedJobs(tx, { accountId: row.accountId, queue: NEWSLETTER_START_QUEUE, concurrencyKey: row.id })
    await enqueue(tx, clock, {
      accountId: row.accountId,
      queue: NEWSLETTER_START_QUEUE,
      payload: { newsletter_id: row.id },
      concurrencyKey: row.id,
      runAt: at,
    })
  }

  /**
   * Writes one batch of send records (the recipients snapshot) in one statement: contacts in id order after the
   * fan-out's cursor, read and written on the server. A tracked CTA's short-link id is drawn here, as the send's
   * variable {{1}}; its link row is written with the send's job (feed). Answers the last contact id and the count.
   */
  async function fanoutBatch(tx: Db, row: NewsletterRow, templateId: string) {
    const now = clock.now().toISOString()
    const cursor = row.fanoutCursor ?? ZERO_UUID
    // a tracked CTA: each recipient's button gets its own short link, its id the send's variable {{1}}
    const tracked = row.ctaTracking === 'tracked' && row.cta !== null
    const result = await tx.execute(sql`
      WITH picked AS (
        SELECT c.id FROM contacts c
        WHERE c.account_id = ${row.accountId} AND c.optin_chat = 'confirmed' AND c.id > ${cursor}::uuid
          AND ${segmentSql(row.segment ?? null)}
        ORDER BY c.id LIMIT ${FANOUT_BATCH}
      ), sends AS (
        INSERT INTO template_sends (account_id, id, contact_id, template_id, variables, status, origin, origin_id,
          created_at, updated_at)
        SELECT ${row.accountId}::uuid, gen_random_uuid(), p.id, ${templateId}::uuid,
          ${tracked ? sql`jsonb_build_object('1', ${LINK_ID_SQL})` : sql`'{}'::jsonb`}, 'queued', 'newsletter',
          ${row.id}::uuid, ${now}::timestamptz, ${now}::timestamptz
        FROM picked p
        ON CONFLICT DO NOTHING
        RETURNING 1
      )
      SELECT (SELECT max(id::text) FROM picked) AS last, (SELECT count(*) FROM picked)::int AS picked`)
    const [out] = rows<{ last: string | null; picked: number }>(result)
    return { last: out.last, picked: Number(out.picked) }
  }

  /**
   * Gives the newsletter's next send records their send jobs (and a tracked CTA's short links), in contact order
   * after feed_cursor and up to `upTo` (the fan-out's cursor while it runs), so that about FEED_AHEAD send jobs of
   * the account wait ahead of the sender: a million recipients are a million send records at once but never a
   * million queued jobs. Runs under the newsletter's row lock, in the transaction that saves the cursor it answers.
   */
  async function feed(tx: Db, row: NewsletterRow, upTo: string | null): Promise<string | null> {
    const counted = await tx.execute(sql`SELECT count(*)::int AS n FROM (SELECT 1 FROM jobs
      WHERE queue = ${TEMPLATE_SEND_QUEUE} AND state = 'queued' AND account_id = ${row.accountId}
      LIMIT ${feedAhead}) j`)
    const room = feedAhead - Number(rows<{ n: number }>(counted)[0]?.n ?? 0)
    if (room <= 0) return row.feedCursor
    const now = clock.now().toISOString()
    const tracked = row.ctaTracking === 'tracked' && row.cta !== null
    const result = await tx.execute(sql`
      WITH fed AS (
        SELECT s.id, s.contact_id, s.status, s.variables->>'1' AS link_id FROM template_sends s
        WHERE s.account_id = ${row.accountId} AND s.origin = 'newsletter' AND s.origin_id = ${row.id}
          AND s.contact_id > ${row.feedCursor ?? ZERO_UUID}::uuid
          ${upTo ? sql`AND s.contact_id <= ${upTo}::uuid` : sql``}
        ORDER BY s.contact_id LIMIT ${room}
      ), links AS (
        INSERT INTO tracked_links (account_id, id, contact_id, url, newsletter_id, created_at)
        SELECT ${row.accountId}::uuid, f.link_id, f.contact_id, ${row.cta?.url ?? ''}, ${row.id}::uuid, ${now}::timestamptz
        FROM fed f WHERE ${tracked ? sql`f.link_id IS NOT NULL AND f.status = 'queued'` : sql`FALSE`}
        ON CONFLICT DO NOTHING
        RETURNING 1
      ), queued AS (
        INSERT INTO jobs (account_id, id, queue, payload, concurrency_key, run_at, created_at, priority)
        SELECT ${row.accountId}::uuid, gen_random_uuid(), ${TEMPLATE_SEND_QUEUE}, jsonb_build_object('send_id', f.id),
          NULL, ${now}::timestamptz, ${now}::timestamptz, 1
        FROM fed f WHERE f.status = 'queued'
        RETURNING 1
      )
      SELECT (SELECT max(contact_id::text) FROM fed) AS last, (SELECT count(*) FROM queued)::int AS queued`)
    const [out] = rows<{ last: string | null; queued: number }>(result)
    if (Number(out.queued) > 0) await tx.execute(sql`SELECT pg_notify(${JOBS_CHANNEL}, ${TEMPLATE_SEND_QUEUE})`)
    return out.last ?? row.feedCursor
  }

  return {
    async list(
      tenant: NewslettersTenant,
      query: { limit: number; offset: number },
    ): Promise<Page<ReturnType<typeof newsletterView>>> {
      const found = await db
        .select()
        .from(newsletters)
        .where(sql`${newsletters.accountId} = ${tenant.accountId}`)
        .orderBy(sql`${newsletters.createdAt} DESC, ${newsletters.id} DESC`)
        .limit(query.limit + 1)
        .offset(query.offset)
      const page = toPage(found, query.limit, query.offset)
      const items = []
      for (const row of page.items) items.push(newsletterView(row, await templateStatus(tenant, row)))
      return { ...page, items }
    },

    async create(
      tenant: NewslettersTenant,
      input: { name?: string; subject: string; content: string; header_media?: HeaderMediaInput | null },
    ) {
      const now = clock.now()
      const subject = input.subject.trim()
      const content = input.content.trim()
      if (subject === '' || content === '') throw badRequest('subject and content must not be blank')
      const headerMedia = input.header_media
        ? await deps.resolveHeaderMedia(tenant.accountId, input.header_media)
        : null
      const [row] = await db
        .insert(newsletters)
        .values({
          accountId: tenant.accountId,
          id: randomUUID(),
          name: input.name?.trim() || subject,
          subject,
          content,
          channel: 'chat',
          status: 'draft',
          phase: 'draft',
          headerMedia,
          createdAt: now,
          updatedAt: now,
        })
        .returning()
      return detail(tenant, row)
    },

    async get(tenant: NewslettersTenant, id: string) {
      return detail(tenant, await require(db, tenant.accountId, id))
    },

    async update(
      tenant: NewslettersTenant,
      id: string,
      input: { cta?: NewsletterCta | null; segment?: NewsletterSegment | null; header_media?: HeaderMediaInput | null },
    ) {
      if (input.cta === undefined && input.segment === undefined && input.header_media === undefined) {
        throw badRequest('Give cta, segment or header_media; nothing else can be changed')
      }
      if (input.cta && !/^https:\/\/[^\s/$.?#][^\s]*$/i.test(input.cta.url)) {
        throw badRequest('cta.url must be an https address', 'cta_url_invalid')
      }
      if (input.segment) await assertTagsExist(tenant.accountId, input.segment)
      // undefined: unchanged, null: removed
      const headerMedia = input.header_media
        ? await deps.resolveHeaderMedia(tenant.accountId, input.header_media)
        : input.header_media
      // The button and the header image are part of the template at the provider: a changed one needs a new template.
      // A scheduled newsletter gets it now (submitted for approval, which the start waits for); a draft when scheduled.
      const templateChanged = (row: NewsletterRow) =>
        row.templateId !== null &&
        ((input.cta !== undefined && JSON.stringify(row.cta ?? null) !== JSON.stringify(input.cta)) ||
          (headerMedia !== undefined && JSON.stringify(row.headerMedia ?? null) !== JSON.stringify(headerMedia)))
      const changed = (row: NewsletterRow): NewsletterRow => ({
        ...row,
        ...(input.cta !== undefined ? { cta: input.cta } : {}),
        ...(headerMedia !== undefined ? { headerMedia } : {}),
      })
      const current = await require(db, tenant.accountId, id)
      if (locked(current)) {
        throw badRequest(`The newsletter is ${current.status} and can no longer be changed`, 'newsletter_locked')
      }
      const replacement =
        current.status === 'scheduled' && templateChanged(current) ? await makeTemplate(tenant, changed(current)) : null
      const dropped: string[] = []
      let saved: NewsletterRow
      try {
        saved = await db.transaction(async (tx) => {
          const row = await require(tx, tenant.accountId, id, true)
          if (locked(row))
            throw badRequest(`The newsletter is ${row.status} and can no longer be changed`, 'newsletter_locked')
          const change: Partial<NewsletterRow> = {}
          if (input.segment !== undefined) change.segment = input.segment
          if (input.cta !== undefined) change.cta = input.cta
          if (headerMedia !== undefined) change.headerMedia = headerMedia
          if (templateChanged(row)) {
            dropped.push(row.templateId as string)
            const next = row.status === 'scheduled' ? replacement : null
            change.templateId = next?.templateId ?? null
            change.ctaTracking = next?.ctaTracking ?? null
          }
          return save(tx, row, change)
        })
      } catch (error) {
        if (replacement) await dropTemplate(tenant, replacement.templateId)
        throw error
      }
      // a replacement the newsletter did not take (it was cancelled meanwhile) goes too
      if (replacement && saved.templateId !== replacement.templateId) dropped.push(replacement.templateId)
      for (const templateId of dropped) await dropTemplate(tenant, templateId)
      return detail(tenant, saved)
    },

    async remove(tenant: NewslettersTenant, id: string) {
      let template: string | null = null
      await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, true)
        if (locked(row)) throw badRequest(`The newsletter is ${row.status} and cannot be deleted`, 'newsletter_locked')
        // queued send jobs first (the spec), then the newsletter
        await cancelQueuedJobs(tx, { accountId: row.accountId, queue: NEWSLETTER_START_QUEUE, concurrencyKey: row.id })
        await tx.execute(sql`DELETE FROM jobs j USING template_sends s
          WHERE s.account_id = ${row.accountId} AND s.origin = 'newsletter' AND s.origin_id = ${row.id}
            AND s.status = 'queued' AND j.account_id = s.account_id AND j.queue = ${TEMPLATE_SEND_QUEUE}
            AND j.state = 'queued' AND j.payload->>'send_id' = s.id::text`)
        await tx.execute(sql`DELETE FROM template_sends WHERE account_id = ${row.accountId} AND origin = 'newsletter'
          AND origin_id = ${row.id} AND status = 'queued'`)
        await tx.execute(sql`DELETE FROM newsletters WHERE account_id = ${row.accountId} AND id = ${row.id}`)
        template = row.templateId
      })
      await dropTemplate(tenant, template)
      return { id, deleted: true as const }
    },

    /**
     * draft → scheduled, scheduled → rescheduled. The time must lie in the future and at most a year ahead (422).
     * Makes sure the newsletter's marketing template exists and is submitted: its check's problems are a 400.
     */
    async schedule(tenant: NewslettersTenant, id: string, input: { scheduled_at: string }) {
      const at = new Date(input.scheduled_at)
      if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(input.scheduled_at.trim()) || Number.isNaN(at.getTime())) {
        throw badRequest('scheduled_at must be a date-time with a zone, such as 2027-03-01T09:00:00+01:00')
      }
      const current = await require(db, tenant.accountId, id)
      if (current.status !== 'draft' && current.status !== 'scheduled') {
        throw new AppError(409, 'newsletter_state', `A ${current.status} newsletter cannot be scheduled`, {
          key: 'newsletter_state',
        })
      }
      const now = clock.now()
      const yearAhead = new Date(now)
      yearAhead.setUTCFullYear(yearAhead.getUTCFullYear() + 1)
      if (at.getTime() <= now.getTime()) {
        throw new AppError(422, 'scheduled_at_invalid', 'scheduled_at must lie in the future')
      }
      if (at.getTime() > yearAhead.getTime()) {
        throw new AppError(422, 'scheduled_at_invalid', 'scheduled_at may be at most one year ahead')
      }
      const { templateId, ctaTracking } = current.templateId
        ? { templateId: current.templateId, ctaTracking: current.cta ? current.ctaTracking : null }
        : await makeTemplate(tenant, current)
      const saved = await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, true)
        if (row.status !== 'draft' && row.status !== 'scheduled') {
          throw new AppError(409, 'newsletter_state', `A ${row.status} newsletter cannot be scheduled`)
        }
        const next = await save(tx, row, {
          status: 'scheduled',
          phase: 'scheduled',
          scheduledAt: at,
          templateId,
          ctaTracking,
          stopReason: null,
          resumesAt: null,
        })
        await enqueueStart(tx, next, at)
        return next
      })
      return detail(tenant, saved)
    },

    async cancel(tenant: NewslettersTenant, id: string) {
      const saved = await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, true)
        if (row.status !== 'scheduled') {
          throw badRequest(
            `Only a scheduled newsletter can be cancelled; this one is ${row.status}`,
            'newsletter_not_scheduled',
          )
        }
        await cancelQueuedJobs(tx, { accountId: row.accountId, queue: NEWSLETTER_START_QUEUE, concurrencyKey: row.id })
        return save(tx, row, { status: 'draft', phase: 'draft', scheduledAt: null, stopReason: null, resumesAt: null })
      })
      return detail(tenant, saved)
    },

    /** POST /newsletters/{id}/duplicate: a new draft with the same name (marked as a copy), text, button, image, segment. */
    async duplicate(tenant: NewslettersTenant, id: string) {
      const source = await require(db, tenant.accountId, id)
      const now = clock.now()
      const name = `${source.name.slice(0, 193)} (copy)`
      const [row] = await db
        .insert(newsletters)
        .values({
          accountId: tenant.accountId,
          id: randomUUID(),
          name,
          subject: source.subject,
          content: source.content,
          channel: 'chat',
          status: 'draft',
          phase: 'draft',
          cta: source.cta,
          headerMedia: source.headerMedia,
          segment: source.segment,
          createdAt: now,
          updatedAt: now,
        })
        .returning()
      return detail(tenant, row)
    },

    /**
     * GET /newsletters/{id}/preview: the text one contact would get (variables filled as the send fills them), its
     * button and whether the contact is a recipient now. Reads only.
     */
    async preview(tenant: NewslettersTenant, id: string, contactId: string) {
      const row = await require(db, tenant.accountId, id)
      if (!UUID.test(contactId)) throw notFound('contact')
      const found = await db.execute(sql`SELECT c.name, c.email, c.phone, c.optin_chat,
          (${segmentSql(row.segment ?? null)}) AS selected
        FROM contacts c WHERE c.account_id = ${tenant.accountId} AND c.id = ${contactId}`)
      const [contact] = rows<{ name: string; email: string; phone: string; optin_chat: string; selected: unknown }>(
        found,
      )
      if (!contact) throw notFound('contact')
      const rendered = renderTemplate({
        texts: [templateBody(row)],
        language: tenant.account.language,
        contact: { name: contact.name, email: contact.email, phone: contact.phone },
        values: {},
      })
      const selected = contact.selected === true || contact.selected === 't'
      const reason = contact.optin_chat !== 'confirmed' ? 'optin_not_confirmed' : selected ? null : 'not_in_segment'
      return {
        newsletter_id: row.id,
        contact_id: contactId,
        text: rendered.ok ? rendered.texts[0] : null,
        missing_variables: rendered.ok ? [] : [...rendered.missing, ...rendered.remaining],
        cta: row.cta ?? null,
        header_media: row.headerMedia
          ? { url: row.headerMedia.url, ...(row.headerMedia.media_id ? { media_id: row.headerMedia.media_id } : {}) }
          : null,
        would_receive: reason === null,
        reason,
      }
    },

    /** POST /app/newsletters/estimate: how many contacts a segment selects now, before it is saved. Reads only. */
    async estimate(tenant: NewslettersTenant, segment: NewsletterSegment | null) {
      if (segment) await assertTagsExist(tenant.accountId, segment)
      return { recipients_estimate: await recipientsEstimate(tenant.accountId, segment), segment }
    },

    /** GET /newsletters/{id}/recipients: its send records (the recipients snapshot) with their status, by contact. */
    async recipients(tenant: NewslettersTenant, id: string, query: { status?: string; limit: number; offset: number }) {
      const row = await require(db, tenant.accountId, id)
      const result = await db.execute(sql`SELECT id, contact_id, status, reason, sent_at, delivered_at, read_at,
          failed_at, skipped_at, created_at FROM template_sends
        WHERE account_id = ${row.accountId} AND origin = 'newsletter' AND origin_id = ${row.id}
          ${query.status ? sql`AND status = ${query.status}` : sql``}
        ORDER BY contact_id LIMIT ${query.limit + 1} OFFSET ${query.offset}`)
      const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string))
      const page = toPage(rows<Record<string, unknown>>(result), query.limit, query.offset)
      return {
        ...page,
        items: page.items.map((r) => ({
          send_id: String(r.id),
          contact_id: String(r.contact_id),
          status: String(r.status),
          reason: (r.reason as string | null) ?? null,
          sent_at: date(r.sent_at),
          delivered_at: date(r.delivered_at),
          read_at: date(r.read_at),
          failed_at: date(r.failed_at),
          skipped_at: date(r.skipped_at),
          created_at: date(r.created_at) as Date,
        })),
      }
    },

    /** GET /newsletters/{id}/clicks: every click on its tracked CTA short links, newest first. */
    async clicks(tenant: NewslettersTenant, id: string, query: { limit: number; offset: number }) {
      const row = await require(db, tenant.accountId, id)
      const result = await db.execute(sql`SELECT k.contact_id, k.clicked_at, l.url
        FROM tracked_links l JOIN link_clicks k ON k.account_id = l.account_id AND k.link_id = l.id
        WHERE l.account_id = ${row.accountId} AND l.newsletter_id = ${row.id}
        ORDER BY k.clicked_at DESC, k.contact_id LIMIT ${query.limit + 1} OFFSET ${query.offset}`)
      const page = toPage(
        rows<{ contact_id: string; clicked_at: string; url: string }>(result),
        query.limit,
        query.offset,
      )
      return {
        ...page,
        items: page.items.map((r) => ({ contact_id: r.contact_id, clicked_at: new Date(r.clicked_at), url: r.url })),
      }
    },

    /**
     * PATCH /app/newsletters/{id}/content: a draft's name, subject and text (at least one). Only a draft: a scheduled
     * one carries its text at the provider already (cancel its schedule first).
     */
    async updateContent(
      tenant: NewslettersTenant,
      id: string,
      input: { name?: string; subject?: string; content?: string },
    ) {
      if (input.name === undefined && input.subject === undefined && input.content === undefined) {
        throw badRequest('Give name, subject or content')
      }
      const subject = input.subject?.trim()
      const content = input.content?.trim()
      const name = input.name?.trim()
      if (subject === '' || content === '' || name === '')
        throw badRequest('name, subject and content must not be blank')
      let dropped: string | null = null
      const saved = await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, true)
        if (row.status !== 'draft') {
          throw badRequest(
            `Only a draft's text can be changed; this newsletter is ${row.status}${row.status === 'scheduled' ? ' (cancel its schedule first)' : ''}`,
            'newsletter_not_draft',
          )
        }
        const change: Partial<NewsletterRow> = {}
        if (name !== undefined) change.name = name
        if (subject !== undefined) change.subject = subject
        if (content !== undefined) change.content = content
        // the text is the template's body: a draft keeps no template, but one left over from a cancelled schedule goes
        if (row.templateId && (subject !== undefined || content !== undefined)) {
          dropped = row.templateId
          change.templateId = null
          change.ctaTracking = null
        }
        return save(tx, row, change)
      })
      if (dropped) await dropTemplate(tenant, dropped)
      return detail(tenant, saved)
    },

    /**
     * GET /newsletters/{id}/statistics: its sends by the furthest status reached with delivery and read rates, and the
     * clicks on its CTA with the click rate (clicking recipients / delivered).
     */
    async statistics(tenant: NewslettersTenant, id: string) {
      const row = await require(db, tenant.accountId, id)
      const result = await db.execute(sql`SELECT status, count(*)::int AS n FROM template_sends
        WHERE account_id = ${row.accountId} AND origin = 'newsletter' AND origin_id = ${row.id} GROUP BY status`)
      const byStatus: Record<string, number> = {}
      for (const r of rows<{ status: string; n: number }>(result)) byStatus[r.status] = Number(r.n)
      const sends = sendFunnel(byStatus)
      const clicked = await db.execute(sql`SELECT count(*)::int AS clicks, count(DISTINCT k.contact_id)::int AS contacts
        FROM tracked_links l JOIN link_clicks k ON k.account_id = l.account_id AND k.link_id = l.id
        WHERE l.account_id = ${row.accountId} AND l.newsletter_id = ${row.id}`)
      const [c] = rows<{ clicks: number; contacts: number }>(clicked)
      const contacts = Number(c?.contacts ?? 0)
      return {
        newsletter_id: row.id,
        name: row.name,
        status: row.status,
        started_at: row.startedAt,
        finished_at: row.finishedAt,
        sends,
        cta_tracking: row.cta ? (row.ctaTracking ?? null) : null,
        clicks: Number(c?.clicks ?? 0),
        clicked_contacts: contacts,
        click_rate: sends.delivered === 0 ? null : Math.round((contacts / sends.delivered) * 10_000) / 10_000,
      }
    },

    /**
     * GET /newsletters/{id}/check: the WhatsApp template check of the newsletter as it would be made when scheduled
     * (subject line and text, the button, the header image), without making or submitting anything.
     */
    async check(tenant: NewslettersTenant, id: string) {
      const row = await require(db, tenant.accountId, id)
      const tracking = row.cta ? ctaTrackingFor(deps.publicUrl, row.content) : null
      const body = templateBody(row)
      const issues = checkTemplate({
        // the template's name is made by Herold when it is scheduled: its rules are not the author's concern
        name: 'newsletter check',
        content: body,
        channel: 'chat',
        subject: null,
        purpose: 'marketing',
        language: tenant.account.language,
        buttons: row.cta
          ? [
              {
                type: 'URL',
                text: row.cta.text,
                url: tracking === 'tracked' ? trackedCtaUrl(deps.publicUrl) : row.cta.url,
              },
            ]
          : [],
        headerMedia: row.headerMedia
          ? { url: row.headerMedia.url, ...(row.headerMedia.mime_type ? { mime_type: row.headerMedia.mime_type } : {}) }
          : null,
      }).filter((i) => i.field !== 'name')
      return {
        newsletter_id: row.id,
        schedulable: issues.length === 0,
        issues: issues.map((i) => ({ code: i.code, field: i.field, message: i.message })),
        body_length: body.length,
        cta_tracking: tracking,
      }
    },

    /** GET /newsletters/{id}/status: the counts of its send records per status; reads only. */
    async status(tenant: NewslettersTenant, id: string) {
      const row = await require(db, tenant.accountId, id)
      const result = await db.execute(sql`SELECT status, reason, count(*)::int AS n FROM template_sends
        WHERE account_id = ${row.accountId} AND origin = 'newsletter' AND origin_id = ${row.id}
        GROUP BY status, reason`)
      const counts = { queued: 0, sent: 0, delivered: 0, read: 0, failed: 0, skipped: 0 }
      const reasons: Record<string, number> = {}
      let recipients = 0
      for (const r of rows<{ status: string; reason: string | null; n: number }>(result)) {
        const n = Number(r.n)
        recipients += n
        const key = (r.status === 'sending' ? 'queued' : r.status) as keyof typeof counts
        counts[key] += n
        if ((r.status === 'skipped' || r.status === 'failed') && r.reason)
          reasons[r.reason] = (reasons[r.reason] ?? 0) + n
      }
      const waiting = row.phase === 'waiting_for_approval' || row.phase === 'waiting_for_sending'
      const daily = await deps.dailyWindow(row.accountId)
      const clicked = await db.execute(sql`SELECT count(*)::int AS clicks, count(DISTINCT k.contact_id)::int AS contacts
        FROM tracked_links l JOIN link_clicks k ON k.account_id = l.account_id AND k.link_id = l.id
        WHERE l.account_id = ${row.accountId} AND l.newsletter_id = ${row.id}`)
      const [ctaClicks] = rows<{ clicks: number; contacts: number }>(clicked)
      return withGermanAliases(
        {
          id: row.id,
          status: row.status,
          phase: row.phase,
          recipients,
          counts: withGermanAliases(counts, ['queued', 'sent', 'delivered', 'read', 'failed', 'skipped']),
          skip_reasons: reasons,
          cta_tracking: row.cta ? (row.ctaTracking ?? null) : null,
          cta_clicks: Number(ctaClicks?.clicks ?? 0),
          cta_clicked_contacts: Number(ctaClicks?.contacts ?? 0),
          daily_limit: daily.limit,
          resumes_at: waiting ? row.resumesAt : null,
          stop_reason: row.stopReason,
          resumable: waiting,
          can_resume: waiting,
        },
        ['phase', 'daily_limit', 'resumes_at', 'stop_reason', 'resumable', 'can_resume'],
      )
    },

    /**
     * The start at the scheduled time: nothing goes out until the template is approved and sending is possible
     * (it waits and looks again); then the recipients are written as a snapshot in batches (confirmed chat opt-in,
     * the segment), each send going through the template send pipeline.
     */
    async start(job: ClaimedJob, context: Pick<JobContext, 'settled'>) {
      const accountId = job.accountId
      const id = String(job.payload.newsletter_id)
      let row = await find(db, accountId, id)
      if (!row || (row.status !== 'scheduled' && row.status !== 'sending')) return
      if (row.status === 'scheduled' && (!row.scheduledAt || row.scheduledAt.getTime() > clock.now().getTime())) return
      const account = await getAccount(db, accountId)
      const tenant = { accountId, account: { language: account.language } }
      const wait = async (phase: NewsletterPhase, reason: string) => {
        const resumesAt = new Date(clock.now().getTime() + RETRY_WAIT_MS)
        await db.transaction(async (tx) => {
          const fresh = await require(tx, accountId, id, true)
          await save(tx, fresh, { phase, stopReason: reason, resumesAt })
          await completeJob(tx, job)
          await enqueue(tx, clock, {
            accountId,
            queue: NEWSLETTER_START_QUEUE,
            payload: { newsletter_id: id },
            concurrencyKey: id,
            runAt: resumesAt,
          })
        })
        context.settled()
      }
      if (row.status === 'scheduled') {
        const template = row.templateId ? await deps.templates.get(tenant, row.templateId).catch(() => null) : null
        if (!template || template.provider_status === 'rejected') {
          await db.transaction(async (tx) => {
            const fresh = await require(tx, accountId, id, true)
            await save(tx, fresh, { phase: 'stopped', stopReason: template ? 'template_rejected' : 'template_missing' })
            await completeJob(tx, job)
          })
          context.settled()
          return
        }
        if (template.provider_status !== 'approved') return wait('waiting_for_approval', 'template_not_approved')
        if (account.status === 'blocked') return wait('waiting_for_sending', 'account_blocked')
        try {
          await deps.requireSendingPossible(accountId)
        } catch (error) {
          if (error instanceof AppError) return wait('waiting_for_sending', error.code)
          throw error
        }
        row = await db.transaction(async (tx) => {
          const fresh = await require(tx, accountId, id, true)
          if (fresh.status !== 'scheduled') return fresh
          return save(tx, fresh, {
            status: 'sending',
            phase: 'fanout',
            stopReason: null,
            resumesAt: null,
            startedAt: clock.now(),
          })
        })
        if (row.status !== 'sending') return
      }
      // the fan-out, batch by batch; a crash continues after the saved cursor (and the unique index skips repeats)
      const templateId = row.templateId as string
      // the first send jobs go with each batch, so sending starts while the rest of the snapshot is written
      while (row.phase === 'fanout') {
        row = await db.transaction(async (tx) => {
          const fresh = await require(tx, accountId, id, true)
          const batch = await fanoutBatch(tx, fresh, templateId)
          const fanoutCursor = batch.last ?? fresh.fanoutCursor
          const feedCursor = fanoutCursor ? await feed(tx, fresh, fanoutCursor) : fresh.feedCursor
          if (batch.picked < FANOUT_BATCH) {
            await enqueue(tx, clock, {
              accountId,
              queue: NEWSLETTER_PROGRESS_QUEUE,
              payload: { newsletter_id: id },
              runAt: new Date(clock.now().getTime() + PROGRESS_EVERY_MS),
            })
            return save(tx, fresh, { phase: 'sending', fanoutCursor, feedCursor })
          }
          return save(tx, fresh, { fanoutCursor, feedCursor })
        })
      }
      await db.execute(sql`ANALYZE template_sends, jobs`)
    },

    /** While sending: when every send record reached a final state the newsletter is sent; else look again later. */
    async progress(job: ClaimedJob, context: Pick<JobContext, 'settled'>) {
      const accountId = job.accountId
      const id = String(job.payload.newsletter_id)
      const row = await find(db, accountId, id)
      if (row?.status !== 'sending' || (row.phase !== 'sending' && row.phase !== 'waiting_for_sending')) return
      // whether a send is still open, and the sends waiting for sending to be possible again (with the reason they
      // wait for): index probes (the origin index by status, the partial index of waiting sends), not a count of all
      // the newsletter's sends, which at a million recipients cost seconds of the database every 5 s
      const result = await db.execute(sql`SELECT o.open, w.waiting, w.reason
        FROM (SELECT EXISTS (SELECT 1 FROM template_sends WHERE account_id = ${accountId} AND origin_id = ${id}
          AND status IN ('queued', 'sending')) AS open) o,
        (SELECT count(*)::int AS waiting, max(reason) AS reason FROM template_sends
          WHERE account_id = ${accountId} AND origin_id = ${id} AND status = 'queued' AND reason IS NOT NULL
            AND reason IN (${sql.join(
              [...WAIT_REASONS].map((r) => sql`${r}`),
              sql`, `,
            )})) w`)
      const counted = rows<{ open: boolean | string; waiting: number; reason: string | null }>(result)[0]
      const open = counted?.open === true || counted?.open === 't' ? 1 : 0
      const waiting = Number(counted?.waiting ?? 0)
      // at the daily limit it resumes by itself when the oldest conversation leaves the 24-hour window
      const daily = waiting > 0 && counted?.reason === 'daily_limit_reached' ? await deps.dailyWindow(accountId) : null
      await db.transaction(async (tx) => {
        const fresh = await require(tx, accountId, id, true)
        if (open === 0) {
          await save(tx, fresh, {
            status: 'sent' as NewsletterStatus,
            phase: 'done',
            stopReason: null,
            resumesAt: null,
            finishedAt: clock.now(),
          })
        } else {
          // the next send jobs, as the sender consumed the ones written ahead
          const feedCursor = await feed(tx, fresh, null)
          const fed = feedCursor !== fresh.feedCursor ? { feedCursor } : {}
          if (waiting > 0) {
            const resumesAt = daily?.resumesAt ?? new Date(clock.now().getTime() + SEND_WAIT_RETRY_MS)
            await save(tx, fresh, {
              phase: 'waiting_for_sending',
              stopReason: counted?.reason ?? null,
              resumesAt,
              ...fed,
            })
          } else if (fresh.phase !== 'sending') {
            await save(tx, fresh, { phase: 'sending', stopReason: null, resumesAt: null, ...fed })
          } else if (feedCursor !== fresh.feedCursor) {
            await save(tx, fresh, fed)
          }
          await enqueue(tx, clock, {
            accountId,
            queue: NEWSLETTER_PROGRESS_QUEUE,
            payload: { newsletter_id: id },
            runAt: new Date(clock.now().getTime() + PROGRESS_EVERY_MS),
          })
        }
        await completeJob(tx, job)
      })
      context.settled()
    },
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

export type NewslettersService = ReturnType<typeof newslettersService>
