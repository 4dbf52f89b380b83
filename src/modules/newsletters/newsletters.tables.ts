import { index, jsonb, text, uuid } from 'drizzle-orm/pg-core'
import { accountTable } from '../../platform/auth/auth.tables.ts'
import { at, timestamps } from '../../platform/db/columns.ts'
import type { StoredFieldCondition } from '../contacts/contacts.tables.ts'

export const NEWSLETTER_STATUSES = ['draft', 'scheduled', 'sending', 'sent'] as const
export type NewsletterStatus = (typeof NEWSLETTER_STATUSES)[number]

/**
 * Where a scheduled or sending newsletter stands: `scheduled` (waiting for its time), `waiting_for_approval` (its
 * template is not yet approved at the provider), `waiting_for_sending` (sending is not possible: no number, paused,
 * blocked), `fanout` (recipients being written), `sending`, `done`, `stopped` (cannot go out: its template was
 * rejected).
 */
export const NEWSLETTER_PHASES = [
  'draft',
  'scheduled',
  'waiting_for_approval',
  'waiting_for_sending',
  'fanout',
  'sending',
  'done',
  'stopped',
] as const
export type NewsletterPhase = (typeof NEWSLETTER_PHASES)[number]

export interface NewsletterCta {
  text: string
  url: string
}

/**
 * How the CTA button goes out: `tracked` (its address is a short link per recipient, `{publicUrl}/public/t/c/<id>`,
 * so clicks are counted), or the plain CTA address with the reason it could not be tracked: `public_url_not_https`
 * (WhatsApp URL buttons need https and HEROLD_PUBLIC_URL is not), `content_numbered_variables` (the text uses
 * numbered variables, which would share the button's `{{1}}`).
 */
export const CTA_TRACKING = ['tracked', 'public_url_not_https', 'content_numbered_variables'] as const
export type CtaTracking = (typeof CTA_TRACKING)[number]

/** A header image: `media_id` when it is a media library file (its `url` is then the media's public address). */
export interface NewsletterHeaderMedia {
  media_id?: string
  url: string
  mime_type?: string
}

/** A recipient filter by tags; every list optional, an empty filter selects every confirmed contact. */
export interface NewsletterSegment {
  tags_any?: string[]
  tags_all?: string[]
  tags_exclude?: string[]
  /** conditions on custom fields, all of which must hold */
  fields?: StoredFieldCondition[]
}

export const newsletters = accountTable(
  'newsletters',
  {
    name: text('name').notNull(),
    subject: text('subject').notNull(),
    content: text('content').notNull(),
    channel: text('channel', { enum: ['chat'] })
      .notNull()
      .default('chat'),
    status: text('status', { enum: NEWSLETTER_STATUSES }).notNull(),
    phase: text('phase', { enum: NEWSLETTER_PHASES }).notNull(),
    cta: jsonb('cta').$type<NewsletterCta>(),
    /** how the CTA button was made at scheduling (see CTA_TRACKING); null without a CTA or before scheduling */
    ctaTracking: text('cta_tracking', { enum: CTA_TRACKING }),
    /** the header image: a media library file of the account or a public https address */
    headerMedia: jsonb('header_media').$type<NewsletterHeaderMedia>(),
    segment: jsonb('segment').$type<NewsletterSegment>(),
    scheduledAt: at('scheduled_at'),
    /** the marketing template that carries it at the provider (made and submitted when it is scheduled) */
    templateId: uuid('template_id'),
    stopReason: text('stop_reason'),
    resumesAt: at('resumes_at'),
    /** the last contact id written by the fan-out: a restarted fan-out continues after it */
    fanoutCursor: uuid('fanout_cursor'),
    /** the last contact whose send record has its send job (written ahead of the sender, see FEED_AHEAD) */
    feedCursor: uuid('feed_cursor'),
    startedAt: at('started_at'),
    finishedAt: at('finished_at'),
    ...timestamps(),
  },
  (t) => [index('newsletters_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc())],
)
