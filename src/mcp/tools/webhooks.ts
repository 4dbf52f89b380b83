import { Type } from 'typebox'
import { EventNameSchema, UpdateSubscriptionBody } from '../../modules/webhooks/webhooks.schemas.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule } from '../tool.ts'
import { Uuid } from './common.ts'

/** Webhook subscriptions beyond create, list, delete, enable and rotate: change, disable, test, one delivery, redeliver. */

const SubscriptionId = Uuid('the subscription id, from list_webhook_subscriptions')
const DeliveryId = Uuid('the delivery id: delivery_id of an attempt in list_webhook_deliveries')

export const listWebhookEventTypes = defineTool({
  name: 'list_webhook_event_types',
  title: 'Webhook event types',
  description:
    'The events a webhook subscription can receive (contact.created, message.received, conversation.created), what each reports and the fields of its data.',
  scope: 'webhooks:read',
  rest: 'GET /webhook-event-types',
  output: out.list_webhook_event_types,
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
  output: out.update_webhook_subscription,
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
  output: out.disable_webhook_subscription,
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
  output: out.send_test_webhook_event,
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
  output: out.get_webhook_delivery,
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
  output: out.redeliver_webhook_delivery,
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

export const webhookTools = [
  listWebhookEventTypes,
  updateWebhookSubscription,
  disableWebhookSubscription,
  sendTestWebhookEvent,
  getWebhookDelivery,
  redeliverWebhookDelivery,
]
