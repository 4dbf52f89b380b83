import { randomBytes } from 'node:crypto'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest } from '../../platform/http/errors.ts'
import { cancelQueuedJobs, enqueue } from '../../platform/jobs/jobs.ts'
import { checkTemplate } from '../templates/index.ts'
import {
  type NewsletterRow,
  type NewslettersDeps,
  type NewslettersTenant,
  newsletterDetail,
  saveNewsletter,
} from './newsletters.context.ts'
import * as repo from './newsletters.repository.ts'
import { ctaTrackingFor, headerMediaReference, templateBody, trackedCtaUrl } from './newsletters.view.ts'
import { NEWSLETTER_START_QUEUE } from './newsletters.worker.ts'

// When a newsletter goes out: its marketing template at the provider, its schedule and its start job.

/**
 * Makes the newsletter's marketing template as it stands (its text, button and header image) and submits it; the
 * template check's problems are a 400 and leave nothing behind.
 */
export async function makeTemplate(
  deps: NewslettersDeps,
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
    await dropTemplate(deps, tenant, template.id)
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
export async function dropTemplate(deps: NewslettersDeps, tenant: NewslettersTenant, templateId: string | null) {
  if (templateId) await deps.templates.delete(tenant, templateId).catch(() => {})
}

/** Removes the newsletter's queued start job. */
export const cancelStart = (tx: Db, row: NewsletterRow) =>
  cancelQueuedJobs(tx, { accountId: row.accountId, queue: NEWSLETTER_START_QUEUE, concurrencyKey: row.id })

async function enqueueStart(deps: NewslettersDeps, tx: Db, row: NewsletterRow, at: Date) {
  await cancelStart(tx, row)
  await enqueue(tx, deps.clock, {
    accountId: row.accountId,
    queue: NEWSLETTER_START_QUEUE,
    payload: { newsletter_id: row.id },
    concurrencyKey: row.id,
    runAt: at,
  })
}

/**
 * draft → scheduled, scheduled → rescheduled. The time must lie in the future and at most a year ahead (422).
 * Makes sure the newsletter's marketing template exists and is submitted: its check's problems are a 400.
 */
export async function scheduleNewsletter(
  deps: NewslettersDeps,
  tenant: NewslettersTenant,
  id: string,
  input: { scheduled_at: string },
) {
  const at = new Date(input.scheduled_at)
  if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(input.scheduled_at.trim()) || Number.isNaN(at.getTime())) {
    throw badRequest('scheduled_at must be a date-time with a zone, such as 2027-03-01T09:00:00+01:00')
  }
  const current = await repo.requireNewsletter(deps.db, tenant.accountId, id)
  if (current.status !== 'draft' && current.status !== 'scheduled') {
    throw new AppError(409, 'newsletter_state', `A ${current.status} newsletter cannot be scheduled`, {
      key: 'newsletter_state',
    })
  }
  const now = deps.clock.now()
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
    : await makeTemplate(deps, tenant, current)
  const saved = await deps.db.transaction(async (tx) => {
    const row = await repo.requireNewsletter(tx, tenant.accountId, id, true)
    if (row.status !== 'draft' && row.status !== 'scheduled') {
      throw new AppError(409, 'newsletter_state', `A ${row.status} newsletter cannot be scheduled`)
    }
    const next = await saveNewsletter(deps, tx, row, {
      status: 'scheduled',
      phase: 'scheduled',
      scheduledAt: at,
      templateId,
      ctaTracking,
      stopReason: null,
      resumesAt: null,
    })
    await enqueueStart(deps, tx, next, at)
    return next
  })
  return newsletterDetail(deps, tenant, saved)
}

/** POST /newsletters/{id}/cancel: a scheduled newsletter back to draft, its start job removed. */
export async function cancelSchedule(deps: NewslettersDeps, tenant: NewslettersTenant, id: string) {
  const saved = await deps.db.transaction(async (tx) => {
    const row = await repo.requireNewsletter(tx, tenant.accountId, id, true)
    if (row.status !== 'scheduled') {
      throw badRequest(
        `Only a scheduled newsletter can be cancelled; this one is ${row.status}`,
        'newsletter_not_scheduled',
      )
    }
    await cancelStart(tx, row)
    return saveNewsletter(deps, tx, row, {
      status: 'draft',
      phase: 'draft',
      scheduledAt: null,
      stopReason: null,
      resumesAt: null,
    })
  })
  return newsletterDetail(deps, tenant, saved)
}

/**
 * GET /newsletters/{id}/check: the WhatsApp template check of the newsletter as it would be made when scheduled
 * (subject line and text, the button, the header image), without making or submitting anything.
 */
export async function checkSchedulable(deps: NewslettersDeps, tenant: NewslettersTenant, id: string) {
  const row = await repo.requireNewsletter(deps.db, tenant.accountId, id)
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
}
