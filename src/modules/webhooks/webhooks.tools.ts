import { Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import * as webhooks from './webhooks.routes.ts'
import { testEventOf } from './webhooks.rules.ts'

const SubscriptionId = Uuid('the subscription id, from list_webhook_subscriptions')
const tool = operationTools<webhooks.WebhooksServices>({ id: { name: 'subscription_id', schema: SubscriptionId } })
const byDeliveryId = {
  id: { name: 'delivery_id', schema: Uuid('the delivery id: delivery_id of an attempt in list_webhook_deliveries') },
}

export const webhooksTools = [
  tool(webhooks.createWebhookSubscription, {
    name: 'create_webhook_subscription',
    description:
      'Register an https address that receives contact.created, message.received and/or conversation.created as signed POST requests. The answer shows the signing secret once.',
    openWorld: true,
  }),
  tool(webhooks.listWebhookSubscriptions, {
    name: 'list_webhook_subscriptions',
    description: 'The webhook subscriptions with their events, state and last error (secrets are not shown).',
  }),
  tool(webhooks.getWebhookSubscription, {
    name: 'get_webhook_subscription',
    title: 'Get a webhook subscription',
    description: 'One webhook subscription with its events, state, failures in a row and last error.',
  }),
  tool(webhooks.deleteWebhookSubscription, {
    name: 'delete_webhook_subscription',
    description: 'Stop delivering events to an address and delete the subscription.',
    async preview(ctx, { tenant, params }) {
      const subscription = await ctx.services.webhooks.get(tenant, params.id)
      return { action: 'delete a webhook subscription; its address receives no more events', subscription }
    },
  }),
  tool(webhooks.enableWebhookSubscription, {
    name: 'enable_webhook_subscription',
    title: 'Turn a webhook subscription back on',
    description: 'Turn a subscription that was disabled (by a 410 answer or 25 failures in a row) back on.',
    idempotent: true,
  }),
  tool(webhooks.rotateWebhookSubscriptionSecret, {
    name: 'rotate_webhook_secret',
    title: 'Replace a webhook signing secret',
    description:
      'Replace the signing secret of a subscription; the answer shows the new secret once, and the old one stops signing at once.',
    kind: 'destructive',
  }),
  tool(webhooks.listWebhookSubscriptionDeliveries, {
    name: 'list_webhook_deliveries',
    description: 'The delivery attempts of a webhook subscription, newest first, with status code, error and timing.',
  }),
  tool(webhooks.listWebhookEventTypes, {
    name: 'list_webhook_event_types',
    title: 'Webhook event types',
    description:
      'The events a webhook subscription can receive (contact.created, message.received, conversation.created), what each reports and the fields of its data.',
  }),
  tool(webhooks.updateWebhookSubscription, {
    name: 'update_webhook_subscription',
    title: 'Change a webhook subscription',
    description:
      'Change the address (https, checked as on create) or the events of a subscription; only given fields change. The signing secret stays; deliveries already owed go to the new address.',
    openWorld: true,
  }),
  tool(webhooks.disableWebhookSubscription, {
    name: 'disable_webhook_subscription',
    title: 'Disable a webhook subscription',
    description:
      'Stop deliveries to a subscription until enable_webhook_subscription (disabled_reason manual); its pending deliveries are dropped. Keeps the subscription and its secret, unlike delete.',
    kind: 'destructive',
    idempotent: true,
  }),
  tool(webhooks.testWebhookSubscription, {
    name: 'send_test_webhook_event',
    title: 'Send a test webhook event',
    description:
      'Send one signed test event (example data with test: true) to this subscription only, to check the receiver and its signature check; the event must be one it receives (default: its first). The attempt shows in get_webhook_delivery.',
    openWorld: true,
    async preview(ctx, { tenant, params, body }) {
      const subscription = await ctx.services.webhooks.get(tenant, params.id)
      // the service's rule, checked before a token is issued
      const event = testEventOf(subscription.events, body?.event)
      return { action: `send a signed test ${event} event`, to: subscription.url, recipients: 1, subscription }
    },
  }),
  tool(webhooks.getWebhookDelivery, {
    name: 'get_webhook_delivery',
    title: 'One webhook delivery',
    description:
      'One delivery of an event to a subscription: its state (pending, succeeded, exhausted, dropped), the exact JSON payload the receiver gets, and every attempt with status code or error.',
    ...byDeliveryId,
  }),
  tool(webhooks.redeliverWebhookDelivery, {
    name: 'redeliver_webhook_delivery',
    title: 'Deliver a webhook event again',
    description:
      'Send a succeeded, exhausted or dropped delivery again from a first attempt, with the same event id (a receiver that deduplicates by X-Service-Delivery sees a repeat). 409 delivery_pending while an attempt is due; 409 subscription_disabled.',
    ...byDeliveryId,
    openWorld: true,
    async preview(ctx, { tenant, params }) {
      const { delivery, subscription } = await ctx.services.webhooks.deliveryTarget(tenant, params.id)
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
