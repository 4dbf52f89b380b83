import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import type { Db } from '../../platform/db/client.ts'
import { TeamPage, TeamQuery } from './people.schemas.ts'
import { listMembers } from './people.service.ts'

/** GET /v1/team: the calling account's members, oldest first; read only. */
export function teamRoutes(db: Db) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Querystring: Static<typeof TeamQuery> }>(
      '/team',
      {
        config: { scope: 'team:read' },
        schema: {
          operationId: 'listTeamMembers',
          summary: 'List team members',
          description:
            'The people of this account: invited and active members with their role and when they last used the web app. Oldest membership first. Read only: the team is managed in the web app.',
          tags: ['team'],
          querystring: TeamQuery,
          response: { 200: TeamPage },
        },
      },
      async (request) => {
        const { items, ...page } = await listMembers(
          db,
          request.tenant.accountId,
          request.query.limit,
          request.query.offset,
        )
        return { members: items, ...page }
      },
    )
  }
}
