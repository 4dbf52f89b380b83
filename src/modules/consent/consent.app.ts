import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import type { PlatformDeps } from '../../platform/module.ts'
import { consentSubject, recordOptinChange } from '../contacts/index.ts'
import { optOutOfChat, startChatOptin, startEmailOptin } from './consent.service.ts'

/**
 * A person acting on a contact's consent from the web app or an assistant: sending the double opt-in request the
 * contact asked for (it raises nothing: the contact confirms it themselves), and recording that the contact asked to
 * stop. Opt-ins are never raised here.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export const ChannelBody = Type.Object(
  { channel: Type.Union([Type.Literal('chat'), Type.Literal('email')], { description: 'chat or email' }) },
  { additionalProperties: false },
)
export const OptinRequestResponse = Type.Object({
  contact_id: Type.String({ format: 'uuid' }),
  channel: Type.String(),
  optin: Type.String({ description: 'the channel’s opt-in state now: pending until the contact confirms' }),
  started: Type.Boolean({ description: 'a confirmation request was queued (false: it was pending already)' }),
})
export const OptOutResponse = Type.Object({
  contact_id: Type.String({ format: 'uuid' }),
  channel: Type.String(),
  optin: Type.Literal('opted_out'),
  changed: Type.Boolean({ description: 'false: the contact had opted out already' }),
})

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
export async function optinRequestCheck(db: Db, accountId: string, contactId: string, channel: 'chat' | 'email') {
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
export async function requestOptin(
  db: Db,
  clock: Clock,
  tenant: TenantContext,
  contactId: string,
  channel: 'chat' | 'email',
) {
  const { accountId } = tenant
  await optinRequestCheck(db, accountId, contactId, channel)
  const evidence = { ...actorOf(tenant), reason: 'requested_by_contact' }
  const started = await db.transaction((tx) =>
    channel === 'chat'
      ? startChatOptin(tx, clock, accountId, contactId, 'team_request', evidence)
      : startEmailOptin(tx, clock, accountId, contactId, 'team_request', evidence),
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
export async function recordOptOut(
  db: Db,
  clock: Clock,
  tenant: TenantContext,
  contactId: string,
  channel: 'chat' | 'email',
) {
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

export function consentAppRoutes(deps: Pick<PlatformDeps, 'database' | 'clock'>) {
  const db = deps.database.orm
  const tags = ['app']
  const Params = Type.Object({ id: Type.String({ maxLength: 64 }) })
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Params: Static<typeof Params>; Body: Static<typeof ChannelBody> }>(
      '/contacts/:id/optin-request',
      {
        config: { scope: ['contacts:write', 'messages:write'] },
        schema: {
          operationId: 'requestContactOptIn',
          summary: 'Send a contact the double opt-in confirmation request',
          description:
            'Needs contacts:write and messages:write. The contact asked to receive messages: chat sends the approved opt-in confirmation template, e-mail the confirmation link; the opt-in becomes pending and only the contact’s own confirmation makes it confirmed. Opted out: 409 contact_opted_out; confirmed: 400 already_confirmed; no address: 400 address_missing.',
          tags,
          params: Params,
          body: ChannelBody,
          response: { 200: OptinRequestResponse },
        },
      },
      async (request) => {
        return requestOptin(db, deps.clock, request.tenant, request.params.id, request.body.channel)
      },
    )

    app.post<{ Params: Static<typeof Params>; Body: Static<typeof ChannelBody> }>(
      '/contacts/:id/opt-out',
      {
        config: { scope: 'contacts:write' },
        schema: {
          operationId: 'optOutContact',
          summary: 'Record that a contact asked to stop receiving messages on a channel',
          description:
            'Needs contacts:write. The opt-in becomes opted_out with a consent record (source team_request); nothing more is sent on that channel. The API cannot undo it: only the contact opts in again.',
          tags,
          params: Params,
          body: ChannelBody,
          response: { 200: OptOutResponse },
        },
      },
      async (request) => {
        return recordOptOut(db, deps.clock, request.tenant, request.params.id, request.body.channel)
      },
    )
  }
}
