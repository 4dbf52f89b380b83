import type { NewsletterRow } from './newsletters.repository.ts'
import type { CtaTracking, NewsletterHeaderMedia } from './newsletters.tables.ts'

/** A header image as the API takes it: a media library file or a public address. */
export type HeaderMediaInput = { media_id?: string; url?: string; mime_type?: string }

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

/** The template's header image: the library file by its id (resolved again), else the address as given. */
export function headerMediaReference(header: NewsletterHeaderMedia): HeaderMediaInput {
  if (header.media_id) return { media_id: header.media_id }
  return { url: header.url, ...(header.mime_type ? { mime_type: header.mime_type } : {}) }
}

/** A newsletter as the API answers it. */
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
