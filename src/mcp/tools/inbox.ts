import { Type } from 'typebox'
import { CoexistenceBody, SandboxInboundBody } from '../../modules/channels/channels.schemas.ts'
import { ConsentSettingsBody } from '../../modules/consent/consent.schemas.ts'
import { MessagesQuery } from '../../modules/inbox/inbox.schemas.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule } from '../tool.ts'
import { paging, Uuid } from './common.ts'

/** The account-wide message list, the sandbox, and the settings (channels, coexistence, consent). */

export const listMessages = defineTool({
  name: 'list_messages',
  title: 'List messages',
  description:
    'Messages across all conversations, newest first: inbound (default) or outbound, optionally of one conversation or only those created strictly after a time (for polling new inbound messages).',
  scope: 'inbox:read',
  rest: 'GET /messages',
  output: out.list_messages,
  kind: 'read',
  input: Type.Object({
    direction: Type.Optional(Type.Union([Type.Literal('inbound'), Type.Literal('outbound')], { default: 'inbound' })),
    ...paging(100, 25),
    created_after: Type.Optional(Type.String({ format: 'date-time', maxLength: 40 })),
    conversation_id: Type.Optional(Uuid('only this conversation')),
  }),
  async run(ctx, args) {
    const query = restRule(MessagesQuery, args, 'query')
    const direction = query.direction === 'in' || query.direction === 'inbound' ? 'inbound' : 'outbound'
    const { items, ...page } = await ctx.services.inbox.listMessages(ctx.tenant, { ...query, direction })
    return { messages: items, ...page }
  },
})

export const simulateInboundMessage = defineTool({
  name: 'simulate_inbound_message',
  title: 'Simulate a customer message (sandbox)',
  description:
    'Only while the sandbox is the chat provider: a customer with this phone number writes a text (or presses a button). It runs through the real inbound processing: contact and conversation found or created, keywords, events, automations.',
  scope: 'messages:write',
  rest: 'POST /sandbox/inbound',
  output: out.simulate_inbound_message,
  kind: 'write',
  input: Type.Object({
    from: Type.String({ minLength: 1, maxLength: 40, description: 'the customer’s phone, international format' }),
    name: Type.Optional(Type.String({ maxLength: 120 })),
    text: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    button: Type.Optional(Type.String({ minLength: 1, maxLength: 25, description: 'a quick-reply button press' })),
  }),
  async run(ctx, args) {
    const body = restRule(SandboxInboundBody, args, 'body')
    if ((body.text === undefined) === (body.button === undefined)) {
      throw badRequest('Give exactly one of text or button')
    }
    return { ok: true, ...(await ctx.services.channels.sandboxInbound(ctx.tenant.accountId, body)) }
  },
})

export const getChannelSettings = defineTool({
  name: 'get_channel_settings',
  title: 'Channel state',
  description:
    'Per channel (chat, email): connected, provider and versand_moeglich (sending possible). While sending is not possible nothing goes out: no newsletters, follow-ups or automations.',
  scope: 'settings:read',
  rest: 'GET /settings/channels',
  output: out.get_channel_settings,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { ...(await ctx.services.channels.channelsState(ctx.tenant.accountId, ctx.tenant.account)) }
  },
})

export const getCoexistence = defineTool({
  name: 'get_coexistence',
  title: 'Coexistence state',
  description:
    'Whether the WhatsApp number is also used in the WhatsApp Business app (coexistence: sending is paced at 20 messages per second), and whether it can be turned on (a chat number is connected).',
  scope: 'settings:read',
  rest: 'GET /settings/coexistence',
  output: out.get_coexistence,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { ...(await ctx.services.channels.coexistence(ctx.tenant.accountId)) }
  },
})

export const setCoexistence = defineTool({
  name: 'set_coexistence',
  title: 'Turn coexistence on or off',
  description: 'Turn coexistence on or off; turning it on needs a connected chat number.',
  scope: 'settings:write',
  rest: 'PATCH /settings/coexistence',
  output: out.set_coexistence,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ enabled: Type.Boolean() }),
  async run(ctx, args) {
    const body = restRule(CoexistenceBody, args, 'body')
    return { ...(await ctx.services.channels.setCoexistence(ctx.tenant.accountId, body.enabled)) }
  },
})

export const getConsentSettings = defineTool({
  name: 'get_consent_settings',
  title: 'Consent settings',
  description:
    'The start and stop keywords of the chat double opt-in and opt-out, the stop confirmation text, the landing page consent text and address, and whether an approved opt-in confirmation template exists.',
  scope: 'settings:read',
  rest: 'GET /settings/consent',
  output: out.get_consent_settings,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { ...(await ctx.services.consent.settings(ctx.tenant)) }
  },
})

export const updateConsentSettings = defineTool({
  name: 'update_consent_settings',
  title: 'Change the consent settings',
  description:
    'Change keywords and texts of the opt-in and opt-out; only given fields change, null restores a default. A keyword in both lists is refused. Never changes anyone’s opt-in.',
  scope: 'settings:write',
  rest: 'PATCH /settings/consent',
  output: out.update_consent_settings,
  kind: 'write',
  idempotent: true,
  input: Type.Object(ConsentSettingsBody.properties),
  async run(ctx, args) {
    const body = restRule(ConsentSettingsBody, args, 'body')
    return { ...(await ctx.services.consent.updateSettings(ctx.tenant, body)) }
  },
})

export const inboxTools = [
  listMessages,
  simulateInboundMessage,
  getChannelSettings,
  getCoexistence,
  setCoexistence,
  getConsentSettings,
  updateConsentSettings,
]
