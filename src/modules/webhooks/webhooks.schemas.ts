import { Type } from 'typebox'
import { EVENT_NAMES } from '../../platform/events/events.ts'
import { pageSchema, paginationQuery } from '../../platform/http/pagination.ts'

export const EventNameSchema = Type.Union(
  EVENT_NAMES.map((name) => Type.Literal(name)),
  { description: 'contact.created, message.received or conversation.created' },
)

export const CreateSubscriptionBody = Type.Object(
  {
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'absolute https URL that receives the signed POST requests (http only where private targets are allowed)',
    }),
    events: Type.Array(EventNameSchema, { minItems: 1, maxItems: 3, description: 'the events to receive' }),
  },
  { additionalProperties: false },
)

export const SubscriptionParams = Type.Object({ id: Type.String({ description: 'subscription id (uuid)' }) })

const subscriptionFields = {
  id: Type.String({ format: 'uuid' }),
  url: Type.String(),
  events: Type.Array(EventNameSchema),
  status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')], {
    description: 'a disabled subscription receives nothing until POST /webhook-subscriptions/{id}/enable',
  }),
  disabled_reason: Type.Union(
    [Type.Literal('gone_410'), Type.Literal('consecutive_failures'), Type.Literal('manual'), Type.Null()],
    {
      description:
        'why it was disabled: the receiver answered 410, 25 attempts in a row failed, or someone disabled it (manual); null while enabled',
    },
  ),
  disabled_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  consecutive_failures: Type.Integer({ description: 'failed attempts since the last success; 25 disable' }),
  created_at: Type.String({ format: 'date-time' }),
}

export const Subscription = Type.Object(subscriptionFields, { title: 'WebhookSubscription' })

export const SubscriptionWithSecret = Type.Object(
  {
    ...subscriptionFields,
    secret: Type.String({
      description:
        'the signing secret (256 bits). Shown only in this response: store it now. X-Service-Signature is v1=<hex> with hex = HMAC-SHA256 keyed with this whole string over timestamp + "." + raw body.',
    }),
  },
  { title: 'WebhookSubscriptionWithSecret' },
)

export const DeletedSubscription = Type.Object({
  id: Type.String({ format: 'uuid' }),
  deleted: Type.Literal(true),
})

export const ListQuery = Type.Object(paginationQuery({ maxLimit: 100, defaultLimit: 25, maxOffset: 100_000 }))

export const SubscriptionPage = pageSchema('webhook_subscriptions', Subscription)

export const DeliveryAttempt = Type.Object(
  {
    id: Type.String({ format: 'uuid', description: 'the attempt' }),
    delivery_id: Type.String({
      format: 'uuid',
      description: 'the (event, subscription) delivery this attempt belongs to',
    }),
    event_id: Type.String({ description: 'the event id as sent: <event name>:<uuid>, equal to X-Service-Delivery' }),
    event: EventNameSchema,
    attempt: Type.Integer({ minimum: 1, maximum: 7, description: 'attempt number of this delivery, 1 to 7' }),
    attempted_at: Type.String({ format: 'date-time', description: 'when the attempt started (X-Service-Timestamp)' }),
    duration_ms: Type.Integer(),
    succeeded: Type.Boolean({ description: 'the receiver answered 2xx' }),
    status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'the HTTP status, null when none came' }),
    error: Type.Union(
      [
        Type.Literal('timeout'),
        Type.Literal('connection_failed'),
        Type.Literal('dns_failed'),
        Type.Literal('blocked_target'),
        Type.Literal('invalid_url'),
        Type.Null(),
      ],
      { description: 'why no HTTP status came; null when one did' },
    ),
    delivery_state: Type.Union(
      [Type.Literal('retrying'), Type.Literal('succeeded'), Type.Literal('exhausted'), Type.Literal('dropped')],
      {
        description:
          'the delivery after this attempt: retrying (next_attempt_at is set), succeeded, exhausted (7 attempts failed; the event is dropped for this subscription), dropped (the subscription was disabled)',
      },
    ),
    next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { title: 'WebhookDeliveryAttempt' },
)

export const DeliveryAttemptPage = pageSchema('deliveries', DeliveryAttempt)

export const UpdateSubscriptionBody = Type.Object(
  {
    url: Type.Optional(CreateSubscriptionBody.properties.url),
    events: Type.Optional(CreateSubscriptionBody.properties.events),
  },
  { additionalProperties: false },
)

export const DeliveryParams = Type.Object({ id: Type.String({ description: 'delivery id (uuid)' }) })

export const Delivery = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    subscription_id: Type.String({ format: 'uuid' }),
    event_id: Type.String({ description: 'the event id as sent: <event name>:<uuid>' }),
    event: EventNameSchema,
    state: Type.Union(
      [Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('exhausted'), Type.Literal('dropped')],
      { description: 'pending (an attempt is due), succeeded, exhausted (7 attempts failed), dropped (disabled)' },
    ),
    attempts: Type.Integer({ description: 'attempts made so far' }),
    next_attempt_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    payload: Type.Record(Type.String(), Type.Unknown(), {
      description: 'the JSON body the receiver gets: {id, event, created_at, data}',
    }),
    history: Type.Array(DeliveryAttempt, { description: 'its attempts, newest first' }),
  },
  { title: 'WebhookDelivery' },
)

export const TestEventBody = Type.Object({ event: Type.Optional(EventNameSchema) }, { additionalProperties: false })

export const TestEventResponse = Type.Object({
  delivery: Delivery,
  notice: Type.String(),
})

export const EventTypes = Type.Object({
  event_types: Type.Array(
    Type.Object({
      name: EventNameSchema,
      description: Type.String(),
      data_fields: Type.Array(Type.String(), { description: 'the fields of the event’s data' }),
    }),
  ),
})
