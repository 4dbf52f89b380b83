import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { namedPage } from '../../platform/http/pagination.ts'
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

const tags = ['webhooks']
/** The services the webhooks' operations call. */
export interface WebhooksServices {
  webhooks: WebhooksService
}

const operation = operationsUsing<WebhooksServices>()
const DeliveryResponse = Type.Object({ delivery: Delivery })

export const createWebhookSubscription = operation({
  method: 'POST',
  path: '/webhook-subscriptions',
  scope: 'webhooks:write',
  operationId: 'createWebhookSubscription',
  summary: 'Subscribe an address to events',
  description:
    'Creates a subscription and returns its signing secret, the only time it is shown. Deliveries follow section 6: signed POST requests, retried after 1 min, 5 min, 30 min, 2 h, 6 h and 12 h. 409 webhook_limit_reached when the plan allows no more subscriptions; 400 with key webhook_url_invalid, webhook_url_https_required or webhook_url_not_public for an unusable url.',
  tags,
  body: CreateSubscriptionBody,
  status: 201,
  response: SubscriptionWithSecret,
  errors: {
    400: 'webhook_url_invalid: url is not an absolute http(s) address or carries credentials; webhook_url_https_required: url must use https; webhook_url_not_public: url points to a private address',
    409: "webhook_limit_reached: the plan's number of subscriptions is reached",
  },
  async handle({ webhooks }, { tenant, body }) {
    return webhooks.create(tenant, body)
  },
})

export const listWebhookSubscriptions = operation({
  method: 'GET',
  path: '/webhook-subscriptions',
  scope: 'webhooks:read',
  operationId: 'listWebhookSubscriptions',
  summary: 'List webhook subscriptions',
  description: 'Newest first. Secrets are never shown here.',
  tags,
  query: ListQuery,
  response: SubscriptionPage,
  handle: async ({ webhooks }, { tenant, query }) =>
    namedPage('webhook_subscriptions', await webhooks.list(tenant, query)),
})

export const getWebhookSubscription = operation({
  method: 'GET',
  path: '/webhook-subscriptions/{id}',
  scope: 'webhooks:read',
  operationId: 'getWebhookSubscription',
  summary: 'One webhook subscription',
  tags,
  params: SubscriptionParams,
  response: Subscription,
  async handle({ webhooks }, { tenant, params }) {
    return webhooks.get(tenant, params.id)
  },
})

export const deleteWebhookSubscription = operation({
  method: 'DELETE',
  path: '/webhook-subscriptions/{id}',
  scope: 'webhooks:write',
  operationId: 'deleteWebhookSubscription',
  summary: 'Delete a webhook subscription',
  description: 'Its pending deliveries are not attempted any more; its delivery history is removed with it.',
  tags,
  params: SubscriptionParams,
  response: DeletedSubscription,
  async handle({ webhooks }, { tenant, params }) {
    return webhooks.remove(tenant, params.id)
  },
})

export const enableWebhookSubscription = operation({
  method: 'POST',
  path: '/webhook-subscriptions/{id}/enable',
  scope: 'webhooks:write',
  operationId: 'enableWebhookSubscription',
  summary: 'Turn a disabled subscription back on',
  description:
    'Clears disabled_reason and the failure count. Events recorded while it was disabled are not delivered; deliveries pending when it was disabled were dropped. Enabling an enabled subscription changes nothing.',
  tags,
  params: SubscriptionParams,
  response: Subscription,
  async handle({ webhooks }, { tenant, params }) {
    return webhooks.enable(tenant, params.id)
  },
})

export const rotateWebhookSubscriptionSecret = operation({
  method: 'POST',
  path: '/webhook-subscriptions/{id}/rotate-secret',
  scope: 'webhooks:write',
  operationId: 'rotateWebhookSubscriptionSecret',
  summary: 'Replace the signing secret',
  description:
    'Returns the new secret, the only time it is shown. It replaces the old one at once: every later attempt, retries of earlier events included, is signed with it.',
  tags,
  params: SubscriptionParams,
  response: SubscriptionWithSecret,
  async handle({ webhooks }, { tenant, params }) {
    return webhooks.rotateSecret(tenant, params.id)
  },
})

export const listWebhookSubscriptionDeliveries = operation({
  method: 'GET',
  path: '/webhook-subscriptions/{id}/deliveries',
  scope: 'webhooks:read',
  operationId: 'listWebhookSubscriptionDeliveries',
  summary: 'Delivery attempts of a subscription',
  description:
    'Every attempt, newest first: event id (equal to X-Service-Delivery), attempt number, status code or error, duration, and the next attempt time while retrying.',
  tags,
  params: SubscriptionParams,
  query: ListQuery,
  response: DeliveryAttemptPage,
  handle: async ({ webhooks }, { tenant, params, query }) =>
    namedPage('deliveries', await webhooks.deliveries(tenant, params.id, query)),
})

export const listWebhookEventTypes = operation({
  method: 'GET',
  path: '/webhook-event-types',
  scope: 'webhooks:read',
  operationId: 'listWebhookEventTypes',
  summary: 'The events a subscription can receive',
  description: 'Each event name with what it reports and the fields of its data.',
  tags,
  response: EventTypes,
  async handle({ webhooks }) {
    return { event_types: webhooks.eventTypes() }
  },
})

export const updateWebhookSubscription = operation({
  method: 'PATCH',
  path: '/webhook-subscriptions/{id}',
  scope: 'webhooks:write',
  operationId: 'updateWebhookSubscription',
  summary: 'Change a subscription’s address or events',
  description:
    'Only given fields change; a new url is checked as on create (400 webhook_url_invalid, webhook_url_https_required, webhook_url_not_public). The signing secret stays; deliveries already owed go to the new address.',
  tags,
  params: SubscriptionParams,
  body: UpdateSubscriptionBody,
  response: Subscription,
  errors: {
    400: 'bad_request: neither url nor events given; webhook_url_invalid: url is not an absolute http(s) address or carries credentials; webhook_url_https_required: url must use https; webhook_url_not_public: url points to a private address',
  },
  async handle({ webhooks }, { tenant, params, body }) {
    return webhooks.update(tenant, params.id, body)
  },
})

export const disableWebhookSubscription = operation({
  method: 'POST',
  path: '/webhook-subscriptions/{id}/disable',
  scope: 'webhooks:write',
  operationId: 'disableWebhookSubscription',
  summary: 'Disable a subscription',
  description:
    'Nothing is delivered until POST /webhook-subscriptions/{id}/enable; pending deliveries are dropped (disabled_reason manual). Disabling a disabled subscription changes nothing.',
  tags,
  params: SubscriptionParams,
  response: Subscription,
  async handle({ webhooks }, { tenant, params }) {
    return webhooks.disable(tenant, params.id)
  },
})

export const testWebhookSubscription = operation({
  method: 'POST',
  path: '/webhook-subscriptions/{id}/test',
  scope: 'webhooks:write',
  operationId: 'testWebhookSubscription',
  summary: 'Send a signed test event to this subscription',
  description:
    'One event the subscription receives (default its first), with example data and test: true, signed and retried like any delivery, to this subscription only. 409 subscription_disabled; 400 event_not_subscribed.',
  tags,
  params: SubscriptionParams,
  body: TestEventBody,
  status: 202,
  response: TestEventResponse,
  errors: {
    400: 'event_not_subscribed: the subscription does not receive this event',
    409: 'subscription_disabled: the subscription is disabled',
  },
  async handle({ webhooks }, { tenant, params, body }) {
    const delivery = await webhooks.sendTest(tenant, params.id, body?.event)
    return { delivery, notice: 'The test event is queued; its attempts appear in history.' }
  },
})

export const getWebhookDelivery = operation({
  method: 'GET',
  path: '/webhook-deliveries/{id}',
  scope: 'webhooks:read',
  operationId: 'getWebhookDelivery',
  summary: 'One delivery: its state, payload and attempts',
  description: 'The id is the delivery_id of an attempt in GET /webhook-subscriptions/{id}/deliveries.',
  tags,
  params: DeliveryParams,
  response: DeliveryResponse,
  async handle({ webhooks }, { tenant, params }) {
    return { delivery: await webhooks.delivery(tenant, params.id) }
  },
})

export const redeliverWebhookDelivery = operation({
  method: 'POST',
  path: '/webhook-deliveries/{id}/redeliver',
  scope: 'webhooks:write',
  operationId: 'redeliverWebhookDelivery',
  summary: 'Deliver an event again',
  description:
    'A succeeded, exhausted or dropped delivery is attempted again from its first attempt with the same event id (X-Service-Delivery), so a receiver that deduplicates sees a repeat. 409 delivery_pending while an attempt is due; 409 subscription_disabled.',
  tags,
  params: DeliveryParams,
  status: 202,
  response: DeliveryResponse,
  errors: {
    409: 'subscription_disabled: the subscription is disabled; delivery_pending: the delivery is still pending',
  },
  async handle({ webhooks }, { tenant, params }) {
    return { delivery: await webhooks.redeliver(tenant, params.id) }
  },
})

export function webhooksRoutes(services: WebhooksServices) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, services, [
      createWebhookSubscription,
      listWebhookSubscriptions,
      getWebhookSubscription,
      deleteWebhookSubscription,
      enableWebhookSubscription,
      rotateWebhookSubscriptionSecret,
      listWebhookSubscriptionDeliveries,
      listWebhookEventTypes,
      updateWebhookSubscription,
      disableWebhookSubscription,
      testWebhookSubscription,
      getWebhookDelivery,
      redeliverWebhookDelivery,
    ])
  }
}
