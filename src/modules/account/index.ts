import type { HeroldModule } from '../../platform/module.ts'
import { accountRoutes } from './account.routes.ts'

export const accountModule: HeroldModule = { name: 'account', routes: () => accountRoutes }
