import { Type } from 'typebox'

const ChannelState = Type.Object(
  {
    connected: Type.Boolean(),
    verbunden: Type.Boolean({ description: 'deprecated German alias of connected' }),
    was_connected: Type.Boolean({ description: 'connected before and disconnected since' }),
    war_verbunden: Type.Boolean({ description: 'deprecated German alias of was_connected' }),
    provider: Type.Union([Type.String(), Type.Null()], {
      description: 'chat: sandbox or whatsapp-cloud; email: sandbox or smtp; null when not connected',
    }),
    address: Type.Union([Type.String(), Type.Null()], { description: 'the business number or sender address' }),
    versand_moeglich: Type.Boolean({
      description: 'sending possible on this channel: connected and sending not paused; while false nothing goes out',
    }),
    coexistence: Type.Optional(Type.Boolean()),
    messages_per_second: Type.Optional(
      Type.Integer({ description: 'outbound pacing of the number: 80 by default, at most 1000, 20 with coexistence' }),
    ),
    daily_limit: Type.Optional(
      Type.Union([Type.Integer(), Type.Null()], {
        description:
          "new conversations the number may start per rolling 24 hours (WhatsApp's tier: 250, 1000, 10000, 100000); null = unlimited",
      }),
    ),
  },
  { title: 'ChannelState' },
)

export const ChannelsSettings = Type.Object(
  {
    versand_moeglich: Type.Boolean({
      description:
        'sending possible on at least one channel; while false nothing goes out (no newsletters, follow-ups, automations)',
    }),
    sending_paused: Type.Boolean({ description: 'sending is paused for the account (403 subscription_locked)' }),
    chat: ChannelState,
    email: ChannelState,
  },
  { title: 'ChannelsSettings' },
)

export const Coexistence = Type.Object(
  {
    available: Type.Boolean({ description: 'true only when a chat number is connected' }),
    enabled: Type.Boolean({ description: 'the number is also used in the WhatsApp Business app' }),
    messages_per_second: Type.Union([Type.Integer(), Type.Null()], {
      description: 'the pacing in effect: 20 with coexistence; null without a connected number',
    }),
  },
  { title: 'Coexistence' },
)

export const CoexistenceBody = Type.Object({ enabled: Type.Boolean() })

export const SandboxInboundBody = Type.Object(
  {
    from: Type.String({
      minLength: 1,
      maxLength: 40,
      description: "the customer's phone number, international format",
    }),
    name: Type.Optional(Type.String({ maxLength: 120, description: "the customer's profile name" })),
    text: Type.Optional(Type.String({ maxLength: 4096, description: 'a text message, or the caption of media' })),
    button: Type.Optional(Type.String({ minLength: 1, maxLength: 25, description: 'a quick-reply button press' })),
    media: Type.Optional(
      Type.Object({
        data_base64: Type.String({ minLength: 1 }),
        mime: Type.String({
          minLength: 3,
          maxLength: 100,
          description: 'image/…, video/…, audio/… or a document type',
        }),
        filename: Type.Optional(Type.String({ maxLength: 200 })),
      }),
    ),
    location: Type.Optional(
      Type.Object({
        latitude: Type.Number({ minimum: -90, maximum: 90 }),
        longitude: Type.Number({ minimum: -180, maximum: 180 }),
        name: Type.Optional(Type.String({ maxLength: 200 })),
      }),
    ),
  },
  { title: 'SandboxInbound' },
)

export const InboundResult = Type.Object({
  ok: Type.Boolean(),
  received: Type.Integer({ description: 'messages in the request' }),
  stored: Type.Integer({ description: 'messages stored now (a duplicate provider message id is stored once)' }),
  statuses: Type.Integer({ description: 'status updates applied' }),
})
