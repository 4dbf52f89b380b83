import { sql } from 'drizzle-orm'
import {
  boolean,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core'
import { accountId, accountIdPrimaryKey, accountRowKey, accountTable } from '../../platform/auth/auth.tables.ts'
import { at, timestamps } from '../../platform/db/columns.ts'

/**
 * Messages counted against the plan's monthly quota, one row per account and calendar month (`YYYY-MM` in the
 * account's timezone). A send reserves a unit with one conditional upsert, so two concurrent sends can never
 * both take the last free unit.
 */
export const messageQuota = pgTable(
  'message_quota',
  {
    accountId: accountId(),
    month: text('month').notNull(),
    used: integer('used').notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.month] })],
)

/** A short link `{publicUrl}/public/t/c/<id>` put into a sent text for one contact. */
export const trackedLinks = pgTable(
  'tracked_links',
  {
    accountId: accountId(),
    /** random and global: the public redirect knows only the id */
    id: text('id').notNull(),
    contactId: uuid('contact_id').notNull(),
    url: text('url').notNull(),
    /** the newsletter whose CTA button this link is (one per recipient, written with its send job); null elsewhere */
    newsletterId: uuid('newsletter_id'),
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    accountRowKey(t),
    uniqueIndex('tracked_links_id_uq').on(t.id),
    index('tracked_links_newsletter_idx').on(t.accountId, t.newsletterId).where(sql`${t.newsletterId} IS NOT NULL`),
  ],
)

/** One row per click on a short link: which link, which contact, when. */
export const linkClicks = pgTable(
  'link_clicks',
  {
    accountId: accountId(),
    linkId: text('link_id').notNull(),
    contactId: uuid('contact_id').notNull(),
    clickedAt: at('clicked_at').notNull(),
  },
  (t) => [
    index('link_clicks_link_idx').on(t.accountId, t.linkId),
    foreignKey({
      columns: [t.accountId, t.linkId],
      foreignColumns: [trackedLinks.accountId, trackedLinks.id],
    }).onDelete('cascade'),
  ],
)

export const SEND_STATUSES = ['queued', 'sending', 'sent', 'delivered', 'read', 'failed', 'skipped'] as const
export type SendStatus = (typeof SEND_STATUSES)[number]
export const SEND_ORIGINS = ['api', 'newsletter', 'followup', 'automation'] as const
export type SendOrigin = (typeof SEND_ORIGINS)[number]

/**
 * A template send queued by POST /messages (the spec's send record). `sending` is internal (shown as `queued`): the
 * worker sets it, with its attempt token, in the transaction that reserves the quota unit, right before the provider
 * call. A send found in `sending` by a later attempt was interrupted mid-call and is never sent again (see
 * messaging.sends.ts). The caller's variable values are kept, not the rendered text: the worker renders with the
 * contact as it is at send time.
 */
export const templateSends = accountTable(
  'template_sends',
  {
    contactId: uuid('contact_id').notNull(),
    templateId: uuid('template_id').notNull(),
    variables: jsonb('variables').$type<Record<string, string>>().notNull().default({}),
    status: text('status', { enum: SEND_STATUSES }).notNull(),
    /** why a send was skipped or failed */
    reason: text('reason'),
    /** what the reason is about: the variables a skipped send had no value for (field_missing, placeholder_remains) */
    reasonDetail: text('reason_detail'),
    /** the provider's error code of a failed send */
    errorCode: text('error_code'),
    /** the job lease that moved it to `sending`; its finishing write checks it */
    attemptToken: uuid('attempt_token'),
    attempts: integer('attempts').notNull().default(0),
    /** the quota month a unit was reserved in (set while a unit is held) */
    quotaMonth: text('quota_month'),
    /** the stored outbound message in the inbox */
    messageId: uuid('message_id'),
    providerMessageId: text('provider_message_id'),
    ...timestamps(),
    sendingAt: at('sending_at'),
    sentAt: at('sent_at'),
    deliveredAt: at('delivered_at'),
    readAt: at('read_at'),
    failedAt: at('failed_at'),
    skippedAt: at('skipped_at'),
    /** what queued it: `api` (POST /messages), `newsletter`, `followup`, `automation` */
    origin: text('origin', { enum: SEND_ORIGINS }).notNull().default('api'),
    /** the newsletter, follow-up step or automation run that queued it (null for `api`) */
    originId: uuid('origin_id'),
    /** when a campaign's marketing send went to the provider: what the frequency cap counts (migration 0082) */
    cappedAt: at('capped_at'),
  },
  (t) => [
    index('template_sends_origin_idx').on(t.accountId, t.originId, t.status).where(sql`${t.originId} IS NOT NULL`),
    index('template_sends_contact_idx').on(t.accountId, t.contactId),
    index('template_sends_message_idx').on(t.accountId, t.messageId).where(sql`${t.messageId} IS NOT NULL`),
    // the campaign sends waiting for sending to be possible again (a newsletter's progress check; migration 0047)
    index('template_sends_waiting_idx')
      .on(t.accountId, t.originId)
      .where(sql`${t.status} = 'queued' AND ${t.reason} IS NOT NULL`),
    // the sends by their outcome's time, per account: herold status's last hour (migration 0068)
    index('template_sends_outcome_idx').on(t.accountId, sql`(coalesce(${t.failedAt}, ${t.skippedAt}, ${t.sentAt}))`),
    // a batch's contacts' marketing sends since T, for the frequency cap (migration 0082)
    index('template_sends_capped_idx').on(t.accountId, t.contactId, t.cappedAt).where(sql`${t.cappedAt} IS NOT NULL`),
  ],
)

/**
 * The frequency cap and quiet hours of an account (migration 0081). An account without a row has the defaults of a
 * new account (messaging.protection.ts); the accounts that existed before got a row with both off.
 */
export const sendingSettings = pgTable('sending_settings', {
  accountId: accountIdPrimaryKey(),
  capEnabled: boolean('cap_enabled').notNull().default(true),
  capMessages: integer('cap_messages').notNull().default(1),
  capWindowHours: integer('cap_window_hours').notNull().default(16),
  quietEnabled: boolean('quiet_enabled').notNull().default(false),
  /** local wall-clock time `HH:MM` of the contact */
  quietFrom: text('quiet_from').notNull().default('20:00'),
  quietTo: text('quiet_to').notNull().default('08:00'),
  updatedAt: at('updated_at').notNull().defaultNow(),
})
