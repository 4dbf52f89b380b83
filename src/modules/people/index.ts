import type { HeroldModule } from '../../platform/module.ts'
import { appRoutes } from './people.app.ts'

export { registerAppRoutes } from './people.app.ts'

import { closePeopleMail } from './people.mail.ts'
import { teamRoutes } from './people.routes.ts'
import { peopleTools } from './people.tools.ts'

export { ROLE_PERMISSIONS, ROLE_SCOPES } from '../../platform/auth/roles.ts'
export * from './people.service.ts'

/** People: users, memberships, sessions, the web app's /app routes and GET /v1/team. */
export const peopleModule: HeroldModule = {
  name: 'people',
  tools: peopleTools,
  routes: (deps) => teamRoutes(deps.database.orm),
  publicRoutes: (deps) => async (app) => {
    app.addHook('onClose', async () => closePeopleMail())
    await app.register(appRoutes(deps), { prefix: '/app' })
  },
}
export { collectOutsideAppRoute } from './app-document.ts'
