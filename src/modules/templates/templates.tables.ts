import { boolean, index, jsonb, text } from 'drizzle-orm/pg-core'
import { accountTable } from '../../platform/auth/auth.tables.ts'
import { at, createdAt, updatedAt } from '../../platform/db/columns.ts'
import { CHANNELS, type HeaderMedia, PURPOSES, TEMPLATE_STATES, type TemplateButton } from './templates.check.ts'

/**
 * One message template. `state` is our lifecycle; `provider_status` is the provider's own word for it, null until
 * submitted and again after any content change of a chat template. `provider_name` is derived from `name`
 * (templates.check.ts providerName) and, with `language`, identifies the template at the provider.
 */
export const templates = accountTable(
  'templates',
  {
    name: text('name').notNull(),
    providerName: text('provider_name').notNull(),
    content: text('content').notNull(),
    channel: text('channel', { enum: CHANNELS }).notNull().default('chat'),
    /** email templates only */
    subject: text('subject'),
    purpose: text('purpose', { enum: PURPOSES }).notNull().default('marketing'),
    language: text('language').notNull(),
    buttons: jsonb('buttons').$type<TemplateButton[]>().notNull().default([]),
    headerMedia: jsonb('header_media').$type<HeaderMedia>(),
    state: text('state', { enum: TEMPLATE_STATES }).notNull().default('draft'),
    providerStatus: text('provider_status'),
    /** the provider's id of the template last submitted; kept across edits so a resubmission can edit it */
    providerTemplateId: text('provider_template_id'),
    /** the provider's rejection reason code (WhatsApp: INVALID_FORMAT, PROMOTIONAL, …) */
    rejectionReason: text('rejection_reason'),
    /** managed by Herold (opt-in flows and the like): never sendable, changed or deleted by callers */
    system: boolean('system').notNull().default(false),
    submittedAt: at('submitted_at'),
    providerStatusAt: at('provider_status_at'),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    // ascending: a backward scan serves ORDER BY created_at DESC, id DESC
    index('templates_created_idx').on(t.accountId, t.createdAt, t.id),
    index('templates_provider_name_idx').on(t.accountId, t.providerName, t.language),
  ],
)
