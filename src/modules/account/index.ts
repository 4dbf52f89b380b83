import type { HeroldModule } from '../../platform/module.ts'
import { registerAppRoutes } from '../people/people.app-registry.ts'
import { accountAppRoutes } from './account.app.ts'
import { accountRoutes } from './account.routes.ts'
import { accountTools } from './account.tools.ts'

// the web app's settings page: the account's name, language, timezone and its usage (/app/account, /app/usage)
registerAppRoutes((deps) => accountAppRoutes(deps))

export const accountModule: HeroldModule = { name: 'account', routes: () => accountRoutes, tools: accountTools }
