import { Type } from 'typebox'
import { StatisticsQuery } from '../../platform/http/statistics.ts'
import { ContactId, paging, StatisticsRange, Uuid } from '../../platform/tools/common.ts'
import { obj } from '../../platform/tools/outputs.ts'
import { restRule, toolsUsing } from '../../platform/tools/tool.ts'
import type { ContactsService } from '../contacts/index.ts'
import { CheckBody as AutomationCheckBody, CheckResponse as AutomationCheckResponse } from './automations.app.ts'
import type { buildingBlocks } from './automations.blocks.ts'
import { BuildingBlocks } from './automations.blocks.ts'
import {
  Automation,
  ListQuery as AutomationListQuery,
  AutomationPage,
  AutomationStatistics,
  AutomationWebhookPage,
  CreateAutomationBody,
  CreatedAutomation,
  Run,
  RunPage,
  TriggerBody,
  TriggeredRun,
  UpdateAutomationBody,
} from './automations.schemas.ts'
import type { AutomationsService } from './automations.service.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  automations: AutomationsService
  contacts: ContactsService
  automationBlocks: typeof buildingBlocks
}

const defineTool = toolsUsing<Services>()

const AutomationId = Uuid('the automation id, from list_automations')

export const listAutomations = defineTool({
  name: 'list_automations',
  title: 'List automations',
  description: 'Automations newest first with their status (draft, active, paused), trigger and steps.',
  scope: 'automations:read',
  rest: 'GET /automations',
  output: AutomationPage,
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
  output: Automation,
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
  output: CreatedAutomation,
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
  output: Automation,
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
  output: Automation,
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
  output: Automation,
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
  output: TriggeredRun,
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
  output: obj({ id: Type.String({ format: 'uuid' }), deleted: Type.Literal(true) }),
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
  output: RunPage,
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
  output: Run,
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
  output: AutomationWebhookPage,
  kind: 'read',
  input: Type.Object(paging(100, 25)),
  async run(ctx, args) {
    const query = restRule(AutomationListQuery, args, 'query')
    const { items, ...page } = await ctx.services.automations.addresses(ctx.tenant, query)
    return { automation_webhooks: items, ...page }
  },
})

export const duplicateAutomation = defineTool({
  name: 'duplicate_automation',
  title: 'Duplicate an automation',
  description:
    'Copy an automation into a new draft named "<name> (copy)" with the same intent, trigger and steps; it gets its own signing secret (shown once) and, with a webhook trigger, its own incoming address. Nothing runs until activate_automation.',
  scope: 'automations:write',
  rest: 'POST /automations/{id}/duplicate',
  output: CreatedAutomation,
  kind: 'write',
  input: Type.Object({ automation_id: AutomationId }),
  async run(ctx, args) {
    return { ...(await ctx.services.automations.duplicate(ctx.tenant, args.automation_id)) }
  },
})

export const cancelAutomationRun = defineTool({
  name: 'cancel_automation_run',
  title: 'Cancel an automation run',
  description:
    'End a running or waiting run of an automation as cancelled: its next step (a message, a webhook call, a tag) never happens; what it did before stays done. A run that has ended is refused.',
  scope: 'automations:write',
  rest: 'POST /automations/{id}/runs/{run_id}/cancel',
  output: Run,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ automation_id: AutomationId, run_id: Uuid('the run id, from list_automation_runs') }),
  async run(ctx, args) {
    return { ...(await ctx.services.automations.cancelRun(ctx.tenant, args.automation_id, args.run_id)) }
  },
})

export const listAutomationBuildingBlocks = defineTool({
  name: 'list_automation_building_blocks',
  title: 'What automations can be built from',
  description:
    'Every intent, trigger (contact_created, optin_confirmed, tag_added, keyword, webhook, calendar, manual) and step type (send_template, send_text, wait, add_tag, remove_tag, branch, double_optin, webhook, notify_team, enroll_followup) with what it does and its fields and limits: read it before create_automation.',
  scope: 'automations:read',
  rest: 'GET /automations/building-blocks',
  output: BuildingBlocks,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { ...ctx.services.automationBlocks() }
  },
})

export const getAutomationStatistics = defineTool({
  name: 'get_automation_statistics',
  title: 'Statistics of an automation',
  description:
    'How one automation performs in the last 7, 30 or 90 days (or all): runs begun by their state now (running, waiting, completed, failed, cancelled) with the completion rate, by what started them, why runs failed, and the template sends of its runs by the furthest status reached.',
  scope: 'stats:read',
  rest: 'GET /automations/{id}/statistics',
  output: AutomationStatistics,
  kind: 'read',
  input: Type.Object({ automation_id: Uuid('the automation id, from list_automations'), range: StatisticsRange }),
  async run(ctx, args) {
    const { range } = restRule(StatisticsQuery, { range: args.range }, 'query')
    return await ctx.services.automations.statistics(ctx.tenant, args.automation_id, range)
  },
})

export const checkAutomation = defineTool({
  name: 'check_automation',
  title: 'Check an automation before saving',
  description:
    'A dry run of create_automation and update_automation on an unsaved definition (intent, trigger, steps): `problems` lists every reason saving would be refused, `changes` and `notice` what the safety rules would change (a double opt-in step prepended for a mailing_list or newsletter intent; messages 24 hours or more apart cut after the first such message), `steps` the steps as they would be stored. Saves nothing.',
  scope: 'automations:write',
  rest: 'POST /app/automations/check',
  output: AutomationCheckResponse,
  kind: 'read',
  input: AutomationCheckBody,
  async run(ctx, args) {
    return await ctx.services.automations.check(ctx.tenant, restRule(AutomationCheckBody, args, 'body'))
  },
})

/** In the order the tool server lists them. */
export const automationsTools = [
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
  duplicateAutomation,
  cancelAutomationRun,
  listAutomationBuildingBlocks,
  getAutomationStatistics,
  checkAutomation,
]
