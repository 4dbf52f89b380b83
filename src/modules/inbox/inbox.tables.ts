import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { accountIdPrimaryKey, accountTable } from '../../platform/auth/auth.tables.ts'
import { at } from '../../platform/db/columns.ts'

export const CONVERSATION_STATUSES = ['open', 'snoozed', 'closed'] as const
export const MESSAGE_STATUSES = ['sent', 'delivered', 'read', 'failed'] as const

/** One conversation per contact and channel. */
export const conversations = accountTable(
  'conversations',
  {
    contactId: uuid('contact_id').notNull(),
    channel: text('channel').notNull(),
    createdAt: at('created_at').notNull(),
    lastMessageAt: at('last_message_at').notNull(),
    lastMessagePreview: text('last_message_preview').notNull().default(''),
    lastMessageDirection: text('last_message_direction', { enum: ['inbound', 'outbound'] }),
    /** the customer's last message: the 24-hour service window runs from here */
    lastInboundAt: at('last_inbound_at'),
    /** only automated campaign messages so far (no real customer reaction) */
    automatedOnly: boolean('automated_only').notNull().default(true),
    unreadCount: integer('unread_count').notNull().default(0),
    /** the built-in AI could not answer: a person should; a person's reply clears it */
    needsPerson: boolean('needs_person').notNull().default(false),
    needsPersonReason: text('needs_person_reason'),
    /**
     * closed by a person, or snoozed (put away until `snoozed_until`, or until the customer writes); the customer's
     * next message opens it again
     */
    status: text('status', { enum: CONVERSATION_STATUSES }).notNull().default('open'),
    closedAt: at('closed_at'),
    /** snoozed: when it comes back by itself (a durable job, inbox.snooze.ts); null with snooze_until_reply */
    snoozedUntil: at('snoozed_until'),
    /** snoozed until the customer writes (no time) */
    snoozeUntilReply: boolean('snooze_until_reply').notNull().default(false),
    /** the member (user id) who handles it; null: nobody */
    assigneeId: uuid('assignee_id'),
  },
  (t) => [
    uniqueIndex('conversations_contact_channel_uq').on(t.accountId, t.contactId, t.channel),
    index('conversations_activity_idx').on(t.accountId, t.lastMessageAt, t.id),
    index('conversations_created_idx').on(t.accountId, t.createdAt, t.id),
    // the views (inbox.views-query.ts): snoozed and closed by activity, and the open ones per assignee (mine,
    // unassigned: assignee_id IS NULL) by activity; the counts read the same, each bounded
    index('conversations_status_idx').on(t.accountId, t.status, t.lastMessageAt, t.id),
    index('conversations_open_assignee_idx')
      .on(t.accountId, t.assigneeId, t.lastMessageAt, t.id)
      .where(sql`${t.status} = 'open'`),
    index('conversations_unread_idx').on(t.accountId, t.unreadCount).where(sql`${t.unreadCount} > 0`),
  ],
)

/** What an outbound template message showed: the template and its buttons (the opt-in confirm button, links). */
export interface SentTemplate {
  id: string
  name: string
  buttons: Array<{ type: string; text: string; url?: string }>
}

export const messages = accountTable(
  'messages',
  {
    conversationId: uuid('conversation_id').notNull(),
    contactId: uuid('contact_id').notNull(),
    channel: text('channel').notNull(),
    direction: text('direction', { enum: ['inbound', 'outbound'] }).notNull(),
    type: text('type').notNull(),
    text: text('text').notNull().default(''),
    mediaUrl: text('media_url').notNull().default(''),
    mediaMime: text('media_mime').notNull().default(''),
    /** the provider's message id (wamid, Message-ID); duplicates of one inbound webhook are stored once */
    providerMessageId: text('provider_message_id'),
    /** outbound delivery status; never moves backwards */
    status: text('status', { enum: MESSAGE_STATUSES }),
    errorCode: text('error_code'),
    automated: boolean('automated').notNull().default(false),
    ai: boolean('ai').notNull().default(false),
    /** an outbound template message: which template and the buttons the customer saw */
    template: jsonb('template').$type<SentTemplate>(),
    /** strictly increasing per account in commit order (see inbox.repository.ts insertMessageInOrder) */
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('messages_provider_id_uq')
      .on(t.accountId, t.channel, t.providerMessageId)
      .where(sql`${t.providerMessageId} IS NOT NULL`),
    index('messages_direction_created_idx').on(t.accountId, t.direction, t.createdAt, t.id),
    index('messages_conversation_created_idx').on(t.accountId, t.conversationId, t.createdAt, t.id),
    index('messages_contact_idx').on(t.accountId, t.contactId),
  ],
)

/**
 * The last message time handed out per account. Taking its row lock orders message writers: a writer holds it
 * until its commit, so commit order and created_at order agree and a poller with created_after never misses one.
 */
export const messageClocks = pgTable('message_clocks', {
  accountId: accountIdPrimaryKey(),
  lastAt: at('last_at').notNull(),
})
