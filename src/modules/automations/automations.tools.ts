import { Type } from 'typebox'
import { ContactId, idempotencyKey, Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import type { ContactsService } from '../contacts/index.ts'
import { checkAutomation } from './automations.app.ts'
import * as automations from './automations.routes.ts'

// the spec's tool arguments are uuids, where REST answers a malformed id with 404
const AutomationId = Uuid('the automation id, from list_automations')
const tool = operationTools<automations.AutomationsServices & { contacts: ContactsService }>({
  id: { name: 'automation_id', schema: AutomationId },
})
const byRunId = { schemas: { run_id: Uuid('the run id, from list_automation_runs') } }

export const automationsTools = [
  tool(automations.listAutomations, {
    name: 'list_automations',
    description: 'Automations newest first with their status (draft, active, paused), trigger and steps.',
  }),
  tool(automations.getAutomation, {
    name: 'get_automation',
    title: 'Get an automation',
    description: 'One automation with its trigger, steps and status.',
  }),
  tool(automations.createAutomation, {
    name: 'create_automation',
    title: 'Create an automation',
    description:
      'Create an automation as a draft: a trigger (contact created, opt-in confirmed, tag added, keyword, webhook address, calendar feed, manual) and up to 50 steps. A mailing_list or newsletter intent always gets a double opt-in step first; a follow-up sequence in disguise is cut. Activate it with activate_automation.',
    // the spec lists intent among the required arguments; its default fills it for REST
    required: ['intent'],
  }),
  tool(automations.updateAutomation, {
    name: 'update_automation',
    description: 'Change an automation’s name, intent, trigger or steps; the same safety rules as on creation apply.',
  }),
  tool(automations.activateAutomation, {
    name: 'activate_automation',
    description: 'Make an automation live: from now on its trigger starts runs.',
    idempotent: true,
  }),
  tool(automations.pauseAutomation, {
    name: 'pause_automation',
    description: 'Stop an automation from starting new runs.',
    idempotent: true,
  }),
  tool(automations.triggerAutomation, {
    name: 'trigger_automation',
    title: 'Run an automation for a contact',
    description:
      'Start a run of an active automation for one contact, with optional trigger data for its conditions; its steps may send messages.',
    schemas: {
      contact_id: ContactId,
      data: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 50 })),
    },
    extra: idempotencyKey('the same key replays'),
    openWorld: true,
    async preview(ctx, { params, body }) {
      const automation = await ctx.services.automations.get(ctx.tenant, params.id)
      const contact = await ctx.services.contacts.get(ctx.tenant, body.contact_id)
      return {
        action: 'start a run of an automation for one contact; its steps may send messages',
        recipients: 1,
        automation: { id: automation.id, name: automation.name, status: automation.status, steps: automation.steps },
        to: { contact_id: contact.id, name: contact.name, phone: contact.phone, email: contact.email },
      }
    },
  }),
  tool(automations.deleteAutomation, {
    name: 'delete_automation',
    description: 'Delete an automation with its runs.',
    async preview(ctx, { params }) {
      const { id, name, status } = await ctx.services.automations.get(ctx.tenant, params.id)
      return { action: 'delete an automation and its runs', automation: { id, name, status } }
    },
  }),
  tool(automations.listAutomationRuns, {
    name: 'list_automation_runs',
    description: 'The runs of an automation, newest first, with their state and current step.',
  }),
  tool(automations.getAutomationRun, {
    name: 'get_automation_run',
    title: 'One automation run',
    description: 'One run of an automation with its steps’ outcomes.',
    ...byRunId,
  }),
  tool(automations.listAutomationWebhooks, {
    name: 'list_automation_webhooks',
    description:
      'The incoming webhook addresses of automations with a webhook trigger; each address contains its secret, so treat it as a password.',
  }),
  tool(automations.duplicateAutomation, {
    name: 'duplicate_automation',
    title: 'Duplicate an automation',
    description:
      'Copy an automation into a new draft named "<name> (copy)" with the same intent, trigger and steps; it gets its own signing secret (shown once) and, with a webhook trigger, its own incoming address. Nothing runs until activate_automation.',
  }),
  tool(automations.cancelAutomationRun, {
    name: 'cancel_automation_run',
    title: 'Cancel an automation run',
    description:
      'End a running or waiting run of an automation as cancelled: its next step (a message, a webhook call, a tag) never happens; what it did before stays done. A run that has ended is refused.',
    ...byRunId,
    idempotent: true,
  }),
  tool(automations.listAutomationBuildingBlocks, {
    name: 'list_automation_building_blocks',
    title: 'What automations can be built from',
    description:
      'Every intent, trigger (contact_created, optin_confirmed, tag_added, keyword, webhook, calendar, manual) and step type (send_template, send_text, wait, add_tag, remove_tag, branch, double_optin, webhook, notify_team, enroll_followup) with what it does and its fields and limits: read it before create_automation.',
  }),
  tool(automations.getAutomationStatistics, {
    name: 'get_automation_statistics',
    title: 'Statistics of an automation',
    description:
      'How one automation performs in the last 7, 30 or 90 days (or all): runs begun by their state now (running, waiting, completed, failed, cancelled) with the completion rate, by what started them, why runs failed, and the template sends of its runs by the furthest status reached.',
  }),
  tool(checkAutomation, {
    name: 'check_automation',
    title: 'Check an automation before saving',
    description:
      'A dry run of create_automation and update_automation on an unsaved definition (intent, trigger, steps): `problems` lists every reason saving would be refused, `changes` and `notice` what the safety rules would change (a double opt-in step prepended for a mailing_list or newsletter intent; messages 24 hours or more apart cut after the first such message), `steps` the steps as they would be stored. Saves nothing.',
    required: ['intent'],
    kind: 'read',
  }),
]
