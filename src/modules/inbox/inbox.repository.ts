import { and, asc, desc, eq, gt, inArray, sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { conversations, messageClocks, messages } from './inbox.tables.ts'

// Every query here filters on account_id; a repository never decides a rule.

export type ConversationRow = typeof conversations.$inferSelect
export type MessageRow = typeof messages.$inferSelect
export type NewMessageRow = typeof messages.$inferInsert

export async function findConversation(db: Db, accountId: string, id: string): Promise<ConversationRow | undefined> {
  const [row] = await db
    .select()
    .from(conversations)
    .where(and(eq(conversations.accountId, accountId), eq(conversations.id, id)))
  return row
}

/** The contact's conversation on the channel, created when missing; `created` tells which. */
export async function findOrCreateConversation(
  db: Db,
  row: { accountId: string; id: string; contactId: string; channel: string; createdAt: Date },
): Promise<{ conversation: ConversationRow; created: boolean }> {
  const [inserted] = await db
    .insert(conversations)
    .values({ ...row, lastMessageAt: row.createdAt })
    .onConflictDoNothing()
    .returning()
  if (inserted) return { conversation: inserted, created: true }
  const [existing] = await db
    .select()
    .from(conversations)
    .where(
      and(
        eq(conversations.accountId, row.accountId),
        eq(conversations.contactId, row.contactId),
        eq(conversations.channel, row.channel),
      ),
    )
    .for('update')
  return { conversation: existing, created: false }
}

export async function messageByProviderId(
  db: Db,
  accountId: string,
  channel: string,
  providerMessageId: string,
): Promise<MessageRow | undefined> {
  const [row] = await db
    .select()
    .from(messages)
    .where(
      and(
        eq(messages.accountId, accountId),
        eq(messages.channel, channel),
        eq(messages.providerMessageId, providerMessageId),
      ),
    )
  return row
}

/**
 * The time of the account's next message: later than every earlier one (at least 1 ms after the last). The
 * clock row stays locked until the caller commits, so message writers of one account commit in the order of
 * their times and no message can appear later with a time a poller already passed. Take it last in a
 * transaction: it serializes the account's message writes for the rest of it.
 */
export async function nextMessageTime(db: Db, accountId: string, now: Date): Promise<Date> {
  const result = await db.execute(sql`
    INSERT INTO ${messageClocks} (account_id, last_at) VALUES (${accountId}::uuid, ${now.toISOString()}::timestamptz)
    ON CONFLICT (account_id) DO UPDATE
      SET last_at = GREATEST(EXCLUDED.last_at, ${messageClocks}.last_at + interval '1 millisecond')
    RETURNING last_at`)
  const [row] = (result as unknown as { rows: Array<{ last_at: string | Date }> }).rows
  return new Date(row.last_at)
}

/** Inserts unless the provider message id is already stored; undefined then. */
export async function insertMessage(db: Db, row: NewMessageRow): Promise<MessageRow | undefined> {
  const [inserted] = await db.insert(messages).values(row).onConflictDoNothing().returning()
  return inserted
}

export async function touchConversation(
  db: Db,
  accountId: string,
  id: string,
  message: { at: Date; preview: string; direction: 'inbound' | 'outbound'; automated: boolean },
): Promise<void> {
  const inbound = message.direction === 'inbound'
  await db
    .update(conversations)
    .set({
      lastMessageAt: message.at,
      lastMessagePreview: message.preview,
      lastMessageDirection: message.direction,
      ...(inbound
        ? { lastInboundAt: message.at, unreadCount: sql`${conversations.unreadCount} + 1`, automatedOnly: false }
        : message.automated
          ? {}
          : { automatedOnly: false }),
    })
    .where(and(eq(conversations.accountId, accountId), eq(conversations.id, id)))
}

export async function lastInboundAt(db: Db, accountId: string, contactId: string, channel: string) {
  const [row] = await db
    .select({ at: conversations.lastInboundAt })
    .from(conversations)
    .where(
      and(
        eq(conversations.accountId, accountId),
        eq(conversations.contactId, contactId),
        eq(conversations.channel, channel),
      ),
    )
  return row?.at ?? null
}

export async function listConversations(
  db: Db,
  accountId: string,
  filter: { channel?: string; limit: number; offset: number },
) {
  return db
    .select()
    .from(conversations)
    .where(
      and(
        eq(conversations.accountId, accountId),
        filter.channel ? eq(conversations.channel, filter.channel) : undefined,
      ),
    )
    .orderBy(desc(conversations.lastMessageAt), desc(conversations.id))
    .limit(filter.limit + 1)
    .offset(filter.offset)
}

/** The newest limit+1 messages after skipping `offset` from the newest end, newest first. */
export async function conversationMessages(
  db: Db,
  accountId: string,
  conversationId: string,
  page: { limit: number; offset: number },
): Promise<MessageRow[]> {
  return db
    .select()
    .from(messages)
    .where(and(eq(messages.accountId, accountId), eq(messages.conversationId, conversationId)))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(page.limit + 1)
    .offset(page.offset)
}

export async function listMessages(
  db: Db,
  accountId: string,
  filter: {
    direction: 'inbound' | 'outbound'
    createdAfter?: Date
    conversationId?: string
    limit: number
    offset: number
  },
): Promise<MessageRow[]> {
  return db
    .select()
    .from(messages)
    .where(
      and(
        eq(messages.accountId, accountId),
        eq(messages.direction, filter.direction),
        filter.createdAfter ? gt(messages.createdAt, filter.createdAfter) : undefined,
        filter.conversationId ? eq(messages.conversationId, filter.conversationId) : undefined,
      ),
    )
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(filter.limit + 1)
    .offset(filter.offset)
}

/** Outbound messages by provider id, locked: status updates of one message take turns. */
export async function outboundByProviderIds(db: Db, accountId: string, channel: string, ids: string[]) {
  if (ids.length === 0) return []
  return db
    .select()
    .from(messages)
    .where(
      and(
        eq(messages.accountId, accountId),
        eq(messages.channel, channel),
        eq(messages.direction, 'outbound'),
        inArray(messages.providerMessageId, ids),
      ),
    )
    .orderBy(asc(messages.id))
    .for('update')
}

export async function setMessageStatus(
  db: Db,
  accountId: string,
  id: string,
  status: MessageRow['status'],
  errorCode: string | null,
): Promise<void> {
  await db
    .update(messages)
    .set({ status, errorCode })
    .where(and(eq(messages.accountId, accountId), eq(messages.id, id)))
}

export async function deleteContactMessages(db: Db, accountId: string, contactId: string) {
  const removedMessages = await db
    .delete(messages)
    .where(and(eq(messages.accountId, accountId), eq(messages.contactId, contactId)))
    .returning({ id: messages.id })
  const removedConversations = await db
    .delete(conversations)
    .where(and(eq(conversations.accountId, accountId), eq(conversations.contactId, contactId)))
    .returning({ id: conversations.id })
  return { messages: removedMessages.length, conversations: removedConversations.length }
}
