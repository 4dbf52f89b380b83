import { Type } from 'typebox'
import {
  ListQuery as AutomationListQuery,
  CreateAutomationBody,
  TriggerBody,
  UpdateAutomationBody,
} from '../../modules/automations/automations.schemas.ts'
import { CreateSubscriptionBody, ListQuery as WebhookListQuery } from '../../modules/webhooks/webhooks.schemas.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule } from '../tool.ts'
import { ContactId, paging, Uuid } from './common.ts'

/** Automations with their runs and webhook addresses, and webhook subscriptions with their deliveries. */

const AutomationId = Uuid('the automation id, from list_automations')
const SubscriptionId = Uuid('the subscription id, from list_webhook_subscriptions')

export const listAutomations = defineTool({
  name: 'list_automations',
  title: 'List automations',
  description: 'Automations newest first with their status (draft, active, paused), trigger and steps.',
  scope: 'automations:read',
  rest: 'GET /automations',
  output: out.list_automations,
  kind: 'read',
  input: Type.Object(paging(100, 25)),
  async run(ctx, args) {
    const query = restRule(AutomationListQuery, args, 'query')
    const { items, ...page } = await ctx.services.automations.list(ctx.tenant, query)
    return { automations: items, ...page }
  },
})

export const getAutomation = defineTool({
  name: 'get_automation',
  title: 'Get an automation',
  description: 'One automation with its trigger, steps and status.',
  scope: 'automations:read',
  rest: 'GET /automations/{id}',
  output: out.get_automation,
  kind: 'read',
  input: Type.Object({ automation_id: AutomationId }),
  async run(ctx, args) {
    return { ...(await ctx.services.automations.get(ctx.tenant, args.automation_id)) }
  },
})

export const createAutomation = defineTool({
  name: 'create_automation',
  title: 'Create an automation',
  description:
    'Create an automation as a draft: a trigger (contact created, opt-in confirmed, tag added, keyword, webhook address, calendar feed, manual) and up to 50 steps. A mailing_list or newsletter intent always gets a double opt-in step first; a follow-up sequence in disguise is cut. Activate it with activate_automation.',
  scope: 'automations:write',
  rest: 'POST /automations',
  output: out.create_automation,
  kind: 'write',
  input: Type.Object(CreateAutomationBody.properties),
  async run(ctx, args) {
    const body = restRule(CreateAutomationBody, args, 'body')
    return { ...(await ctx.services.automations.create(ctx.tenant, body)) }
  },
})

export const updateAutomation = defineTool({
  name: 'update_automation',
  title: 'Change an automation',
  description: 'Change an automation’s name, intent, trigger or steps; the same safety rules as on creation apply.',
  scope: 'automations:write',
  rest: 'PATCH /automations/{id}',
  output: out.update_automation,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ automation_id: AutomationId, ...UpdateAutomationBody.properties }),
  async run(ctx, args) {
    const { automation_id, ...change } = args
    const body = restRule(UpdateAutomationBody, change, 'body')
    return { ...(await ctx.services.automations.update(ctx.tenant, automation_id, body)) }
  },
})

export const activateAutomation = defineTool({
  name: 'activate_automation',
  title: 'Activate an automation',
  description: 'Make an automation live: from now on its trigger starts runs.',
  scope: 'automations:write',
  rest: 'POST /automations/{id}/activate',
  output: out.activate_automation,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ automation_id: AutomationId }),
  async run(ctx, args) {
    return { ...(await ctx.services.automations.activate(ctx.tenant, args.automation_id)) }
  },
})

export const pauseAutomation = defineTool({
  name: 'pause_automation',
  title: 'Pause an automation',
  description: 'Stop an automation from starting new runs.',
  scope: 'automations:write',
  rest: 'POST /automations/{id}/pause',
  output: out.pause_automation,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ automation_id: AutomationId }),
  async run(ctx, args) {
    return { ...(await ctx.services.automations.pause(ctx.tenant, args.automation_id)) }
  },
})

export const triggerAutomation = defineTool({
  name: 'trigger_automation',
  title: 'Run an automation for a contact',
  description:
    'Start a run of an active automation for one contact, with optional trigger data for its conditions; its steps may send messages.',
  scope: 'automations:write',
  rest: 'POST /automations/{id}/trigger',
  output: out.trigger_automation,
  kind: 'write',
  openWorld: true,
  input: Type.Object({
    automation_id: AutomationId,
    contact_id: ContactId,
    data: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 50 })),
    idempotency_key: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$', description: 'the same key replays' }),
    ),
  }),
  async preview(ctx, args) {
    restRule(TriggerBody, { contact_id: args.contact_id, data: args.data }, 'body')
    const automation = await ctx.services.automations.get(ctx.tenant, args.automation_id)
    const contact = await ctx.services.contacts.get(ctx.tenant, args.contact_id)
    return {
      action: 'start a run of an automation for one contact; its steps may send messages',
      recipients: 1,
      automation: { id: automation.id, name: automation.name, status: automation.status, steps: automation.steps },
      to: { contact_id: contact.id, name: contact.name, phone: contact.phone, email: contact.email },
    }
  },
  async run(ctx, args) {
    const body = restRule(TriggerBody, { contact_id: args.contact_id, data: args.data }, 'body')
    return { ...(await ctx.services.automations.trigger(ctx.tenant, args.automation_id, body)) }
  },
})

export const deleteAutomation = defineTool({
  name: 'delete_automation',
  title: 'Delete an automation',
  description: 'Delete an automation with its runs.',
  scope: 'automations:delete',
  rest: 'DELETE /automations/{id}',
  output: out.delete_automation,
  kind: 'destructive',
  input: Type.Object({ automation_id: AutomationId }),
  async preview(ctx, args) {
    const automation = await ctx.services.automations.get(ctx.tenant, args.automation_id)
    return {
      action: 'delete an automation and its runs',
      automation: { id: automation.id, name: automation.name, status: automation.status },
    }
  },
  async run(ctx, args) {
    return { ...(await ctx.services.automations.remove(ctx.tenant, args.automation_id)) }
  },
})

export const listAutomationRuns = defineTool({
  name: 'list_automation_runs',
  title: 'Runs of an automation',
  description: 'The runs of an automation, newest first, with their state and current step.',
  scope: 'automations:read',
  rest: 'GET /automations/{id}/runs',
  output: out.list_automation_runs,
  kind: 'read',
  input: Type.Object({ automation_id: AutomationId, ...paging(100, 25) }),
  async run(ctx, args) {
    const { automation_id, ...paged } = args
    const query = restRule(AutomationListQuery, paged, 'query')
    const { items, ...page } = await ctx.services.automations.runs(ctx.tenant, automation_id, query)
    return { runs: items, ...page }
  },
})

export const getAutomationRun = defineTool({
  name: 'get_automation_run',
  title: 'One automation run',
  description: 'One run of an automation with its steps’ outcomes.',
  scope: 'automations:read',
  rest: 'GET /automations/{id}/runs/{run_id}',
  output: out.get_automation_run,
  kind: 'read',
  input: Type.Object({ automation_id: AutomationId, run_id: Uuid('the run id, from list_automation_runs') }),
  async run(ctx, args) {
    return { ...(await ctx.services.automations.run(ctx.tenant, args.automation_id, args.run_id)) }
  },
})

export const listAutomationWebhooks = defineTool({
  name: 'list_automation_webhooks',
  title: 'Webhook addresses of automations',
  description:
    'The incoming webhook addresses of automations with a webhook trigger; each address contains its secret, so treat it as a password.',
  scope: 'webhooks:read',
  rest: 'GET /automation-webhooks',
  output: out.list_automation_webhooks,
  kind: 'read',
  input: Type.Object(paging(100, 25)),
  async run(ctx, args) {
    const query = restRule(AutomationListQuery, args, 'query')
    const { items, ...page } = await ctx.services.automations.addresses(ctx.tenant, query)
    return { automation_webhooks: items, ...page }
  },
})

export const createWebhookSubscription = defineTool({
  name: 'create_webhook_subscription',
  title: 'Subscribe an address to events',
  description:
    'Register an https address that receives contact.created, message.received and/or conversation.created as signed POST requests. The answer shows the signing secret once.',
  scope: 'webhooks:write',
  rest: 'POST /webhook-subscriptions',
  output: out.create_webhook_subscription,
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
  output: out.list_webhook_subscriptions,
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
  output: out.get_webhook_subscription,
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
  output: out.delete_webhook_subscription,
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
  output: out.enable_webhook_subscription,
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
  output: out.rotate_webhook_secret,
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
  output: out.list_webhook_deliveries,
  kind: 'read',
  input: Type.Object({ subscription_id: SubscriptionId, ...paging(100, 25) }),
  async run(ctx, args) {
    const { subscription_id, ...paged } = args
    const query = restRule(WebhookListQuery, paged, 'query')
    const { items, ...page } = await ctx.services.webhooks.deliveries(ctx.tenant, subscription_id, query)
    return { deliveries: items, ...page }
  },
})

export const automationTools = [
  listAutomations,
  getAutomation,
  createAutomation,
  updateAutomation,
  activateAutomation,
  pauseAutomation,
  triggerAutomation,
  deleteAutomation,
  listAutomationRuns,
  getAutomationRun,
  listAutomationWebhooks,
  createWebhookSubscription,
  listWebhookSubscriptions,
  getWebhookSubscription,
  deleteWebhookSubscription,
  enableWebhookSubscription,
  rotateWebhookSecret,
  listWebhookDeliveries,
]
