import { Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import { withOk } from '../../platform/tools/outputs.ts'
import { restRule, toolsUsing } from '../../platform/tools/tool.ts'
import { ChatStatus } from './channels.app.ts'
import {
  ChannelsSettings,
  Coexistence,
  CoexistenceBody,
  InboundResult,
  SandboxInboundBody,
} from './channels.schemas.ts'
import type { ChannelsService } from './channels.service.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  channels: ChannelsService
}

const defineTool = toolsUsing<Services>()

export const simulateInboundMessage = defineTool({
  name: 'simulate_inbound_message',
  title: 'Simulate a customer message (sandbox)',
  description:
    'Only while the sandbox is the chat provider: a customer with this phone number writes a text (or presses a button). It runs through the real inbound processing: contact and conversation found or created, keywords, events, automations.',
  scope: 'messages:write',
  rest: 'POST /sandbox/inbound',
  output: withOk(InboundResult),
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
  output: ChannelsSettings,
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
  output: Coexistence,
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
  output: Coexistence,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ enabled: Type.Boolean() }),
  async run(ctx, args) {
    const body = restRule(CoexistenceBody, args, 'body')
    return { ...(await ctx.services.channels.setCoexistence(ctx.tenant.accountId, body.enabled)) }
  },
})

export const getChatChannelStatus = defineTool({
  name: 'get_chat_channel_status',
  title: 'Chat number status and daily limit',
  description:
    'The WhatsApp number: connected or not, provider and number, whether sending is possible, messages per second (coexistence), and the daily limit tier with the different customers reached in the last 24 hours, how many are left and when the window has room again.',
  scope: 'settings:read',
  rest: 'GET /app/channels/chat',
  output: ChatStatus,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { ...(await ctx.services.channels.chatStatus(ctx.tenant.accountId, ctx.tenant.account)) }
  },
})

/** In the order the tool server lists them. */
export const channelsTools = [
  simulateInboundMessage,
  getChannelSettings,
  getCoexistence,
  setCoexistence,
  getChatChannelStatus,
]
