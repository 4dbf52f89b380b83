import { type TemplateView, templateVariables } from '../templates/index.ts'
import type { ContactValues } from './messaging.ports.ts'
import type * as repo from './messaging.repository.ts'
import type { SendStatus } from './messaging.tables.ts'

// The rules of a template send, pure: who may get what, how a status moves, how long a campaign's send waits.

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Why a template cannot be sent, most lasting reason first: another channel, then a kind that is never sendable
 * (opt-in confirmation, system), then the provider status.
 */
export function templateRefusal(template: Pick<TemplateView, 'channel' | 'purpose' | 'system' | 'provider_status'>) {
  if (template.channel !== 'chat') {
    return { code: 'template_not_chat', message: 'Only chat templates can be sent with POST /messages' }
  }
  if (template.purpose === 'optin_confirm' || template.system) {
    return {
      code: 'template_not_sendable',
      message: 'Opt-in confirmation templates and system templates cannot be sent through the API',
    }
  }
  if (template.provider_status !== 'approved') {
    return {
      code: 'template_not_approved',
      message: `The template's provider status is ${template.provider_status ?? 'none (not submitted)'}, not approved`,
    }
  }
  return null
}

/** Why a recipient cannot get a chat message now, in the order of POST /messages; null when it can. */
export function recipientRefusal(contact: { phone: string; optin_chat: string }) {
  if (contact.phone === '') return { code: 'contact_no_phone', message: 'The contact has no phone number' }
  if (contact.optin_chat === 'opted_out') return { code: 'contact_opted_out', message: 'The contact opted out of chat' }
  if (contact.optin_chat !== 'confirmed') {
    return { code: 'contact_not_optin', message: "The contact's chat opt-in is not confirmed" }
  }
  return null
}

export const contactValues = (contact: ContactValues) => ({
  name: contact.name,
  email: contact.email,
  phone: contact.phone,
})

const RANK: Record<SendStatus, number> = {
  queued: 0,
  sending: 0,
  skipped: 0,
  sent: 1,
  delivered: 2,
  read: 3,
  failed: 4,
}

/**
 * A provider status applied to a send record: forward only (sent → delivered → read), in any arrival order. `failed`
 * replaces sent and delivered, never read; nothing leaves read, failed or skipped. A read that arrives before its
 * delivered also fills delivered_at (a read message was delivered). Returns the change, or null.
 */
export function sendStatusChange(
  current: Pick<repo.TemplateSendRow, 'status' | 'deliveredAt' | 'readAt'>,
  update: { status: 'sent' | 'delivered' | 'read' | 'failed'; errorCode: string | null; at: Date },
): repo.TemplateSendPatch | null {
  if (!['sent', 'delivered'].includes(current.status)) return null
  if (update.status === 'failed') {
    return { status: 'failed', reason: 'provider_failed', errorCode: update.errorCode, failedAt: update.at }
  }
  if (RANK[update.status] <= RANK[current.status]) return null
  return {
    status: update.status,
    deliveredAt: current.deliveredAt ?? update.at,
    ...(update.status === 'read' ? { readAt: current.readAt ?? update.at } : {}),
  }
}

/** The send record of GET /sends/{id}; `sending` is shown as `queued` (the spec's statuses). */
export function sendView(row: repo.TemplateSendRow) {
  return {
    id: row.id,
    send_id: row.id,
    status: row.status === 'sending' ? ('queued' as const) : row.status,
    reason: row.reason,
    reason_detail: row.reasonDetail,
    error_code: row.errorCode,
    contact_id: row.contactId,
    template_id: row.templateId,
    message_id: row.messageId,
    created_at: row.createdAt,
    sent_at: row.sentAt,
    delivered_at: row.deliveredAt,
    read_at: row.readAt,
    failed_at: row.failedAt,
    skipped_at: row.skippedAt,
    updated_at: row.updatedAt,
  }
}

/** The body parameters as the provider wants them: positional in number order, named in order of appearance. */
export function bodyParameters(content: string, values: Record<string, string>) {
  const names = templateVariables({ content, buttons: [] })
  const positional = names.length > 0 && names.every((n) => /^[0-9]+$/.test(n))
  if (positional) {
    const ordered = [...names].sort((a, b) => Number(a) - Number(b))
    return { parameters: ordered.map((n) => values[n]) }
  }
  return { parameters: names.map((n) => values[n]), parameterNames: names }
}

/** How often a waiting campaign send looks again whether sending is possible. */
export const SEND_WAIT_RETRY_MS = 60_000

/** Reasons sending is impossible for the moment (not about the recipient): campaign sends wait them out. */
export const WAIT_REASONS: ReadonlySet<string> = new Set([
  'subscription_locked',
  'account_blocked',
  'chat_not_connected',
  'daily_limit_reached',
  // a campaign's marketing send in the contact's quiet hours (messaging.protection.ts): it goes when they end
  'quiet_hours',
])

/** How long a send of each origin waits for sending to be possible again; `api` sends never wait (null). */
const MAX_WAIT_MS: Record<repo.TemplateSendRow['origin'], number | null> = {
  api: null,
  newsletter: Number.POSITIVE_INFINITY,
  automation: Number.POSITIVE_INFINITY,
  // a follow-up step more than a day late is skipped (docs/followups.md)
  followup: 24 * 3600_000,
}

/** Until when (epoch ms) this send may wait for `reason` to pass; null when it does not wait. */
export function waitingAllowedUntil(send: repo.TemplateSendRow, reason: string): number | null {
  const max = MAX_WAIT_MS[send.origin]
  if (max === null || !WAIT_REASONS.has(reason)) return null
  return send.createdAt.getTime() + max
}
