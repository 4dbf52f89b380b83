import { randomUUID } from 'node:crypto'
import { badRequest } from '../../platform/http/errors.ts'
import { type Page, toPage } from '../../platform/http/pagination.ts'
import { dropQueuedSends } from '../messaging/index.ts'
import { assertSegment } from './newsletters.audience.ts'
import {
  type HeaderMediaInput,
  isLocked,
  type NewsletterRow,
  type NewslettersDeps,
  type NewslettersTenant,
  newsletterDetail,
  saveNewsletter,
  templateStatus,
} from './newsletters.context.ts'
import * as repo from './newsletters.repository.ts'
import { cancelStart, dropTemplate, makeTemplate } from './newsletters.scheduling.ts'
import type { NewsletterCta, NewsletterSegment } from './newsletters.tables.ts'
import { newsletterView } from './newsletters.view.ts'

// What a newsletter says and to whom: its drafts, their text, button, header image and segment, copies and deletion.

export async function listNewsletterPage(
  deps: NewslettersDeps,
  tenant: NewslettersTenant,
  query: { limit: number; offset: number },
): Promise<Page<ReturnType<typeof newsletterView>>> {
  const found = await repo.listNewsletters(deps.db, tenant.accountId, query.limit + 1, query.offset)
  const page = toPage(found, query.limit, query.offset)
  const items = []
  for (const row of page.items) items.push(newsletterView(row, await templateStatus(deps, tenant, row)))
  return { ...page, items }
}

export async function createDraft(
  deps: NewslettersDeps,
  tenant: NewslettersTenant,
  input: { name?: string; subject: string; content: string; header_media?: HeaderMediaInput | null },
) {
  const now = deps.clock.now()
  const subject = input.subject.trim()
  const content = input.content.trim()
  if (subject === '' || content === '') throw badRequest('subject and content must not be blank')
  const headerMedia = input.header_media ? await deps.resolveHeaderMedia(tenant.accountId, input.header_media) : null
  const row = await repo.insertNewsletter(deps.db, {
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
  return newsletterDetail(deps, tenant, row)
}

export async function getNewsletter(deps: NewslettersDeps, tenant: NewslettersTenant, id: string) {
  return newsletterDetail(deps, tenant, await repo.requireNewsletter(deps.db, tenant.accountId, id))
}

/** PATCH /newsletters/{id}: its call to action, segment or header image; a changed button or image needs a new template. */
export async function updateSettings(
  deps: NewslettersDeps,
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
  if (input.segment) await assertSegment(deps, tenant.accountId, input.segment)
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
  const current = await repo.requireNewsletter(deps.db, tenant.accountId, id)
  if (isLocked(current)) {
    throw badRequest(`The newsletter is ${current.status} and can no longer be changed`, 'newsletter_locked')
  }
  const replacement =
    current.status === 'scheduled' && templateChanged(current)
      ? await makeTemplate(deps, tenant, changed(current))
      : null
  const dropped: string[] = []
  let saved: NewsletterRow
  try {
    saved = await deps.db.transaction(async (tx) => {
      const row = await repo.requireNewsletter(tx, tenant.accountId, id, true)
      if (isLocked(row))
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
      return saveNewsletter(deps, tx, row, change)
    })
  } catch (error) {
    if (replacement) await dropTemplate(deps, tenant, replacement.templateId)
    throw error
  }
  // a replacement the newsletter did not take (it was cancelled meanwhile) goes too
  if (replacement && saved.templateId !== replacement.templateId) dropped.push(replacement.templateId)
  for (const templateId of dropped) await dropTemplate(deps, tenant, templateId)
  return newsletterDetail(deps, tenant, saved)
}

/**
 * PATCH /app/newsletters/{id}/content: a draft's name, subject and text (at least one). Only a draft: a scheduled
 * one carries its text at the provider already (cancel its schedule first).
 */
export async function updateDraftContent(
  deps: NewslettersDeps,
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
  if (subject === '' || content === '' || name === '') throw badRequest('name, subject and content must not be blank')
  let dropped: string | null = null
  const saved = await deps.db.transaction(async (tx) => {
    const row = await repo.requireNewsletter(tx, tenant.accountId, id, true)
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
    return saveNewsletter(deps, tx, row, change)
  })
  if (dropped) await dropTemplate(deps, tenant, dropped)
  return newsletterDetail(deps, tenant, saved)
}

/** POST /newsletters/{id}/duplicate: a new draft with the same name (marked as a copy), text, button, image, segment. */
export async function duplicateAsDraft(deps: NewslettersDeps, tenant: NewslettersTenant, id: string) {
  const source = await repo.requireNewsletter(deps.db, tenant.accountId, id)
  const now = deps.clock.now()
  const name = `${source.name.slice(0, 193)} (copy)`
  const row = await repo.insertNewsletter(deps.db, {
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
  return newsletterDetail(deps, tenant, row)
}

/** DELETE /newsletters/{id}: a draft or scheduled newsletter, its queued jobs and sends first, then its template. */
export async function removeNewsletter(deps: NewslettersDeps, tenant: NewslettersTenant, id: string) {
  let template: string | null = null
  await deps.db.transaction(async (tx) => {
    const row = await repo.requireNewsletter(tx, tenant.accountId, id, true)
    if (isLocked(row)) throw badRequest(`The newsletter is ${row.status} and cannot be deleted`, 'newsletter_locked')
    // queued send jobs first (the spec), then the newsletter
    await cancelStart(tx, row)
    await dropQueuedSends(tx, { accountId: row.accountId, origin: 'newsletter', originId: row.id })
    await repo.deleteNewsletter(tx, row.accountId, row.id)
    template = row.templateId
  })
  await dropTemplate(deps, tenant, template)
  return { id, deleted: true as const }
}
