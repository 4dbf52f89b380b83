import { Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { getChatChannel } from './channels.app.ts'
import {
  type ChannelsServices,
  getChannelSettings,
  getCoexistenceSettings,
  simulateInboundMessage,
  updateCoexistenceSettings,
} from './channels.routes.ts'

// Each tool stands for an operation of channels.routes.ts or channels.app.ts: its arguments, limits, scope and answer
// are the operation's.
const tool = operationTools<ChannelsServices>()

/** In the order the tool server lists them. */
export const channelsTools = [
  tool(simulateInboundMessage, {
    name: 'simulate_inbound_message',
    title: 'Simulate a customer message (sandbox)',
    description:
      'Only while the sandbox is the chat provider: a customer with this phone number writes a text (or presses a button). It runs through the real inbound processing: contact and conversation found or created, keywords, events, automations.',
    pick: ['from', 'name', 'text', 'button'],
    // the spec's tool takes no empty text
    schemas: { text: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })) },
    run(ctx, call) {
      const body = call.body as { text?: string; button?: string }
      if ((body.text === undefined) === (body.button === undefined)) {
        throw badRequest('Give exactly one of text or button')
      }
      return simulateInboundMessage.handle(ctx.services, call as never) as Promise<Record<string, unknown>>
    },
  }),
  tool(getChannelSettings, {
    name: 'get_channel_settings',
    title: 'Channel state',
    description:
      'Per channel (chat, email): connected, provider and versand_moeglich (sending possible). While sending is not possible nothing goes out: no newsletters, follow-ups or automations.',
    // the tool answers in English only: REST adds the German aliases of each channel's state
    run: async (ctx, { tenant }) => ({
      ...(await ctx.services.channels.channelsState(tenant.accountId, tenant.account)),
    }),
  }),
  tool(getCoexistenceSettings, {
    name: 'get_coexistence',
    title: 'Coexistence state',
    description:
      'Whether the WhatsApp number is also used in the WhatsApp Business app (coexistence: sending is paced at 20 messages per second), and whether it can be turned on (a chat number is connected).',
  }),
  tool(updateCoexistenceSettings, {
    name: 'set_coexistence',
    title: 'Turn coexistence on or off',
    description: 'Turn coexistence on or off; turning it on needs a connected chat number.',
  }),
  tool(getChatChannel, {
    name: 'get_chat_channel_status',
    title: 'Chat number status and daily limit',
    description:
      'The WhatsApp number: connected or not, provider and number, whether sending is possible, messages per second (coexistence), and the daily limit tier with the different customers reached in the last 24 hours, how many are left and when the window has room again.',
  }),
]
