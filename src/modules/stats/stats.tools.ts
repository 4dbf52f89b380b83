import { operationTools } from '../../platform/tools/from-operation.ts'
import { getStats, type StatsServices } from './stats.routes.ts'

const tool = operationTools<StatsServices>()

export const statsTools = [
  tool(getStats, {
    name: 'get_statistics',
    title: 'Get statistics',
    description:
      'The account’s figures for the last 7, 30 or 90 days (today included, in the account timezone): contacts in total, new and per opt-in state, and per day new contacts, opt-ins and opt-outs per channel, messages in and out, template and newsletter sends per status, link clicks, automation and follow-up runs and AI replies, with totals over the range.',
  }),
]
