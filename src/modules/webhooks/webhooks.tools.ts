import { badRequest } from '../../platform/http/errors.ts'
import { Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import {
  createWebhookSubscription,
  deleteWebhookSubscription,
  disableWebhookSubscription,
  enableWebhookSubscription,
  getWebhookDelivery,
  getWebhookSubscription,
  listWebhookEventTypes,
  listWebhookSubscriptionDeliveries,
  listWebhookSubscriptions,
  redeliverWebhookDelivery,
  rotateWebhookSubscriptionSecret,
  testWebhookSubscription,
  updateWebhookSubscription,
  type WebhooksServices,
} from './webhooks.routes.ts'

// Each tool stands for an operation of webhooks.routes.ts: its arguments, limits, scope and answer are the
// operation's; the spec's subscription_id and delivery_id are mapped onto the operation's id (and checked as uuids).
const tool = operationTools<WebhooksServices>()

const bySubscriptionId = {
  rename: { subscription_id: 'id' },
  schemas: { subscription_id: Uuid('the subscription id, from list_webhook_subscriptions') },
}
const byDeliveryId = {
  rename: { delivery_id: 'id' },
  schemas: { delivery_id: Uuid('the delivery id: delivery_id of an attempt in list_webhook_deliveries') },
}
const idOf = (params: unknown) => (params as { id: string }).id

/** In the order the tool server lists them. */
export const webhooksTools = [
  tool(createWebhookSubscription, {
    name: 'create_webhook_subscription',
    title: 'Subscribe an address to events',
    description:
      'Register an https address that receives contact.created, message.received and/or conversation.created as signed POST requests. The answer shows the signing secret once.',
    openWorld: true,
  }),
  tool(listWebhookSubscriptions, {
    name: 'list_webhook_subscriptions',
    title: 'List webhook subscriptions',
    description: 'The webhook subscriptions with their events, state and last error (secrets are not shown).',
  }),
  tool(getWebhookSubscription, {
    name: 'get_webhook_subscription',
    title: 'Get a webhook subscription',
    description: 'One webhook subscription with its events, state, failures in a row and last error.',
    ...bySubscriptionId,
  }),
  tool(deleteWebhookSubscription, {
    name: 'delete_webhook_subscription',
    title: 'Delete a webhook subscription',
    description: 'Stop delivering events to an address and delete the subscription.',
    ...bySubscriptionId,
    async preview(ctx, { tenant, params }) {
      const subscription = await ctx.services.webhooks.get(tenant, idOf(params))
      return { action: 'delete a webhook subscription; its address receives no more events', subscription }
    },
  }),
  tool(enableWebhookSubscription, {
    name: 'enable_webhook_subscription',
    title: 'Turn a webhook subscription back on',
    description: 'Turn a subscription that was disabled (by a 410 answer or 25 failures in a row) back on.',
    ...bySubscriptionId,
    idempotent: true,
  }),
  tool(rotateWebhookSubscriptionSecret, {
    name: 'rotate_webhook_secret',
    title: 'Replace a webhook signing secret',
    description:
      'Replace the signing secret of a subscription; the answer shows the new secret once, and the old one stops signing at once.',
    ...bySubscriptionId,
    kind: 'destructive',
  }),
  tool(listWebhookSubscriptionDeliveries, {
    name: 'list_webhook_deliveries',
    title: 'Delivery attempts of a subscription',
    description: 'The delivery attempts of a webhook subscription, newest first, with status code, error and timing.',
    ...bySubscriptionId,
  }),
  tool(listWebhookEventTypes, {
    name: 'list_webhook_event_types',
    title: 'Webhook event types',
    description:
      'The events a webhook subscription can receive (contact.created, message.received, conversation.created), what each reports and the fields of its data.',
  }),
  tool(updateWebhookSubscription, {
    name: 'update_webhook_subscription',
    title: 'Change a webhook subscription',
    description:
      'Change the address (https, checked as on create) or the events of a subscription; only given fields change. The signing secret stays; deliveries already owed go to the new address.',
    ...bySubscriptionId,
    openWorld: true,
  }),
  tool(disableWebhookSubscription, {
    name: 'disable_webhook_subscription',
    title: 'Disable a webhook subscription',
    description:
      'Stop deliveries to a subscription until enable_webhook_subscription (disabled_reason manual); its pending deliveries are dropped. Keeps the subscription and its secret, unlike delete.',
    ...bySubscriptionId,
    kind: 'destructive',
    idempotent: true,
  }),
  tool(testWebhookSubscription, {
    name: 'send_test_webhook_event',
    title: 'Send a test webhook event',
    description:
      'Send one signed test event (example data with test: true) to this subscription only, to check the receiver and its signature check; the event must be one it receives (default: its first). The attempt shows in get_webhook_delivery.',
    ...bySubscriptionId,
    openWorld: true,
    async preview(ctx, { tenant, params, body }) {
      const subscription = await ctx.services.webhooks.get(tenant, idOf(params))
      const events: string[] = subscription.events
      const event = (body as { event?: string } | undefined)?.event ?? events[0]
      if (!events.includes(event)) {
        throw badRequest(`The subscription does not receive ${event}`, 'event_not_subscribed')
      }
      return { action: `send a signed test ${event} event`, to: subscription.url, recipients: 1, subscription }
    },
  }),
  tool(getWebhookDelivery, {
    name: 'get_webhook_delivery',
    title: 'One webhook delivery',
    description:
      'One delivery of an event to a subscription: its state (pending, succeeded, exhausted, dropped), the exact JSON payload the receiver gets, and every attempt with status code or error.',
    ...byDeliveryId,
  }),
  tool(redeliverWebhookDelivery, {
    name: 'redeliver_webhook_delivery',
    title: 'Deliver a webhook event again',
    description:
      'Send a succeeded, exhausted or dropped delivery again from a first attempt, with the same event id (a receiver that deduplicates by X-Service-Delivery sees a repeat). 409 delivery_pending while an attempt is due; 409 subscription_disabled.',
    ...byDeliveryId,
    openWorld: true,
    async preview(ctx, { tenant, params }) {
      const { delivery, subscription } = await ctx.services.webhooks.deliveryTarget(tenant, idOf(params))
      return {
        action: `deliver the event ${delivery.event_id} again`,
        to: subscription.url,
        recipients: 1,
        state_now: delivery.state,
        subscription_status: subscription.status,
      }
    },
  }),
]
