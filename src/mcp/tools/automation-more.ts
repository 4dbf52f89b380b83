import { Type } from 'typebox'
import { out } from '../outputs.ts'
import { defineTool } from '../tool.ts'
import { Uuid } from './common.ts'

/** Automations beyond their REST basics: copies, cancelling a run, and what an automation can be built from. */

const AutomationId = Uuid('the automation id, from list_automations')

export const duplicateAutomation = defineTool({
  name: 'duplicate_automation',
  title: 'Duplicate an automation',
  description:
    'Copy an automation into a new draft named "<name> (copy)" with the same intent, trigger and steps; it gets its own signing secret (shown once) and, with a webhook trigger, its own incoming address. Nothing runs until activate_automation.',
  scope: 'automations:write',
  rest: 'POST /automations/{id}/duplicate',
  output: out.duplicate_automation,
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
  output: out.cancel_automation_run,
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
  output: out.list_automation_building_blocks,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    return { ...ctx.services.automationBlocks() }
  },
})

export const automationMoreTools = [duplicateAutomation, cancelAutomationRun, listAutomationBuildingBlocks]
