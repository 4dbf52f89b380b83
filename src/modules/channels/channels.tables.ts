import { boolean, index, integer, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
import { accountId, accountTable } from '../../platform/auth/auth.tables.ts'
import { at } from '../../platform/db/columns.ts'

export const CHANNELS = ['chat', 'email'] as const
export const CHAT_PROVIDERS = ['sandbox', 'whatsapp-cloud'] as const
export const EMAIL_PROVIDERS = ['sandbox', 'smtp'] as const

/**
 * One row per account and channel once it was ever connected; a disconnect keeps the row (status
 * `disconnected`) so `was_connected` can be answered. Credentials are AES-256-GCM sealed (platform/secrets.ts).
 */
export const channelConnections = pgTable(
  'channel_connections',
  {
    accountId: accountId(),
    channel: text('channel', { enum: CHANNELS }).notNull(),
    provider: text('provider').notNull(),
    status: text('status', { enum: ['connected', 'disconnected'] }).notNull(),
    /** the business number as shown (E.164) or the sender address */
    address: text('address').notNull().default(''),
    /** whatsapp-cloud: the phone number id; the key of inbound routing and of pacing */
    phoneNumberId: text('phone_number_id').notNull().default(''),
    wabaId: text('waba_id').notNull().default(''),
    credentialsSealed: text('credentials_sealed'),
    coexistence: boolean('coexistence').notNull().default(false),
    /** outbound pacing of this number: 80 by default, at most 1000; coexistence caps it at 20 */
    messagesPerSecond: integer('messages_per_second').notNull().default(80),
    /** new conversations this number may start per rolling 24 hours (WhatsApp's tier); null = unlimited */
    dailyLimit: integer('daily_limit'),
    /** sandbox only: it refuses (130429) the number's messages beyond this many in one second; null = never */
    sandboxRefuseAbove: integer('sandbox_refuse_above'),
    connectedAt: at('connected_at').notNull(),
    disconnectedAt: at('disconnected_at'),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.channel] }),
    index('channel_connections_number_idx').on(t.phoneNumberId),
  ],
)

/** The start of each contact's latest business-initiated conversation: it counts against the daily limit once. */
export const conversationStarts = pgTable(
  'conversation_starts',
  {
    accountId: accountId(),
    contactId: uuid('contact_id').notNull(),
    startedAt: at('started_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.contactId] }),
    index('conversation_starts_window_idx').on(t.accountId, t.startedAt),
  ],
)

/** What the sandbox providers keep: sent chat messages and e-mails (readable), and templates with their decision. */
export const sandboxOutbox = accountTable(
  'sandbox_outbox',
  {
    channel: text('channel', { enum: CHANNELS }).notNull(),
    recipient: text('recipient').notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    createdAt: at('created_at').notNull(),
  },
  (t) => [index('sandbox_outbox_created_idx').on(t.accountId, t.createdAt)],
)

export const sandboxTemplates = pgTable(
  'sandbox_templates',
  {
    accountId: accountId(),
    name: text('name').notNull(),
    language: text('language').notNull(),
    category: text('category').notNull(),
    content: text('content').notNull(),
    status: text('status', { enum: ['APPROVED', 'REJECTED', 'PENDING'] }).notNull(),
    reason: text('reason'),
    createdAt: at('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.name, t.language] })],
)
