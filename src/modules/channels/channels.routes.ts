import type { FastifyInstance, FastifyRequest } from 'fastify'
import { badRequest } from '../../platform/http/errors.ts'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import {
  ChannelsSettings,
  Coexistence,
  CoexistenceBody,
  InboundResult,
  SandboxInboundBody,
} from './channels.schemas.ts'
import type { ChannelsService } from './channels.service.ts'

const MEDIA_BODY_LIMIT = 32 * 1024 * 1024
const tags = ['settings']

/** The services the channels' operations call. */
export interface ChannelsServices {
  channels: ChannelsService
}

const operation = operationsUsing<ChannelsServices>()

export const getChannelSettings = operation({
  method: 'GET',
  path: '/settings/channels',
  scope: 'settings:read',
  operationId: 'getChannelSettings',
  summary: 'Channel state',
  description:
    'Per channel (chat, email): connected, was_connected, provider and versand_moeglich (sending possible). While versand_moeglich is false nothing goes out on that channel. Connecting and disconnecting is not offered through the API.',
  tags,
  response: ChannelsSettings,
  async handle({ channels }, { tenant }) {
    const state = await channels.channelsState(tenant.accountId, tenant.account)
    return {
      ...state,
      chat: withGermanAliases(state.chat, ['connected', 'was_connected']),
      email: withGermanAliases(state.email, ['connected', 'was_connected']),
    }
  },
})

export const getCoexistenceSettings = operation({
  method: 'GET',
  path: '/settings/coexistence',
  scope: 'settings:read',
  operationId: 'getCoexistenceSettings',
  summary: 'Coexistence state',
  description: '`available` is true only when a chat number is connected.',
  tags,
  response: Coexistence,
  handle: ({ channels }, { tenant }) => channels.coexistence(tenant.accountId),
})

export const updateCoexistenceSettings = operation({
  method: 'PATCH',
  path: '/settings/coexistence',
  scope: 'settings:write',
  operationId: 'updateCoexistenceSettings',
  summary: 'Turn coexistence on or off',
  description:
    'With coexistence the number is also used in the WhatsApp Business app and sends are paced at 20 messages per second. 400 (key chat_not_connected) when enabling without a connected chat number.',
  tags,
  body: CoexistenceBody,
  response: Coexistence,
  errors: { 400: 'chat_not_connected: coexistence needs a connected chat number' },
  handle: ({ channels }, { tenant, body }) => channels.setCoexistence(tenant.accountId, body.enabled),
})

export const simulateInboundMessage = operation({
  method: 'POST',
  path: '/sandbox/inbound',
  scope: 'messages:write',
  bodyLimit: MEDIA_BODY_LIMIT,
  operationId: 'simulateInboundMessage',
  summary: 'Simulate an inbound chat message (sandbox only)',
  description:
    "Exists only while the sandbox is the account's chat provider (404 otherwise). One of text, button, media (base64, with text as caption) or location. The message goes through the same inbound processing as a real one: contact and conversation found or created, message.received and conversation.created delivered.",
  tags: ['sandbox'],
  body: SandboxInboundBody,
  response: InboundResult,
  errors: {
    400: 'bad_request: not exactly one of text, button, media or location',
    404: 'not_found: the chat channel is not connected to the sandbox provider',
  },
  async handle({ channels }, { tenant, body }) {
    const kinds = ['button', 'media', 'location'].filter((k) => body[k as 'button'] !== undefined)
    if (kinds.length > 1 || (kinds.length === 0 && body.text === undefined)) {
      throw badRequest('Give exactly one of text, button, media or location (text may caption media)')
    }
    return { ok: true, ...(await channels.sandboxInbound(tenant.accountId, body)) }
  },
})

export function channelsRoutes(channels: ChannelsService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { channels }, [
      getChannelSettings,
      getCoexistenceSettings,
      updateCoexistenceSettings,
      simulateInboundMessage,
    ])
  }
}

/** A provider's webhook carries the message's text and metadata; its media are fetched by id afterwards. */
const CHAT_HOOK_BODY_LIMIT = 2 * 1024 * 1024
/** A raw MIME message with its attachments (base64 in MIME: a third larger than the files). */
const EMAIL_HOOK_BODY_LIMIT = MEDIA_BODY_LIMIT

/**
 * Provider webhooks, outside the public REST API: authenticated by the provider's own signature (WhatsApp's
 * X-Hub-Signature-256) or the e-mail channel's inbound token, so they read the raw body. The content type
 * parsers below apply to this plugin only; the API's JSON parsing is unchanged.
 *
 * Nothing is read before the account, its connection and (for e-mail) the token are known: an `onRequest` hook
 * answers 404 or 401 first (Node then discards what the client still sends, holding none of it); a known hook's body
 * is then bounded by its kind (2 MB for a provider's JSON, 32 MB for a MIME message).
 */
export function hookRoutes(service: ChannelsService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: CHAT_HOOK_BODY_LIMIT }, (_request, body, done) =>
      done(null, body),
    )
    const hide = { hide: true }
    const chatTargets = new WeakMap<FastifyRequest, Awaited<ReturnType<ChannelsService['chatWebhookTarget']>>>()
    app.get<{ Params: { account: string }; Querystring: Record<string, string | undefined> }>(
      '/hooks/whatsapp-cloud/:account',
      { config: { public: true }, schema: hide },
      async (request, reply) => {
        const challenge = await service.verifyWebhook(request.params.account, request.query)
        return reply.type('text/plain').send(challenge)
      },
    )

    app.post<{ Params: { account: string } }>(
      '/hooks/whatsapp-cloud/:account',
      {
        config: { public: true },
        schema: hide,
        bodyLimit: CHAT_HOOK_BODY_LIMIT,
        onRequest: async (request) => {
          const { account } = request.params as { account: string }
          chatTargets.set(request, await service.chatWebhookTarget(account, 'whatsapp-cloud'))
        },
      },
      async (request) => {
        const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
        const result = await service.receiveChatWebhook(
          request.params.account,
          'whatsapp-cloud',
          { headers: request.headers, rawBody },
          chatTargets.get(request),
        )
        return { ok: true, ...result }
      },
    )

    const emailToken = (request: FastifyRequest) => {
      const header = request.headers.authorization
      return (request.query as { token?: string }).token ?? (header?.startsWith('Bearer ') ? header.slice(7) : '')
    }

    app.post<{ Params: { account: string }; Querystring: { token?: string } }>(
      '/hooks/email/:account',
      {
        config: { public: true },
        schema: hide,
        bodyLimit: EMAIL_HOOK_BODY_LIMIT,
        onRequest: async (request) => {
          await service.admitEmail((request.params as { account: string }).account, emailToken(request))
        },
      },
      async (request) => {
        const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
        if (rawBody.length === 0) throw badRequest('The body must be a raw MIME message')
        const result = await service.receiveEmail(request.params.account, emailToken(request), rawBody)
        return { ok: true, stored: result.stored, message_id: result.message?.id ?? null }
      },
    )
  }
}
