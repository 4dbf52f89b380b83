import type { HeroldModule } from '../../platform/module.ts'
import { accountAppRoutes } from './account.app.ts'
import { accountRoutes } from './account.routes.ts'
import { accountTools } from './account.tools.ts'

export const accountModule: HeroldModule = {
  name: 'account',
  routes: () => accountRoutes,
  // the web app's settings page: the account's name, language, timezone and its usage (/app/account, /app/usage)
  appRoutes: (deps) => accountAppRoutes(deps),
  tools: accountTools,
}
