import { Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { getChatChannel } from './channels.app.ts'
import * as channels from './channels.routes.ts'

const tool = operationTools<channels.ChannelsServices>()

export const channelsTools = [
  tool(channels.simulateInboundMessage, {
    name: 'simulate_inbound_message',
    title: 'Simulate a customer message (sandbox)',
    description:
      'Only while the sandbox is the chat provider: a customer with this phone number writes a text (or presses a button). It runs through the real inbound processing: contact and conversation found or created, keywords, events, automations.',
    pick: ['from', 'name', 'text', 'button'],
    // the spec's tool takes no empty text
    schemas: { text: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })) },
    run(ctx, call) {
      const body = call.body
      if ((body.text === undefined) === (body.button === undefined)) {
        throw badRequest('Give exactly one of text or button')
      }
      return channels.simulateInboundMessage.handle(ctx.services, call as never)
    },
  }),
  tool(channels.getChannelSettings, {
    name: 'get_channel_settings',
    description:
      'Per channel (chat, email): connected, provider and versand_moeglich (sending possible). While sending is not possible nothing goes out: no newsletters, follow-ups or automations.',
    // the tool answers in English only: REST adds the German aliases of each channel's state
    run: async (ctx, { tenant }) => ({
      ...(await ctx.services.channels.channelsState(tenant.accountId, tenant.account)),
    }),
  }),
  tool(channels.getCoexistenceSettings, {
    name: 'get_coexistence',
    description:
      'Whether the WhatsApp number is also used in the WhatsApp Business app (coexistence: sending is paced at 20 messages per second), and whether it can be turned on (a chat number is connected).',
  }),
  tool(channels.updateCoexistenceSettings, {
    name: 'set_coexistence',
    description: 'Turn coexistence on or off; turning it on needs a connected chat number.',
  }),
  tool(getChatChannel, {
    name: 'get_chat_channel_status',
    title: 'Chat number status and daily limit',
    description:
      'The WhatsApp number: connected or not, provider and number, whether sending is possible, messages per second (coexistence), and the daily limit tier with the different customers reached in the last 24 hours, how many are left and when the window has room again.',
  }),
]
