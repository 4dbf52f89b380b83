import { Type } from 'typebox'
import { restRule, toolsUsing } from '../../platform/tools/tool.ts'
import { StatsQuery, StatsResponse } from './stats.schemas.ts'
import type { StatsService } from './stats.service.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  stats: StatsService
}

const defineTool = toolsUsing<Services>()

export const getStatistics = defineTool({
  name: 'get_statistics',
  title: 'Get statistics',
  description:
    'The account’s figures for the last 7, 30 or 90 days (today included, in the account timezone): contacts in total, new and per opt-in state, and per day new contacts, opt-ins and opt-outs per channel, messages in and out, template and newsletter sends per status, link clicks, automation and follow-up runs and AI replies, with totals over the range.',
  scope: 'stats:read',
  rest: 'GET /stats',
  output: StatsResponse,
  kind: 'read',
  input: Type.Object({
    range: Type.Optional(
      Type.Union([Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d')], {
        default: '30d',
        description: 'the last 7, 30 or 90 days',
      }),
    ),
  }),
  async run(ctx, args) {
    const { range } = restRule(StatsQuery, args, 'query')
    return { stats: await ctx.services.stats.get(ctx.tenant, range) }
  },
})

/** In the order the tool server lists them. */
export const statsTools = [getStatistics]
