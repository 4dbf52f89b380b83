import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import { StatsQuery, StatsResponse } from './stats.schemas.ts'
import type { StatsService } from './stats.service.ts'

export function statsRoutes(service: StatsService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Querystring: Static<typeof StatsQuery> }>(
      '/stats',
      {
        config: { scope: 'stats:read' },
        schema: {
          operationId: 'getStats',
          summary: 'Statistics of the last 7, 30 or 90 days',
          description:
            'Contacts (total, new in the range, per opt-in state of each channel, now), and per day in the account timezone: new contacts, opt-ins confirmed and opt-outs per channel, messages in and out, template and newsletter sends per status reached that day (`sending` is not counted; a send delivered counts under sent and delivered), link clicks, automation and follow-up runs started, replies written by the built-in AI. `totals` sums each series over the range. Answered from daily counters kept by the database as the data is written, so it costs the same at any size. 400 for a range other than 7d, 30d, 90d.',
          tags: ['stats'],
          querystring: StatsQuery,
          response: { 200: StatsResponse },
        },
      },
      async (request) => ({ stats: await service.get(request.tenant, request.query.range) }),
    )
  }
}
