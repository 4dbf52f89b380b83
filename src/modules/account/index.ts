import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { accountAppRoutes } from './account.app.ts'
import { accountRoutes } from './account.routes.ts'
import { type AccountService, accountService } from './account.service.ts'
import { accountTools } from './account.tools.ts'

/** The account service of a process: who is calling, the account's settings, first steps and usage. */
export function createAccountService(deps: Pick<PlatformDeps, 'database' | 'clock'>) {
  return accountService({ db: deps.database.orm, clock: deps.clock })
}

export const accountModule: HeroldModule<{ account: AccountService }> = {
  name: 'account',
  routes: (_deps, { account }) => accountRoutes(account),
  // the web app's settings page: the account's name, language, timezone and its usage (/app/account, /app/usage)
  appRoutes: (_deps, { account }) => accountAppRoutes(account),
  tools: accountTools,
}

export type { AccountService } from './account.service.ts'
