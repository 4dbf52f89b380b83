import type { HeroldModule } from '../../platform/module.ts'
import { peopleAppRoutes } from './people.app.ts'
import { teamRoutes } from './people.routes.ts'
import type { PeopleService } from './people.service.ts'
import { peopleTools } from './people.tools.ts'

export { ROLE_PERMISSIONS, ROLE_SCOPES } from '../../platform/auth/roles.ts'
export * from './people.credentials.ts'
export { acceptInvitation, invitationInfo, invite } from './people.invitations.ts'
export * from './people.members.ts'
export * from './people.service.ts'
export * from './people.sessions.ts'

/** People: users, memberships, sessions, GET /v1/team and the web app's sign-in, keys and team routes under /app. */
export const peopleModule: HeroldModule<{ people: PeopleService }> = {
  name: 'people',
  tools: peopleTools,
  routes: (_deps, { people }) => teamRoutes(people),
  appRoutes: (deps, { people }) => peopleAppRoutes(deps, people),
}
