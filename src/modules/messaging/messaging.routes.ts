import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { Message } from '../inbox/index.ts'
import {
  SendBody,
  SendId,
  SendingSettings,
  SendingSettingsBody,
  SendQueued,
  SendRecord,
  sendErrors,
} from './messaging.schemas.ts'
import type { MessagingService } from './messaging.service.ts'

const tags = ['messages']

/** The services the messaging operations call. */
export interface MessagingServices {
  messaging: MessagingService
}

const operation = operationsUsing<MessagingServices>()

export const getSend = operation({
  method: 'GET',
  path: '/sends/{id}',
  scope: 'messages:write',
  operationId: 'getSend',
  summary: 'The status of a template send',
  description:
    'Status queued, sent, delivered, read, failed or skipped, with reason (German alias grund), times and the message id. Provider statuses move it forward only, in any arrival order. 404 for anything that is not a template send of this account (also an id that is not a uuid).',
  tags,
  params: SendId,
  response: SendRecord,
  germanAliases: ['reason'],
  handle: ({ messaging }, { tenant, params }) => messaging.sendRecord(tenant, params.id),
})

export const sendMessage = operation({
  method: 'POST',
  path: '/messages',
  scope: 'messages:write',
  idempotent: true,
  operationId: 'sendMessage',
  summary: 'Send a free-text message or queue a template message to a contact',
  description:
    'Exactly one of text or template. Free text is checked in this order: contact (404), account blocked, sending paused (403 subscription_locked), monthly quota (403 limit_reached), chat number connected (409 chat_not_connected), contact phone (409 contact_no_phone), opt-out (409 contact_opted_out), chat opt-in confirmed (409 contact_not_optin); then sent at once: 201 with the stored message; a provider refusal (such as outside the 24-hour service window) gives 502 send_failed and stores the message as failed. ' +
    'A template is checked at once in this order: contact (404), template (404 when missing or of another account), 422 template_not_chat, 422 template_not_sendable (opt-in confirmation and system templates), 422 template_not_approved, the given variables (422 invalid_variables), sending paused (403 subscription_locked), monthly quota (403 limit_reached; checked, not yet used), chat number (409 chat_not_connected), contact phone, opt-out and opt-in (409), and last the values of contact variables (422 invalid_variables when the contact has none, such as {{email}} without an e-mail address). Then it is queued: 202 with send_id. A template works at any time, also outside the 24-hour window. Right before sending the worker checks opt-out, opt-in, the account and the template again and reserves the quota unit atomically; a send no longer allowed ends skipped with a reason (GET /sends/{id}). Links in variable values become tracked short links. ' +
    'Each sent message counts against the monthly quota (calendar month in the account timezone).',
  tags,
  body: SendBody,
  response: Type.Union([Message, SendQueued]),
  // 201 with the sent message or 202 with the queued send
  statusOf: { responses: { 201: Message, 202: SendQueued }, of: (answer) => (isQueued(answer) ? 202 : 201) },
  errors: sendErrors,
  async handle({ messaging }, { tenant, body }) {
    const result = await messaging.send(tenant, body)
    return result.queued ?? result.sent
  },
})

/** Whether POST /messages queued a template send (202 with send_id) rather than sending at once (201). */
export const isQueued = (answer: object): answer is { send_id: string } => 'send_id' in answer

export function messagingRoutes(service: MessagingService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { messaging: service }, [
      sendMessage,
      getSend,
      getSendingSettingsOperation,
      updateSendingSettingsOperation,
    ])
  }
}

export const getSendingSettingsOperation = operation({
  method: 'GET',
  path: '/settings/sending',
  scope: 'settings:read',
  operationId: 'getSendingSettings',
  summary: 'Frequency cap and quiet hours',
  description:
    'How many marketing messages of newsletters, follow-up steps and automations a contact gets at most in a rolling window (a capped send is skipped with reason frequency_capped), and the quiet hours in the contact’s time zone in which such sends wait (reason quiet_hours). Utility templates, opt-in confirmations and POST /messages sends are never capped or held. A new account starts with 1 message per 16 hours and quiet hours off.',
  tags: ['settings'],
  response: SendingSettings,
  handle: ({ messaging }, { tenant }) => messaging.sendingSettings(tenant),
})

export const updateSendingSettingsOperation = operation({
  method: 'PATCH',
  path: '/settings/sending',
  scope: 'settings:write',
  operationId: 'updateSendingSettings',
  summary: 'Change the frequency cap and quiet hours',
  description:
    'Only given fields change; the change applies to every send checked from now on (sends already waiting for the quiet hours to end go at their time and are checked again then). 400 key quiet_hours_invalid when from and to would be the same.',
  tags: ['settings'],
  body: SendingSettingsBody,
  response: SendingSettings,
  errors: { 400: 'bad_request: an unknown field, a value out of range; quiet_hours_invalid: from equals to' },
  handle: ({ messaging }, { tenant, body }) => messaging.updateSendingSettings(tenant, body),
})

/** The short links of tracked texts: redirect at once, count the click. */
export function linkRoutes(service: MessagingService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Params: { id: string } }>(
      '/public/t/c/:id',
      { config: { public: true }, schema: { hide: true } },
      async (request, reply) => {
        const url = await service.followLink(request.params.id)
        return reply.header('cache-control', 'no-store').redirect(url, 302)
      },
    )
  }
}
