import { Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import { paging, Uuid } from '../../platform/tools/common.ts'
import { obj } from '../../platform/tools/outputs.ts'
import { restRule, toolsUsing } from '../../platform/tools/tool.ts'
import {
  CreateSubscriptionBody,
  DeletedSubscription,
  Delivery,
  DeliveryAttemptPage,
  EventNameSchema,
  EventTypes,
  Subscription,
  SubscriptionPage,
  SubscriptionWithSecret,
  TestEventResponse,
  UpdateSubscriptionBody,
  ListQuery as WebhookListQuery,
} from './webhooks.schemas.ts'
import type { WebhooksService } from './webhooks.service.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  webhooks: WebhooksService
}

const defineTool = toolsUsing<Services>()

const SubscriptionId = Uuid('the subscription id, from list_webhook_subscriptions')

const DeliveryId = Uuid('the delivery id: delivery_id of an attempt in list_webhook_deliveries')

export const createWebhookSubscription = defineTool({
  name: 'create_webhook_subscription',
  title: 'Subscribe an address to events',
  description:
    'Register an https address that receives contact.created, message.received and/or conversation.created as signed POST requests. The answer shows the signing secret once.',
  scope: 'webhooks:write',
  rest: 'POST /webhook-subscriptions',
  output: SubscriptionWithSecret,
  kind: 'write',
  openWorld: true,
  input: Type.Object(CreateSubscriptionBody.properties),
  async run(ctx, args) {
    const body = restRule(CreateSubscriptionBody, args, 'body')
    return { ...(await ctx.services.webhooks.create(ctx.tenant, body)) }
  },
})

export const listWebhookSubscriptions = defineTool({
  name: 'list_webhook_subscriptions',
  title: 'List webhook subscriptions',
  description: 'The webhook subscriptions with their events, state and last error (secrets are not shown).',
  scope: 'webhooks:read',
  rest: 'GET /webhook-subscriptions',
  output: SubscriptionPage,
  kind: 'read',
  input: Type.Object(paging(100, 25)),
  async run(ctx, args) {
    const query = restRule(WebhookListQuery, args, 'query')
    const { items, ...page } = await ctx.services.webhooks.list(ctx.tenant, query)
    return { webhook_subscriptions: items, ...page }
  },
})

export const getWebhookSubscription = defineTool({
  name: 'get_webhook_subscription',
  title: 'Get a webhook subscription',
  description: 'One webhook subscription with its events, state, failures in a row and last error.',
  scope: 'webhooks:read',
  rest: 'GET /webhook-subscriptions/{id}',
  output: Subscription,
  kind: 'read',
  input: Type.Object({ subscription_id: SubscriptionId }),
  async run(ctx, args) {
    return { ...(await ctx.services.webhooks.get(ctx.tenant, args.subscription_id)) }
  },
})

export const deleteWebhookSubscription = defineTool({
  name: 'delete_webhook_subscription',
  title: 'Delete a webhook subscription',
  description: 'Stop delivering events to an address and delete the subscription.',
  scope: 'webhooks:write',
  rest: 'DELETE /webhook-subscriptions/{id}',
  output: DeletedSubscription,
  kind: 'destructive',
  input: Type.Object({ subscription_id: SubscriptionId }),
  async preview(ctx, args) {
    const subscription = await ctx.services.webhooks.get(ctx.tenant, args.subscription_id)
    return { action: 'delete a webhook subscription; its address receives no more events', subscription }
  },
  async run(ctx, args) {
    return { ...(await ctx.services.webhooks.remove(ctx.tenant, args.subscription_id)) }
  },
})

export const enableWebhookSubscription = defineTool({
  name: 'enable_webhook_subscription',
  title: 'Turn a webhook subscription back on',
  description: 'Turn a subscription that was disabled (by a 410 answer or 25 failures in a row) back on.',
  scope: 'webhooks:write',
  rest: 'POST /webhook-subscriptions/{id}/enable',
  output: Subscription,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ subscription_id: SubscriptionId }),
  async run(ctx, args) {
    return { ...(await ctx.services.webhooks.enable(ctx.tenant, args.subscription_id)) }
  },
})

export const rotateWebhookSecret = defineTool({
  name: 'rotate_webhook_secret',
  title: 'Replace a webhook signing secret',
  description:
    'Replace the signing secret of a subscription; the answer shows the new secret once, and the old one stops signing at once.',
  scope: 'webhooks:write',
  rest: 'POST /webhook-subscriptions/{id}/rotate-secret',
  output: SubscriptionWithSecret,
  kind: 'destructive',
  input: Type.Object({ subscription_id: SubscriptionId }),
  async run(ctx, args) {
    return { ...(await ctx.services.webhooks.rotateSecret(ctx.tenant, args.subscription_id)) }
  },
})

export const listWebhookDeliveries = defineTool({
  name: 'list_webhook_deliveries',
  title: 'Delivery attempts of a subscription',
  description: 'The delivery attempts of a webhook subscription, newest first, with status code, error and timing.',
  scope: 'webhooks:read',
  rest: 'GET /webhook-subscriptions/{id}/deliveries',
  output: DeliveryAttemptPage,
  kind: 'read',
  input: Type.Object({ subscription_id: SubscriptionId, ...paging(100, 25) }),
  async run(ctx, args) {
    const { subscription_id, ...paged } = args
    const query = restRule(WebhookListQuery, paged, 'query')
    const { items, ...page } = await ctx.services.webhooks.deliveries(ctx.tenant, subscription_id, query)
    return { deliveries: items, ...page }
  },
})

export const listWebhookEventTypes = defineTool({
  name: 'list_webhook_event_types',
  title: 'Webhook event types',
  description:
    'The events a webhook subscription can receive (contact.created, message.received, conversation.created), what each reports and the fields of its data.',
  scope: 'webhooks:read',
  rest: 'GET /webhook-event-types',
  output: EventTypes,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { event_types: ctx.services.webhooks.eventTypes() }
  },
})

export const updateWebhookSubscription = defineTool({
  name: 'update_webhook_subscription',
  title: 'Change a webhook subscription',
  description:
    'Change the address (https, checked as on create) or the events of a subscription; only given fields change. The signing secret stays; deliveries already owed go to the new address.',
  scope: 'webhooks:write',
  rest: 'PATCH /webhook-subscriptions/{id}',
  output: Subscription,
  kind: 'write',
  idempotent: true,
  openWorld: true,
  input: Type.Object({ subscription_id: SubscriptionId, ...UpdateSubscriptionBody.properties }),
  async run(ctx, args) {
    const { subscription_id: id, ...change } = args
    const body = restRule(UpdateSubscriptionBody, change, 'body')
    return { ...(await ctx.services.webhooks.update(ctx.tenant, id, body)) }
  },
})

export const disableWebhookSubscription = defineTool({
  name: 'disable_webhook_subscription',
  title: 'Disable a webhook subscription',
  description:
    'Stop deliveries to a subscription until enable_webhook_subscription (disabled_reason manual); its pending deliveries are dropped. Keeps the subscription and its secret, unlike delete.',
  scope: 'webhooks:write',
  rest: 'POST /webhook-subscriptions/{id}/disable',
  output: Subscription,
  kind: 'destructive',
  idempotent: true,
  input: Type.Object({ subscription_id: SubscriptionId }),
  async run(ctx, args) {
    return { ...(await ctx.services.webhooks.disable(ctx.tenant, args.subscription_id)) }
  },
})

export const sendTestWebhookEvent = defineTool({
  name: 'send_test_webhook_event',
  title: 'Send a test webhook event',
  description:
    'Send one signed test event (example data with test: true) to this subscription only, to check the receiver and its signature check; the event must be one it receives (default: its first). The attempt shows in get_webhook_delivery.',
  scope: 'webhooks:write',
  rest: 'POST /webhook-subscriptions/{id}/test',
  output: TestEventResponse,
  kind: 'write',
  openWorld: true,
  input: Type.Object({ subscription_id: SubscriptionId, event: Type.Optional(EventNameSchema) }),
  async preview(ctx, args) {
    const subscription = await ctx.services.webhooks.get(ctx.tenant, args.subscription_id)
    const event = args.event ?? subscription.events[0]
    if (!subscription.events.includes(event)) {
      throw badRequest(`The subscription does not receive ${event}`, 'event_not_subscribed')
    }
    return { action: `send a signed test ${event} event`, to: subscription.url, recipients: 1, subscription }
  },
  async run(ctx, args) {
    const delivery = await ctx.services.webhooks.sendTest(ctx.tenant, args.subscription_id, args.event)
    return { delivery, notice: 'The test event is queued; its attempts appear in history.' }
  },
})

export const getWebhookDelivery = defineTool({
  name: 'get_webhook_delivery',
  title: 'One webhook delivery',
  description:
    'One delivery of an event to a subscription: its state (pending, succeeded, exhausted, dropped), the exact JSON payload the receiver gets, and every attempt with status code or error.',
  scope: 'webhooks:read',
  rest: 'GET /webhook-deliveries/{id}',
  output: obj({ delivery: Delivery }),
  kind: 'read',
  input: Type.Object({ delivery_id: DeliveryId }),
  async run(ctx, args) {
    return { delivery: await ctx.services.webhooks.delivery(ctx.tenant, args.delivery_id) }
  },
})

export const redeliverWebhookDelivery = defineTool({
  name: 'redeliver_webhook_delivery',
  title: 'Deliver a webhook event again',
  description:
    'Send a succeeded, exhausted or dropped delivery again from a first attempt, with the same event id (a receiver that deduplicates by X-Service-Delivery sees a repeat). 409 delivery_pending while an attempt is due; 409 subscription_disabled.',
  scope: 'webhooks:write',
  rest: 'POST /webhook-deliveries/{id}/redeliver',
  output: obj({ delivery: Delivery }),
  kind: 'write',
  openWorld: true,
  input: Type.Object({ delivery_id: DeliveryId }),
  async preview(ctx, args) {
    const { delivery, subscription } = await ctx.services.webhooks.deliveryTarget(ctx.tenant, args.delivery_id)
    return {
      action: `deliver the event ${delivery.event_id} again`,
      to: subscription.url,
      recipients: 1,
      state_now: delivery.state,
      subscription_status: subscription.status,
    }
  },
  async run(ctx, args) {
    return { delivery: await ctx.services.webhooks.redeliver(ctx.tenant, args.delivery_id) }
  },
})

/** In the order the tool server lists them. */
export const webhooksTools = [
  createWebhookSubscription,
  listWebhookSubscriptions,
  getWebhookSubscription,
  deleteWebhookSubscription,
  enableWebhookSubscription,
  rotateWebhookSecret,
  listWebhookDeliveries,
  listWebhookEventTypes,
  updateWebhookSubscription,
  disableWebhookSubscription,
  sendTestWebhookEvent,
  getWebhookDelivery,
  redeliverWebhookDelivery,
]
