import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { StatsQuery, StatsResponse } from './stats.schemas.ts'
import type { StatsService } from './stats.service.ts'

/** The services the statistics operation calls. */
export interface StatsServices {
  stats: StatsService
}

const operation = operationsUsing<StatsServices>()

export const getStats = operation({
  method: 'GET',
  path: '/stats',
  scope: 'stats:read',
  operationId: 'getStats',
  summary: 'Statistics of the last 7, 30 or 90 days',
  description:
    'Contacts (total, new in the range, per opt-in state of each channel, now), and per day in the account timezone: new contacts, opt-ins confirmed and opt-outs per channel, messages in and out, template and newsletter sends per status reached that day (`sending` is not counted; a send delivered counts under sent and delivered), link clicks, automation and follow-up runs started, replies written by the built-in AI. `totals` sums each series over the range. Answered from daily counters kept by the database as the data is written, so it costs the same at any size. 400 for a range other than 7d, 30d, 90d.',
  tags: ['stats'],
  query: StatsQuery,
  response: StatsResponse,
  handle: async ({ stats }, { tenant, query }) => ({ stats: await stats.get(tenant, query.range) }),
})

export function statsRoutes(stats: StatsService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { stats }, [getStats])
  }
}
