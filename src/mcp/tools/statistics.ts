import { Type } from 'typebox'
import { StatisticsQuery } from '../../platform/http/statistics.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule } from '../tool.ts'
import { Uuid } from './common.ts'

/** Statistics of one template, follow-up sequence or automation (get_statistics has the account's days). */

const Range = Type.Optional(StatisticsQuery.properties.range)

export const getTemplateStatistics = defineTool({
  name: 'get_template_statistics',
  title: 'Statistics of a template',
  description:
    'How one template performs in the last 7, 30 or 90 days (or all): its sends by the furthest status reached (sent, delivered, read, failed, skipped, still queued), delivery and read rate, and how many came from the API, newsletters, follow-ups and automations.',
  scope: 'stats:read',
  rest: 'GET /templates/{id}/statistics',
  output: out.get_template_statistics,
  kind: 'read',
  input: Type.Object({ template_id: Uuid('the template id, from list_templates'), range: Range }),
  async run(ctx, args) {
    const { range } = restRule(StatisticsQuery, { range: args.range }, 'query')
    return await ctx.services.templates.statistics(ctx.tenant, args.template_id, range)
  },
})

export const getFollowupStatistics = defineTool({
  name: 'get_followup_statistics',
  title: 'Statistics of a follow-up sequence',
  description:
    'How one follow-up sequence performs in the last 7, 30 or 90 days (or all): enrollments begun by their status now with the completion rate, and the sends in all and per step by the furthest status reached with delivery and read rate (where contacts drop off).',
  scope: 'stats:read',
  rest: 'GET /followups/{id}/statistics',
  output: out.get_followup_statistics,
  kind: 'read',
  input: Type.Object({ followup_id: Uuid('the follow-up sequence id, from list_followups'), range: Range }),
  async run(ctx, args) {
    const { range } = restRule(StatisticsQuery, { range: args.range }, 'query')
    return await ctx.services.followups.statistics(ctx.tenant, args.followup_id, range)
  },
})

export const getAutomationStatistics = defineTool({
  name: 'get_automation_statistics',
  title: 'Statistics of an automation',
  description:
    'How one automation performs in the last 7, 30 or 90 days (or all): runs begun by their state now (running, waiting, completed, failed, cancelled) with the completion rate, by what started them, why runs failed, and the template sends of its runs by the furthest status reached.',
  scope: 'stats:read',
  rest: 'GET /automations/{id}/statistics',
  output: out.get_automation_statistics,
  kind: 'read',
  input: Type.Object({ automation_id: Uuid('the automation id, from list_automations'), range: Range }),
  async run(ctx, args) {
    const { range } = restRule(StatisticsQuery, { range: args.range }, 'query')
    return await ctx.services.automations.statistics(ctx.tenant, args.automation_id, range)
  },
})

export const statisticsTools = [getTemplateStatistics, getFollowupStatistics, getAutomationStatistics]
