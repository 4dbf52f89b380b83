import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { errorResponses } from '../../platform/http/errors.ts'
import {
  CreateSubscriptionBody,
  DeletedSubscription,
  Delivery,
  DeliveryAttemptPage,
  DeliveryParams,
  EventTypes,
  ListQuery,
  Subscription,
  SubscriptionPage,
  SubscriptionParams,
  SubscriptionWithSecret,
  TestEventBody,
  TestEventResponse,
  UpdateSubscriptionBody,
} from './webhooks.schemas.ts'
import type { WebhooksService } from './webhooks.service.ts'

type Params = Static<typeof SubscriptionParams>
type Query = Static<typeof ListQuery>
const tags = ['webhooks']

export function webhooksRoutes(service: WebhooksService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Body: Static<typeof CreateSubscriptionBody> }>(
      '/webhook-subscriptions',
      {
        config: { scope: 'webhooks:write' },
        schema: {
          operationId: 'createWebhookSubscription',
          summary: 'Subscribe an address to events',
          description:
            'Creates a subscription and returns its signing secret, the only time it is shown. Deliveries follow section 6: signed POST requests, retried after 1 min, 5 min, 30 min, 2 h, 6 h and 12 h. 409 webhook_limit_reached when the plan allows no more subscriptions; 400 with key webhook_url_invalid, webhook_url_https_required or webhook_url_not_public for an unusable url.',
          tags,
          body: CreateSubscriptionBody,
          response: {
            ...errorResponses({
              400: 'webhook_url_invalid: url is not an absolute http(s) address or carries credentials; webhook_url_https_required: url must use https; webhook_url_not_public: url points to a private address',
              409: "webhook_limit_reached: the plan's number of subscriptions is reached",
            }),
            201: SubscriptionWithSecret,
          },
        },
      },
      async (request, reply) => reply.code(201).send(await service.create(request.tenant, request.body)),
    )

    app.get<{ Querystring: Query }>(
      '/webhook-subscriptions',
      {
        config: { scope: 'webhooks:read' },
        schema: {
          operationId: 'listWebhookSubscriptions',
          summary: 'List webhook subscriptions',
          description: 'Newest first. Secrets are never shown here.',
          tags,
          querystring: ListQuery,
          response: { 200: SubscriptionPage },
        },
      },
      async (request) => {
        const page = await service.list(request.tenant, request.query)
        const { items, ...rest } = page
        return { webhook_subscriptions: items, ...rest }
      },
    )

    app.get<{ Params: Params }>(
      '/webhook-subscriptions/:id',
      {
        config: { scope: 'webhooks:read' },
        schema: {
          operationId: 'getWebhookSubscription',
          summary: 'One webhook subscription',
          tags,
          params: SubscriptionParams,
          response: { 200: Subscription },
        },
      },
      async (request) => service.get(request.tenant, request.params.id),
    )

    app.delete<{ Params: Params }>(
      '/webhook-subscriptions/:id',
      {
        config: { scope: 'webhooks:write' },
        schema: {
          operationId: 'deleteWebhookSubscription',
          summary: 'Delete a webhook subscription',
          description: 'Its pending deliveries are not attempted any more; its delivery history is removed with it.',
          tags,
          params: SubscriptionParams,
          response: { 200: DeletedSubscription },
        },
      },
      async (request) => service.remove(request.tenant, request.params.id),
    )

    app.post<{ Params: Params }>(
      '/webhook-subscriptions/:id/enable',
      {
        config: { scope: 'webhooks:write' },
        schema: {
          operationId: 'enableWebhookSubscription',
          summary: 'Turn a disabled subscription back on',
          description:
            'Clears disabled_reason and the failure count. Events recorded while it was disabled are not delivered; deliveries pending when it was disabled were dropped. Enabling an enabled subscription changes nothing.',
          tags,
          params: SubscriptionParams,
          response: { 200: Subscription },
        },
      },
      async (request) => service.enable(request.tenant, request.params.id),
    )

    app.post<{ Params: Params }>(
      '/webhook-subscriptions/:id/rotate-secret',
      {
        config: { scope: 'webhooks:write' },
        schema: {
          operationId: 'rotateWebhookSubscriptionSecret',
          summary: 'Replace the signing secret',
          description:
            'Returns the new secret, the only time it is shown. It replaces the old one at once: every later attempt, retries of earlier events included, is signed with it.',
          tags,
          params: SubscriptionParams,
          response: { 200: SubscriptionWithSecret },
        },
      },
      async (request) => service.rotateSecret(request.tenant, request.params.id),
    )

    app.get<{ Params: Params; Querystring: Query }>(
      '/webhook-subscriptions/:id/deliveries',
      {
        config: { scope: 'webhooks:read' },
        schema: {
          operationId: 'listWebhookSubscriptionDeliveries',
          summary: 'Delivery attempts of a subscription',
          description:
            'Every attempt, newest first: event id (equal to X-Service-Delivery), attempt number, status code or error, duration, and the next attempt time while retrying.',
          tags,
          params: SubscriptionParams,
          querystring: ListQuery,
          response: { 200: DeliveryAttemptPage },
        },
      },
      async (request) => {
        const { items, ...rest } = await service.deliveries(request.tenant, request.params.id, request.query)
        return { deliveries: items, ...rest }
      },
    )
    app.get(
      '/webhook-event-types',
      {
        config: { scope: 'webhooks:read' },
        schema: {
          operationId: 'listWebhookEventTypes',
          summary: 'The events a subscription can receive',
          description: 'Each event name with what it reports and the fields of its data.',
          tags,
          response: { 200: EventTypes },
        },
      },
      async () => ({ event_types: service.eventTypes() }),
    )

    app.patch<{ Params: Params; Body: Static<typeof UpdateSubscriptionBody> }>(
      '/webhook-subscriptions/:id',
      {
        config: { scope: 'webhooks:write' },
        schema: {
          operationId: 'updateWebhookSubscription',
          summary: 'Change a subscription’s address or events',
          description:
            'Only given fields change; a new url is checked as on create (400 webhook_url_invalid, webhook_url_https_required, webhook_url_not_public). The signing secret stays; deliveries already owed go to the new address.',
          tags,
          params: SubscriptionParams,
          body: UpdateSubscriptionBody,
          response: {
            ...errorResponses({
              400: 'bad_request: neither url nor events given; webhook_url_invalid: url is not an absolute http(s) address or carries credentials; webhook_url_https_required: url must use https; webhook_url_not_public: url points to a private address',
            }),
            200: Subscription,
          },
        },
      },
      async (request) => service.update(request.tenant, request.params.id, request.body),
    )

    app.post<{ Params: Params }>(
      '/webhook-subscriptions/:id/disable',
      {
        config: { scope: 'webhooks:write' },
        schema: {
          operationId: 'disableWebhookSubscription',
          summary: 'Disable a subscription',
          description:
            'Nothing is delivered until POST /webhook-subscriptions/{id}/enable; pending deliveries are dropped (disabled_reason manual). Disabling a disabled subscription changes nothing.',
          tags,
          params: SubscriptionParams,
          response: { 200: Subscription },
        },
      },
      async (request) => service.disable(request.tenant, request.params.id),
    )

    app.post<{ Params: Params; Body: Static<typeof TestEventBody> }>(
      '/webhook-subscriptions/:id/test',
      {
        config: { scope: 'webhooks:write' },
        schema: {
          operationId: 'testWebhookSubscription',
          summary: 'Send a signed test event to this subscription',
          description:
            'One event the subscription receives (default its first), with example data and test: true, signed and retried like any delivery, to this subscription only. 409 subscription_disabled; 400 event_not_subscribed.',
          tags,
          params: SubscriptionParams,
          body: TestEventBody,
          response: {
            ...errorResponses({
              400: 'event_not_subscribed: the subscription does not receive this event',
              409: 'subscription_disabled: the subscription is disabled',
            }),
            202: TestEventResponse,
          },
        },
      },
      async (request, reply) => {
        const delivery = await service.sendTest(request.tenant, request.params.id, request.body?.event)
        return reply.code(202).send({ delivery, notice: 'The test event is queued; its attempts appear in history.' })
      },
    )

    app.get<{ Params: Static<typeof DeliveryParams> }>(
      '/webhook-deliveries/:id',
      {
        config: { scope: 'webhooks:read' },
        schema: {
          operationId: 'getWebhookDelivery',
          summary: 'One delivery: its state, payload and attempts',
          description: 'The id is the delivery_id of an attempt in GET /webhook-subscriptions/{id}/deliveries.',
          tags,
          params: DeliveryParams,
          response: { 200: Type.Object({ delivery: Delivery }) },
        },
      },
      async (request) => ({ delivery: await service.delivery(request.tenant, request.params.id) }),
    )

    app.post<{ Params: Static<typeof DeliveryParams> }>(
      '/webhook-deliveries/:id/redeliver',
      {
        config: { scope: 'webhooks:write' },
        schema: {
          operationId: 'redeliverWebhookDelivery',
          summary: 'Deliver an event again',
          description:
            'A succeeded, exhausted or dropped delivery is attempted again from its first attempt with the same event id (X-Service-Delivery), so a receiver that deduplicates sees a repeat. 409 delivery_pending while an attempt is due; 409 subscription_disabled.',
          tags,
          params: DeliveryParams,
          response: {
            ...errorResponses({
              409: 'subscription_disabled: the subscription is disabled; delivery_pending: the delivery is still pending',
            }),
            202: Type.Object({ delivery: Delivery }),
          },
        },
      },
      async (request, reply) =>
        reply.code(202).send({ delivery: await service.redeliver(request.tenant, request.params.id) }),
    )
  }
}
