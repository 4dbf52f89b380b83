import type { Db } from '../../platform/db/client.ts'
import * as repo from './newsletters.repository.ts'
import type { NewsletterHeaderMedia, NewsletterSegment } from './newsletters.tables.ts'
import { type HeaderMediaInput, newsletterView } from './newsletters.view.ts'
import type { NewsletterDeliveryDeps } from './newsletters.worker.ts'

export type NewsletterRow = repo.NewsletterRow

export interface NewslettersTenant {
  accountId: string
  account: { language: string; timezone?: string }
}

export type { HeaderMediaInput }

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
      header_media?: HeaderMediaInput
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
  resolveHeaderMedia(accountId: string, input: HeaderMediaInput): Promise<NewsletterHeaderMedia>
  templates: NewsletterTemplates
}

/** Writes a change of the newsletter, its updated_at the clock's now. */
export const saveNewsletter = (deps: NewslettersDeps, tx: Db, row: NewsletterRow, change: Partial<NewsletterRow>) =>
  repo.updateNewsletter(tx, row, change, deps.clock.now())

/** A newsletter that is sending or sent can no longer change. */
export const isLocked = (row: NewsletterRow) => row.status === 'sending' || row.status === 'sent'

/** The provider status of the newsletter's template, null without one (or when it is gone). */
export async function templateStatus(
  deps: NewslettersDeps,
  tenant: NewslettersTenant,
  row: NewsletterRow,
): Promise<string | null> {
  if (!row.templateId) return null
  const template = await deps.templates.get(tenant, row.templateId).catch(() => null)
  return template?.provider_status ?? null
}

/** What the segment's field conditions are evaluated against (the account's fields, today in its zone). */
export const segmentFields = (deps: NewslettersDeps, tenant: NewslettersTenant, segment: NewsletterSegment | null) =>
  repo.segmentFieldContext(deps.db, tenant.accountId, segment, deps.clock.now(), tenant.account.timezone)

/** One newsletter as GET /newsletters/{id} answers it: its view and the recipients its segment selects now. */
export async function newsletterDetail(deps: NewslettersDeps, tenant: NewslettersTenant, row: NewsletterRow) {
  const segment = row.segment ?? null
  return {
    ...newsletterView(row, await templateStatus(deps, tenant, row)),
    recipients_estimate: await repo.countRecipients(
      deps.db,
      row.accountId,
      segment,
      await segmentFields(deps, tenant, segment),
    ),
  }
}
