import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import type { ChannelsServices } from './channels.routes.ts'
import type { ChannelsService } from './channels.service.ts'

export const ChatStatus = Type.Object(
  {
    connected: Type.Boolean(),
    provider: Type.Union([Type.String(), Type.Null()], { description: 'whatsapp-cloud or sandbox; null when none' }),
    number: Type.Union([Type.String(), Type.Null()], { description: 'the connected phone number' }),
    connected_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    disconnected_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    sending_possible: Type.Boolean({ description: 'connected and sending not paused (versand_moeglich)' }),
    sending_paused: Type.Boolean(),
    coexistence: Type.Boolean({ description: 'the number is also used in the WhatsApp Business app' }),
    messages_per_second: Type.Union([Type.Integer(), Type.Null()], { description: 'the pace set for the number' }),
    pace: Type.Object(
      {
        current: Type.Union([Type.Integer(), Type.Null()], {
          description:
            'messages per second the number sends at now: below messages_per_second after throughput refusals (130429), recovering step by step; null without a connected number',
        }),
        lowered_reason: Type.Union([Type.String(), Type.Null()], {
          description: 'why the pace is lower: throughput_refused (the provider answered 130429); null at full pace',
        }),
        lowered_since: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
        last_refusal_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      },
      { description: 'adaptive pace: the provider refusing for throughput lowers it for every process' },
    ),
    daily_limit: Type.Object({
      limit: Type.Union([Type.Integer(), Type.Null()], {
        description: 'different customers the number may start conversations with per 24 hours; null: unlimited',
      }),
      tier: Type.Union([Type.Integer(), Type.Null()], { description: 'WhatsApp’s tier: 250, 1000, 10000, 100000' }),
      used_last_24h: Type.Integer({ description: 'customers reached in the rolling 24 hours' }),
      left: Type.Union([Type.Integer(), Type.Null()]),
      resumes_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description: 'when the full window has room again; null while it has room',
      }),
    }),
  },
  { title: 'ChatStatus' },
)

const operation = operationsUsing<ChannelsServices>()

/** The web app's channel page: the chat number's state and its daily limit. */
export const getChatChannel = operation({
  method: 'GET',
  path: '/channels/chat',
  mount: 'app',
  scope: 'settings:read',
  operationId: 'getChatChannel',
  summary: 'The chat number: connection, pace and daily limit',
  description:
    'Needs settings:read. Provider and number, whether sending is possible, messages per second (set, and current with why it is lower), and the daily limit tier with the customers reached in the last 24 hours and when the window has room again.',
  tags: ['app'],
  response: ChatStatus,
  handle: ({ channels }, { tenant }) => channels.chatStatus(tenant.accountId, tenant.account),
})

export function channelsAppRoutes(channels: ChannelsService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { channels }, [getChatChannel])
  }
}
