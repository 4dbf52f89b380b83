import type * as repo from './inbox.repository.ts'
import type { MessageStatus } from './inbox.types.ts'

/** How the inbox shows its rows: the Message of section 2, a conversation, a message's preview and status order. */
/** The Message of section 2. */
export function messageView(row: repo.MessageRow) {
  return {
    id: row.id,
    conversation_id: row.conversationId,
    contact_id: row.contactId,
    channel: row.channel,
    direction: row.direction,
    type: row.type,
    text: row.text,
    media_url: row.mediaUrl,
    media_mime: row.mediaMime,
    status: row.status,
    template: row.template ?? null,
    created_at: row.createdAt.toISOString(),
  }
}

export function historyView(row: repo.MessageRow) {
  return { ...messageView(row), automated: row.automated, ai: row.ai }
}

/** The data of message.received: exactly the Message fields of section 2. */
export function messageEventData(row: repo.MessageRow): Record<string, unknown> {
  const { status: _status, template: _template, ...fields } = messageView(row)
  return fields
}
const STATUS_RANK: Record<MessageStatus, number> = { sent: 1, delivered: 2, read: 3, failed: 4 }

/**
 * Statuses arrive in any order; a message's status only moves forward (sent < delivered < read). `failed`
 * replaces sent and delivered, never read; nothing replaces read or failed.
 */
export function statusAdvances(current: MessageStatus | null, next: MessageStatus): boolean {
  if (current === null) return true
  if (current === 'read' || current === 'failed') return false
  return STATUS_RANK[next] > STATUS_RANK[current]
}

export function previewOf(type: string, text: string): string {
  const body = text.replace(/\s+/g, ' ').trim()
  if (body) return body.length > 120 ? `${body.slice(0, 119)}…` : body
  return `[${type}]`
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function conversationView(row: repo.ConversationRow, contactName: string) {
  return {
    id: row.id,
    contact: { id: row.contactId, name: contactName },
    contact_id: row.contactId,
    channel: row.channel,
    last_message: {
      preview: row.lastMessagePreview,
      direction: row.lastMessageDirection,
      at: row.lastMessageAt.toISOString(),
    },
    automated_only: row.automatedOnly,
    unread_count: row.unreadCount,
    needs_person: row.needsPerson,
    needs_person_reason: row.needsPersonReason,
    status: row.status,
    closed_at: row.closedAt ? row.closedAt.toISOString() : null,
    snoozed_until: row.snoozedUntil ? row.snoozedUntil.toISOString() : null,
    snooze_until_reply: row.snoozeUntilReply,
    assignee_id: row.assigneeId,
    created_at: row.createdAt.toISOString(),
    last_message_at: row.lastMessageAt.toISOString(),
  }
}
