import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import type { ConsentServices } from './consent.routes.ts'
import type { ConsentService } from './consent.service.ts'

/**
 * A person acting on a contact's consent from the web app or an assistant: sending the double opt-in request the
 * contact asked for (it raises nothing: the contact confirms it themselves), and recording that the contact asked to
 * stop. Opt-ins are never raised here.
 */

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

const operation = operationsUsing<ConsentServices>()

const ContactParams = Type.Object({ id: Type.String({ maxLength: 64 }) })

export const requestOptinOperation = operation({
  method: 'POST',
  path: '/contacts/{id}/optin-request',
  mount: 'app',
  scope: ['contacts:write', 'messages:write'],
  operationId: 'requestContactOptIn',
  summary: 'Send a contact the double opt-in confirmation request',
  description:
    'Needs contacts:write and messages:write. The contact asked to receive messages: chat sends the approved opt-in confirmation template, e-mail the confirmation link; the opt-in becomes pending and only the contact’s own confirmation makes it confirmed. Opted out: 409 contact_opted_out; confirmed: 400 already_confirmed; no address: 400 address_missing.',
  tags: ['app'],
  params: ContactParams,
  body: ChannelBody,
  response: OptinRequestResponse,
  handle: ({ consent }, { tenant, params, body }) => consent.requestOptin(tenant, params.id, body.channel),
})

export const optOutOperation = operation({
  method: 'POST',
  path: '/contacts/{id}/opt-out',
  mount: 'app',
  scope: 'contacts:write',
  operationId: 'optOutContact',
  summary: 'Record that a contact asked to stop receiving messages on a channel',
  description:
    'Needs contacts:write. The opt-in becomes opted_out with a consent record (source team_request); nothing more is sent on that channel. The API cannot undo it: only the contact opts in again.',
  tags: ['app'],
  params: ContactParams,
  body: ChannelBody,
  response: OptOutResponse,
  handle: ({ consent }, { tenant, params, body }) => consent.recordOptOut(tenant, params.id, body.channel),
})

/** The web app records a contact's opt-out and sends the opt-in request they asked for (/app/contacts/{id}/…). */
export function consentAppRoutes(consent: ConsentService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { consent }, [requestOptinOperation, optOutOperation])
  }
}
