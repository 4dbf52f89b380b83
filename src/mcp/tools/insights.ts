import { Type } from 'typebox'
import { listMembers } from '../../modules/people/people.service.ts'
import { StatsQuery } from '../../modules/stats/stats.schemas.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule } from '../tool.ts'
import { paging } from './common.ts'

/** The team of the account and its statistics (read only). */

export const listTeamMembers = defineTool({
  name: 'list_team_members',
  title: 'List team members',
  description:
    'The people of this account, oldest membership first: name, e-mail, role (owner, admin, member, viewer), whether they accepted the invitation (active) and when they last used the web app. Read only: the team is managed in the web app.',
  scope: 'team:read',
  rest: 'GET /team',
  output: out.list_team_members,
  kind: 'read',
  input: Type.Object(paging(200, 50)),
  async run(ctx, args) {
    const { items, ...page } = await listMembers(
      ctx.platform.database.orm,
      ctx.tenant.accountId,
      args.limit ?? 50,
      args.offset ?? 0,
    )
    return { members: items, ...page }
  },
})

export const getStatistics = defineTool({
  name: 'get_statistics',
  title: 'Get statistics',
  description:
    'The account’s figures for the last 7, 30 or 90 days (today included, in the account timezone): contacts in total, new and per opt-in state, and per day new contacts, opt-ins and opt-outs per channel, messages in and out, template and newsletter sends per status, link clicks, automation and follow-up runs and AI replies, with totals over the range.',
  scope: 'stats:read',
  rest: 'GET /stats',
  output: out.get_statistics,
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

export const insightTools = [listTeamMembers, getStatistics]
