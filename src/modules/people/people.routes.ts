import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { namedPage } from '../../platform/http/pagination.ts'
import { TeamPage, TeamQuery } from './people.schemas.ts'
import type { PeopleService } from './people.service.ts'

/** The services the people's operations call. */
export interface PeopleServices {
  people: PeopleService
}

const operation = operationsUsing<PeopleServices>()

/** GET /v1/team: the calling account's members, oldest first; read only. */
export const listTeamMembers = operation({
  method: 'GET',
  path: '/team',
  scope: 'team:read',
  operationId: 'listTeamMembers',
  summary: 'List team members',
  description:
    'The people of this account: invited and active members with their role and when they last used the web app. Oldest membership first. Read only: the team is managed in the web app.',
  tags: ['team'],
  query: TeamQuery,
  response: TeamPage,
  handle: async ({ people }, { tenant, query }) => namedPage('members', await people.listMembers(tenant, query)),
})

/** The people's routes under /v1. */
export function teamRoutes(people: PeopleService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { people }, [listTeamMembers])
  }
}
