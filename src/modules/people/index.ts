import type { HeroldModule } from '../../platform/module.ts'
import { peopleAppRoutes } from './people.app.ts'
import type { PeopleMailChannels } from './people.mail.ts'
import { teamRoutes } from './people.routes.ts'
import { peopleTools } from './people.tools.ts'

export { ROLE_PERMISSIONS, ROLE_SCOPES } from '../../platform/auth/roles.ts'
export * from './people.service.ts'

/** People: users, memberships, sessions, GET /v1/team and the web app's sign-in, keys and team routes under /app. */
export const peopleModule: HeroldModule<{ channels: PeopleMailChannels }> = {
  name: 'people',
  tools: peopleTools,
  routes: (deps) => teamRoutes(deps.database.orm),
  appRoutes: (deps, { channels }) => peopleAppRoutes(deps, channels),
}
