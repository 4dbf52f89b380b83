import { and, desc, eq } from 'drizzle-orm'
import { memberships } from '../../platform/auth/people.tables.ts'
import type { Clock } from '../../platform/clock.ts'
import { ofContact } from '../../platform/db/account-rows.ts'
import type { Db } from '../../platform/db/client.ts'
import { badRequest, notFound } from '../../platform/http/errors.ts'
import { consentHistory, contactNames, findContact } from '../contacts/index.ts'
import { handOutQueue } from './inbox.assignment.ts'
import { actorOf, type InboxChange, publishInboxChanges } from './inbox.live.ts'
import { cancelWake, type SnoozeChoice, snoozeChoice, snoozeIn } from './inbox.snooze.ts'
import { conversations, messages } from './inbox.tables.ts'
import type { InboxServiceDeps, InboxTenant } from './inbox.types.ts'
import { conversationView, messageView } from './inbox.views.ts'

/**
 * What a person does with a conversation in the inbox beyond reading it (close, reopen, assign, mark read), one
 * message by id, and a contact's activity timeline. Every query names the account; another account's id is a 404.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

async function conversationRow(db: Db, accountId: string, id: string) {
  const [row] = UUID.test(id)
    ? await db
        .select()
        .from(conversations)
        .where(and(eq(conversations.accountId, accountId), eq(conversations.id, id)))
    : []
  if (!row) throw notFound('conversation')
  return row
}

async function viewOf(db: Db, accountId: string, row: typeof conversations.$inferSelect) {
  const names = await contactNames(db, accountId, [row.contactId])
  return conversationView(row, names.get(row.contactId) ?? '')
}

/** One conversation with its contact, last message, unread count, status and assignee. */
export async function getConversation(db: Db, accountId: string, id: string) {
  return viewOf(db, accountId, await conversationRow(db, accountId, id))
}

/** Changes a conversation; the account's open consoles hear of it (`live`) at the commit. */
async function change(
  db: Db,
  accountId: string,
  id: string,
  set: Partial<typeof conversations.$inferInsert>,
  live: { type: InboxChange['type']; actor: string | null },
) {
  await conversationRow(db, accountId, id)
  const row = await db.transaction(async (tx) => {
    const [updated] = await tx
      .update(conversations)
      .set(set)
      .where(and(eq(conversations.accountId, accountId), eq(conversations.id, id)))
      .returning()
    if (updated)
      await publishInboxChanges(tx, accountId, [{ type: live.type, conversation_id: id, actor_id: live.actor }])
    return updated
  })
  if (!row) throw notFound('conversation')
  return viewOf(db, accountId, row)
}

/**
 * Closes a conversation (done for now); closing a closed one keeps its first closed_at. Its assignee's room goes to
 * the next conversation waiting for automatic assignment, in the same transaction.
 */
export async function closeConversation(
  db: Db,
  clock: Clock,
  accountId: string,
  id: string,
  actor: string | null = null,
) {
  return db.transaction(async (tx) => {
    const row = await lockedRow(tx, accountId, id)
    if (row.status === 'closed') return viewOf(tx, accountId, row)
    // a snoozed one closed: its wake-up goes
    if (row.status === 'snoozed') await cancelWake(tx, accountId, id)
    const closed = await change(
      tx,
      accountId,
      id,
      { status: 'closed', closedAt: clock.now(), snoozedUntil: null, snoozeUntilReply: false },
      { type: 'status', actor },
    )
    // an open one's assignee gets room (a snoozed one's had it already)
    if (row.assigneeId !== null && row.status === 'open') await handOutQueue(tx, clock, accountId)
    return closed
  })
}

/** Opens a closed or snoozed conversation again (the customer's next message does the same); a snooze's wake-up goes. */
export async function reopenConversation(db: Db, accountId: string, id: string, actor: string | null = null) {
  return db.transaction(async (tx) => {
    const row = await lockedRow(tx, accountId, id)
    if (row.status === 'snoozed') await cancelWake(tx, accountId, id)
    return change(
      tx,
      accountId,
      id,
      { status: 'open', closedAt: null, snoozedUntil: null, snoozeUntilReply: false },
      { type: 'status', actor },
    )
  })
}

/**
 * Snoozes a conversation until a time in the future ({until}) or until the customer writes ({until_reply: true}); a
 * snooze given again replaces the earlier one (its wake-up is cancelled). 400 naming the field otherwise.
 */
export async function snoozeConversation(
  db: Db,
  clock: Clock,
  accountId: string,
  id: string,
  body: { until?: string; until_reply?: boolean },
  actor: string | null = null,
) {
  const choice: SnoozeChoice = snoozeChoice(body, clock.now())
  return db.transaction(async (tx) => {
    const row = await lockedRow(tx, accountId, id)
    const snoozed = await snoozeIn(
      tx,
      clock,
      { accountId, conversationId: id, choice, assigneeId: row.status === 'open' ? row.assigneeId : null },
      actor,
    )
    return viewOf(tx, accountId, snoozed ?? row)
  })
}

/** The conversation's row, locked for a change of its status (a wake job waits for it, then sees the change). */
async function lockedRow(tx: Db, accountId: string, id: string) {
  const [row] = UUID.test(id)
    ? await tx
        .select()
        .from(conversations)
        .where(and(eq(conversations.accountId, accountId), eq(conversations.id, id)))
        .for('update')
    : []
  if (!row) throw notFound('conversation')
  return row
}

/**
 * Assigns a conversation to an active member of this account, or to nobody (null). The previous assignee's room goes
 * to the next conversation waiting for automatic assignment, in the same transaction.
 */
export async function assignConversation(
  db: Db,
  clock: Clock,
  accountId: string,
  id: string,
  memberId: string | null,
  actor: string | null = null,
) {
  return db.transaction(async (tx) => {
    const before = await conversationRow(tx, accountId, id)
    const assigned = await assignIn(tx, accountId, id, memberId, actor)
    if (before.assigneeId !== null && before.assigneeId !== memberId) await handOutQueue(tx, clock, accountId)
    return assigned
  })
}

async function assignIn(db: Db, accountId: string, id: string, memberId: string | null, actor: string | null) {
  if (memberId !== null) {
    const [member] = UUID.test(memberId)
      ? await db
          .select({ status: memberships.status })
          .from(memberships)
          .where(and(eq(memberships.accountId, accountId), eq(memberships.userId, memberId)))
      : []
    if (!member) throw notFound('team member')
    if (member.status !== 'active') {
      throw badRequest('Only an active member (who accepted the invitation) can be assigned', 'member_not_active')
    }
  }
  return change(db, accountId, id, { assigneeId: memberId }, { type: 'assignment', actor })
}

/** Marks every inbound message of a conversation as read in the inbox (unread_count 0). */
export async function markConversationRead(db: Db, accountId: string, id: string, actor: string | null = null) {
  // read already: nothing changes, and the consoles hear nothing
  const row = await conversationRow(db, accountId, id)
  if (row.unreadCount === 0) return viewOf(db, accountId, row)
  return change(db, accountId, id, { unreadCount: 0 }, { type: 'read', actor })
}

/** One message of the account with its delivery status and, for conversation history, automated and ai. */
export async function getMessage(db: Db, accountId: string, id: string) {
  const [row] = UUID.test(id)
    ? await db
        .select()
        .from(messages)
        .where(and(eq(messages.accountId, accountId), eq(messages.id, id)))
    : []
  if (!row) throw notFound('message')
  return { ...messageView(row), automated: row.automated, ai: row.ai, error_code: row.errorCode }
}

export interface ActivityItem {
  at: string
  kind: 'contact_created' | 'message' | 'consent'
  summary: string
  message_id: string | null
  conversation_id: string | null
  channel: string | null
}

/**
 * A contact's timeline, newest first: when it was created, its messages in and out (the newest `limit`), and every
 * change of its opt-ins; at most `limit` items.
 */
export async function contactActivity(db: Db, accountId: string, contactId: string, limit: number) {
  const contact = UUID.test(contactId) ? await findContact(db, accountId, contactId) : undefined
  if (!contact) throw notFound('contact')
  const rows = await db
    .select()
    .from(messages)
    .where(ofContact(messages, accountId, contactId))
    .orderBy(desc(messages.createdAt), desc(messages.id))
    .limit(limit)
  const items: ActivityItem[] = rows.map((m) => ({
    at: m.createdAt.toISOString(),
    kind: 'message',
    summary: `${m.direction} ${m.channel} ${m.type}${m.automated ? ' (automated)' : ''}${m.ai ? ' (AI)' : ''}: ${(m.text || m.type).slice(0, 160)}`,
    message_id: m.id,
    conversation_id: m.conversationId,
    channel: m.channel,
  }))
  for (const r of await consentHistory(db, accountId, contactId)) {
    items.push({
      at: r.recordedAt.toISOString(),
      kind: 'consent',
      summary: `${r.channel} opt-in ${r.fromState} → ${r.toState} (${r.source})`,
      message_id: null,
      conversation_id: null,
      channel: r.channel,
    })
  }
  items.push({
    at: contact.createdAt.toISOString(),
    kind: 'contact_created',
    summary: `contact created (source ${contact.source})`,
    message_id: null,
    conversation_id: null,
    channel: null,
  })
  items.sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0))
  return { contact_id: contactId, items: items.slice(0, limit), truncated: items.length > limit }
}

/** Managing: one conversation or message, a conversation's handling (closed, assignee, read) and a contact's activity. */
export function inboxManaging({ db, clock }: Pick<InboxServiceDeps, 'db' | 'clock'>) {
  return {
    getConversation: (tenant: InboxTenant, id: string) => getConversation(db, tenant.accountId, id),
    closeConversation: (tenant: InboxTenant, id: string) =>
      closeConversation(db, clock, tenant.accountId, id, actorOf(tenant)),
    reopenConversation: (tenant: InboxTenant, id: string) =>
      reopenConversation(db, tenant.accountId, id, actorOf(tenant)),
    snoozeConversation: (tenant: InboxTenant, id: string, body: { until?: string; until_reply?: boolean }) =>
      snoozeConversation(db, clock, tenant.accountId, id, body, actorOf(tenant)),
    assignConversation: (tenant: InboxTenant, id: string, memberId: string | null) =>
      assignConversation(db, clock, tenant.accountId, id, memberId, actorOf(tenant)),
    markConversationRead: (tenant: InboxTenant, id: string) =>
      markConversationRead(db, tenant.accountId, id, actorOf(tenant)),
    getMessage: (tenant: InboxTenant, id: string) => getMessage(db, tenant.accountId, id),
    contactActivity: (tenant: InboxTenant, contactId: string, limit: number) =>
      contactActivity(db, tenant.accountId, contactId, limit),
  }
}
