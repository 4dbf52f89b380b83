import { toPage } from '../../platform/http/pagination.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import { sendFunnel } from '../../platform/http/statistics.ts'
import type { NewslettersDeps, NewslettersTenant } from './newsletters.context.ts'
import * as repo from './newsletters.repository.ts'

// How a newsletter goes and went: its sending status, its statistics and the clicks on its call to action.

/** GET /newsletters/{id}/clicks: every click on its tracked CTA short links, newest first. */
export async function listClicks(
  deps: NewslettersDeps,
  tenant: NewslettersTenant,
  id: string,
  query: { limit: number; offset: number },
) {
  const row = await repo.requireNewsletter(deps.db, tenant.accountId, id)
  const page = toPage(await repo.listClicks(deps.db, row, query), query.limit, query.offset)
  return {
    ...page,
    items: page.items.map((r) => ({ contact_id: r.contact_id, clicked_at: new Date(r.clicked_at), url: r.url })),
  }
}

/**
 * GET /newsletters/{id}/statistics: its sends by the furthest status reached with delivery and read rates, and the
 * clicks on its CTA with the click rate (clicking recipients / delivered).
 */
export async function newsletterStatistics(deps: NewslettersDeps, tenant: NewslettersTenant, id: string) {
  const { db } = deps
  const row = await repo.requireNewsletter(db, tenant.accountId, id)
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
}

/** GET /newsletters/{id}/status: the counts of its send records per status; reads only. */
export async function sendingStatus(deps: NewslettersDeps, tenant: NewslettersTenant, id: string) {
  const { db } = deps
  const row = await repo.requireNewsletter(db, tenant.accountId, id)
  const counts = { queued: 0, sent: 0, delivered: 0, read: 0, failed: 0, skipped: 0 }
  const reasons: Record<string, number> = {}
  let recipients = 0
  for (const r of await repo.sendCountsByReason(db, row)) {
    const n = Number(r.n)
    recipients += n
    const key = (r.status === 'sending' ? 'queued' : r.status) as keyof typeof counts
    counts[key] += n
    if ((r.status === 'skipped' || r.status === 'failed') && r.reason) reasons[r.reason] = (reasons[r.reason] ?? 0) + n
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
}
