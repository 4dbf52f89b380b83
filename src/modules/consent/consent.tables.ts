import { foreignKey, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { accountIdPrimaryKey, accountRowKey } from '../../platform/auth/auth.tables.ts'
import { at, createdAt, updatedAt } from '../../platform/db/columns.ts'
import { contacts } from '../contacts/contacts.tables.ts'

/** An account's consent settings; a missing row or a null column means the default (consent.rules.ts). */
export const consentSettings = pgTable('consent_settings', {
  accountId: accountIdPrimaryKey(),
  startKeywords: jsonb('start_keywords').$type<string[]>(),
  stopKeywords: jsonb('stop_keywords').$type<string[]>(),
  stopConfirmation: text('stop_confirmation'),
  landingConsentText: text('landing_consent_text'),
  /** the landing page's logo: a file of the media library (its id, and its public address when it was chosen) */
  landingLogo: jsonb('landing_logo').$type<{ media_id: string; url: string }>(),
  updatedAt: updatedAt(),
})

export const CHAT_OPTIN_STATES = ['queued', 'sending', 'sent', 'no_template', 'failed'] as const

/**
 * The chat double opt-in of a contact in progress: whether the confirmation template went out, and the confirm
 * button that answers it (language-bound). `reason` says why it did not go out.
 */
export const chatOptinRequests = pgTable(
  'chat_optin_requests',
  {
    accountId: uuid('account_id').notNull(),
    contactId: uuid('contact_id').notNull(),
    state: text('state', { enum: CHAT_OPTIN_STATES }).notNull(),
    /** what started it: the inbound message id (keyword) or null (landing page) */
    inboundMessageId: uuid('inbound_message_id'),
    templateId: uuid('template_id'),
    language: text('language'),
    buttonText: text('button_text'),
    /** the outbound message of the confirmation template */
    messageId: uuid('message_id'),
    reason: text('reason'),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.contactId] }),
    foreignKey({ columns: [t.accountId, t.contactId], foreignColumns: [contacts.accountId, contacts.id] }).onDelete(
      'cascade',
    ),
  ],
)

/**
 * The links of the e-mail double opt-in: only the SHA-256 of the random token is kept; it confirms the address it
 * was sent to and nothing else, once, before it expires.
 */
export const emailOptinTokens = pgTable(
  'email_optin_tokens',
  {
    accountId: uuid('account_id').notNull(),
    id: uuid('id').notNull(),
    contactId: uuid('contact_id').notNull(),
    tokenHash: text('token_hash').notNull(),
    email: text('email').notNull(),
    expiresAt: at('expires_at').notNull(),
    usedAt: at('used_at'),
    createdAt: createdAt(),
  },
  (t) => [
    accountRowKey(t),
    uniqueIndex('email_optin_tokens_hash_uq').on(t.tokenHash),
    foreignKey({ columns: [t.accountId, t.contactId], foreignColumns: [contacts.accountId, contacts.id] }).onDelete(
      'cascade',
    ),
  ],
)
