import { randomBytes, randomUUID } from 'node:crypto'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { type Page, toPage } from '../../platform/http/pagination.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import { sendFunnel } from '../../platform/http/statistics.ts'
import { cancelQueuedJobs, enqueue } from '../../platform/jobs/jobs.ts'
import { checkFieldConditions, fieldDefinitionsOf } from '../contacts/index.ts'
import { dropQueuedSends } from '../messaging/index.ts'
import {
  checkTemplate,
  customFieldTexts,
  mayUseCustomFields,
  renderTemplate,
  unfilledVariables,
  valueLanguage,
} from '../templates/index.ts'
import * as repo from './newsletters.repository.ts'
import type { CtaTracking, NewsletterCta, NewsletterHeaderMedia, NewsletterSegment } from './newsletters.tables.ts'
import { NEWSLETTER_START_QUEUE, type NewsletterDeliveryDeps, newsletterDelivery } from './newsletters.worker.ts'

export type NewsletterRow = repo.NewsletterRow

export interface NewslettersTenant {
  accountId: string
  account: { language: string; timezone?: string }
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

export interface NewslettersDeps extends NewsletterDeliveryDeps {
  /** HEROLD_PUBLIC_URL: the tracked CTA button's short links live under it */
  publicUrl: string
  /** a header image by media library id (of the account) or public address (the media module) */
  resolveHeaderMedia(
    accountId: string,
    input: { media_id?: string; url?: string; mime_type?: string },
  ): Promise<NewsletterHeaderMedia>
  templates: NewsletterTemplates
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
  const delivery = newsletterDelivery(deps)
  const require = repo.requireNewsletter
  const save = (tx: Db, row: NewsletterRow, change: Partial<NewsletterRow>) =>
    repo.updateNewsletter(tx, row, change, clock.now())

  async function templateStatus(tenant: NewslettersTenant, row: NewsletterRow): Promise<string | null> {
    if (!row.templateId) return null
    const template = await deps.templates.get(tenant, row.templateId).catch(() => null)
    return template?.provider_status ?? null
  }

  const fieldsOf = (tenant: NewslettersTenant, segment: NewsletterSegment | null) =>
    repo.segmentFieldContext(db, tenant.accountId, segment, clock.now(), tenant.account.timezone)

  async function detail(tenant: NewslettersTenant, row: NewsletterRow) {
    const segment = row.segment ?? null
    return {
      ...newsletterView(row, await templateStatus(tenant, row)),
      recipients_estimate: await repo.countRecipients(db, row.accountId, segment, await fieldsOf(tenant, segment)),
    }
  }

  /** 400 naming the segment's tags that no contact of the account carries, or a field condition that does not fit. */
  async function assertSegment(accountId: string, segment: NewsletterSegment) {
    await assertTagsExist(accountId, segment)
    await checkFieldConditions(db, accountId, segment.fields, 'segment.fields')
  }

  /** 400 naming the segment's tags that no contact of the account carries. */
  async function assertTagsExist(accountId: string, segment: NewsletterSegment) {
    const named = [
      ...new Set([...(segment.tags_any ?? []), ...(segment.tags_all ?? []), ...(segment.tags_exclude ?? [])]),
    ]
    if (named.length === 0) return
    const known = await repo.knownTags(db, accountId, named)
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

  return {
    async list(
      tenant: NewslettersTenant,
      query: { limit: number; offset: number },
    ): Promise<Page<ReturnType<typeof newsletterView>>> {
      const found = await repo.listNewsletters(db, tenant.accountId, query.limit + 1, query.offset)
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
      const row = await repo.insertNewsletter(db, {
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
      if (input.segment) await assertSegment(tenant.accountId, input.segment)
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
        await dropQueuedSends(tx, { accountId: row.accountId, origin: 'newsletter', originId: row.id })
        await repo.deleteNewsletter(tx, row.accountId, row.id)
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
      const row = await repo.insertNewsletter(db, {
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
      return detail(tenant, row)
    },

    /**
     * GET /newsletters/{id}/preview: the text one contact would get (variables filled as the send fills them), its
     * button and whether the contact is a recipient now. Reads only.
     */
    async preview(tenant: NewslettersTenant, id: string, contactId: string) {
      const row = await require(db, tenant.accountId, id)
      if (!repo.isUuid(contactId)) throw notFound('contact')
      const segment = row.segment ?? null
      const contact = await repo.previewContact(
        db,
        tenant.accountId,
        contactId,
        segment,
        await fieldsOf(tenant, segment),
      )
      if (!contact) throw notFound('contact')
      const texts = [templateBody(row)]
      const definitions = mayUseCustomFields(texts) ? await fieldDefinitionsOf(db, tenant.accountId) : []
      const language = tenant.account.language
      const rendered = renderTemplate({
        texts,
        language,
        contact: {
          name: contact.name,
          email: contact.email,
          phone: contact.phone,
          customFields: customFieldTexts(definitions, contact.fields, valueLanguage(contact.language, language)),
        },
        values: {},
        customFields: definitions.map((d) => d.key),
      })
      const selected = contact.selected === true || contact.selected === 't'
      const reason = contact.optin_chat !== 'confirmed' ? 'optin_not_confirmed' : selected ? null : 'not_in_segment'
      return {
        newsletter_id: row.id,
        contact_id: contactId,
        text: rendered.ok ? rendered.texts[0] : null,
        missing_variables: rendered.ok ? [] : unfilledVariables(rendered),
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
      if (segment) await assertSegment(tenant.accountId, segment)
      const fields = await fieldsOf(tenant, segment)
      return { recipients_estimate: await repo.countRecipients(db, tenant.accountId, segment, fields), segment }
    },

    /** GET /newsletters/{id}/recipients: its send records (the recipients snapshot) with their status, by contact. */
    async recipients(tenant: NewslettersTenant, id: string, query: { status?: string; limit: number; offset: number }) {
      const row = await require(db, tenant.accountId, id)
      const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string))
      const page = toPage(await repo.listRecipients(db, row, query), query.limit, query.offset)
      return {
        ...page,
        items: page.items.map((r) => ({
          send_id: String(r.id),
          contact_id: String(r.contact_id),
          status: String(r.status),
          reason: (r.reason as string | null) ?? null,
          reason_detail: (r.reason_detail as string | null) ?? null,
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
      const page = toPage(await repo.listClicks(db, row, query), query.limit, query.offset)
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
      const byStatus: Record<string, number> = {}
      for (const r of await repo.sendCountsByStatus(db, row)) byStatus[r.status] = Number(r.n)
      const sends = sendFunnel(byStatus)
      const c = await repo.ctaClickCounts(db, row)
      const contacts = c.contacts
      return {
        newsletter_id: row.id,
        name: row.name,
        status: row.status,
        started_at: row.startedAt,
        finished_at: row.finishedAt,
        sends,
        cta_tracking: row.cta ? (row.ctaTracking ?? null) : null,
        clicks: c.clicks,
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
      const counts = { queued: 0, sent: 0, delivered: 0, read: 0, failed: 0, skipped: 0 }
      const reasons: Record<string, number> = {}
      let recipients = 0
      for (const r of await repo.sendCountsByReason(db, row)) {
        const n = Number(r.n)
        recipients += n
        const key = (r.status === 'sending' ? 'queued' : r.status) as keyof typeof counts
        counts[key] += n
        if ((r.status === 'skipped' || r.status === 'failed') && r.reason)
          reasons[r.reason] = (reasons[r.reason] ?? 0) + n
      }
      const waiting = row.phase === 'waiting_for_approval' || row.phase === 'waiting_for_sending'
      const daily = await deps.dailyWindow(row.accountId)
      const ctaClicks = await repo.ctaClickCounts(db, row)
      return withGermanAliases(
        {
          id: row.id,
          status: row.status,
          phase: row.phase,
          recipients,
          counts: withGermanAliases(counts, ['queued', 'sent', 'delivered', 'read', 'failed', 'skipped']),
          skip_reasons: reasons,
          cta_tracking: row.cta ? (row.ctaTracking ?? null) : null,
          cta_clicks: ctaClicks.clicks,
          cta_clicked_contacts: ctaClicks.contacts,
          daily_limit: daily.limit,
          resumes_at: waiting ? row.resumesAt : null,
          stop_reason: row.stopReason,
          resumable: waiting,
          can_resume: waiting,
        },
        ['phase', 'daily_limit', 'resumes_at', 'stop_reason', 'resumable', 'can_resume'],
      )
    },
    start: delivery.start,
    progress: delivery.progress,
  }
}

export type NewslettersService = ReturnType<typeof newslettersService>
