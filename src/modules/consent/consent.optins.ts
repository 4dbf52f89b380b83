import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import { consentSubject, recordOptinChange } from '../contacts/index.ts'
import * as repo from './consent.repository.ts'

// Starting and ending opt-ins: the double opt-in's start on each channel, the chat opt-out, and a person acting on a
// contact's consent from the web app or an assistant.

export const CHAT_OPTIN_QUEUE = 'consent.chat_optin'
export const STOP_CONFIRMATION_QUEUE = 'consent.stop_confirmation'
export const EMAIL_OPTIN_QUEUE = 'consent.email_optin'

/** Where a double opt-in starts, and what shows the contact asked for it. */
export interface OptinStart {
  accountId: string
  contactId: string
  channel: 'chat' | 'email'
  source: string
  evidence: Record<string, unknown>
}

/**
 * Starts the double opt-in on `start.channel` in `tx`: pending with its evidence, the confirmation queued (on chat
 * with its request, which remembers the inbound message that asked). False when the contact has no address there or
 * is confirmed already.
 */
export async function startOptin(tx: Db, clock: Clock, start: OptinStart): Promise<boolean> {
  const { accountId, contactId, channel, evidence } = start
  const contact = await consentSubject(tx, accountId, contactId, { lock: true })
  if (!contact) return false
  const [address, state] = channel === 'chat' ? [contact.phone, contact.optinChat] : [contact.email, contact.optinEmail]
  if (address === '' || state === 'confirmed') return false
  await recordOptinChange(tx, clock, { ...start, to: 'pending' })
  if (channel === 'chat') {
    const inboundMessageId = typeof evidence.message_id === 'string' ? evidence.message_id : null
    await repo.upsertChatRequest(tx, {
      accountId,
      contactId,
      state: 'queued',
      inboundMessageId,
      updatedAt: clock.now(),
    })
  }
  const queue = channel === 'chat' ? CHAT_OPTIN_QUEUE : EMAIL_OPTIN_QUEUE
  await enqueue(tx, clock, { accountId, queue, payload: { contact_id: contactId } })
  return true
}

/**
 * An opt-in confirmation template was approved (in `tx`, with the approval): the chat opt-ins that waited for one are
 * queued again; each job re-checks that its contact is still pending.
 */
export async function sendWaitingChatOptins(tx: Db, clock: Clock, accountId: string): Promise<void> {
  for (const contactId of await repo.requeueWaitingChatRequests(tx, accountId, clock.now())) {
    await enqueue(tx, clock, { accountId, queue: CHAT_OPTIN_QUEUE, payload: { contact_id: contactId } })
  }
}

/**
 * The one chat opt-out, for the stop keyword and the provider's opt-out (131050): opted_out with its consent record;
 * a pending double opt-in ends (its queued confirmation checks the state and sends nothing), and everything that
 * sends later checks the state. Only a stop keyword gets the short confirmation: after 131050 the customer
 * refused the business's messages at WhatsApp, which tells them itself, and a free text would mostly fail outside
 * the 24-hour window anyway.
 */
export async function optOutOfChat(
  tx: Db,
  clock: Clock,
  input: { accountId: string; contactId: string; source: string; evidence: Record<string, unknown> },
): Promise<void> {
  const { accountId, contactId } = input
  await recordOptinChange(tx, clock, { ...input, channel: 'chat', to: 'opted_out' })
  await repo.deleteChatRequest(tx, accountId, contactId)
  if (input.source === 'inbound_keyword') {
    await enqueue(tx, clock, { accountId, queue: STOP_CONFIRMATION_QUEUE, payload: { contact_id: contactId } })
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

async function subject(db: Db, accountId: string, contactId: string) {
  const contact = UUID.test(contactId) ? await consentSubject(db, accountId, contactId) : null
  if (!contact) throw notFound('contact')
  return contact
}

const actorOf = (tenant: TenantContext) => ({
  by: tenant.actor.type,
  ...(tenant.actor.type === 'api_key' ? { key_id: tenant.actor.keyId } : {}),
})

/**
 * What requesting an opt-in would do, or why it cannot: the contact needs the channel's address, and one who opted
 * out or is confirmed gets nothing (409 contact_opted_out, 400 already_confirmed).
 */
async function optinRequestCheck(db: Db, accountId: string, contactId: string, channel: 'chat' | 'email') {
  const contact = await subject(db, accountId, contactId)
  const address = channel === 'chat' ? contact.phone : contact.email
  const state = channel === 'chat' ? contact.optinChat : contact.optinEmail
  if (address === '') {
    throw badRequest(`The contact has no ${channel === 'chat' ? 'phone number' : 'e-mail address'}`, 'address_missing')
  }
  if (state === 'opted_out') {
    throw new AppError(409, 'contact_opted_out', 'The contact opted out: no opt-in request is sent to them')
  }
  if (state === 'confirmed') throw badRequest(`The ${channel} opt-in is confirmed already`, 'already_confirmed')
  return { contact, address, state }
}

/** Queues the double opt-in confirmation (chat: the approved opt-in template; e-mail: the confirmation link). */
async function requestOptin(db: Db, clock: Clock, tenant: TenantContext, contactId: string, channel: 'chat' | 'email') {
  const { accountId } = tenant
  await optinRequestCheck(db, accountId, contactId, channel)
  const evidence = { ...actorOf(tenant), reason: 'requested_by_contact' }
  const started = await db.transaction((tx) =>
    startOptin(tx, clock, { accountId, contactId, channel, source: 'team_request', evidence }),
  )
  const after = await subject(db, accountId, contactId)
  return {
    contact_id: contactId,
    channel,
    optin: channel === 'chat' ? after.optinChat : after.optinEmail,
    started,
  }
}

/** Records that the contact asked to stop on a channel (by phone, letter, in person): opted_out, with who recorded it. */
async function recordOptOut(db: Db, clock: Clock, tenant: TenantContext, contactId: string, channel: 'chat' | 'email') {
  const { accountId } = tenant
  const contact = await subject(db, accountId, contactId)
  const before = channel === 'chat' ? contact.optinChat : contact.optinEmail
  const evidence = { ...actorOf(tenant), reason: 'requested_by_contact' }
  await db.transaction(async (tx) => {
    if (channel === 'chat') await optOutOfChat(tx, clock, { accountId, contactId, source: 'team_request', evidence })
    else
      await recordOptinChange(tx, clock, {
        accountId,
        contactId,
        channel,
        to: 'opted_out',
        source: 'team_request',
        evidence,
      })
  })
  return { contact_id: contactId, channel, optin: 'opted_out' as const, changed: before !== 'opted_out' }
}

/**
 * A person acting on a contact's consent from the web app or an assistant: sending the double opt-in request the
 * contact asked for (it raises nothing: the contact confirms it themselves), and recording that the contact asked to
 * stop. Opt-ins are never raised here.
 */
export function consentRequests({ db, clock }: { db: Db; clock: Clock }) {
  return {
    /** What requesting an opt-in would do, or why it cannot (see optinRequestCheck). */
    optinRequestCheck: (accountId: string, contactId: string, channel: 'chat' | 'email') =>
      optinRequestCheck(db, accountId, contactId, channel),
    /** POST /app/contacts/{id}/optin-request */
    requestOptin: (tenant: TenantContext, contactId: string, channel: 'chat' | 'email') =>
      requestOptin(db, clock, tenant, contactId, channel),
    /** POST /app/contacts/{id}/opt-out */
    recordOptOut: (tenant: TenantContext, contactId: string, channel: 'chat' | 'email') =>
      recordOptOut(db, clock, tenant, contactId, channel),
  }
}
