import type { Static } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { firstSteps } from './account.first-steps.ts'
import type { AccountSettingsBody } from './account.schemas.ts'
import { accountSettings, updateAccountSettings } from './account.settings.ts'
import { usage } from './account.usage.ts'

export interface AccountServiceDeps {
  db: Db
  clock: Clock
}

/** The calling account as its own: who is calling, its settings, its first steps and its usage against the plan. */
export function accountService(deps: AccountServiceDeps) {
  const { db, clock } = deps
  return {
    /** GET /me: the calling credential and its account, from the tenant alone */
    me(tenant: TenantContext) {
      const { account, actor } = tenant
      return {
        account: { id: account.id, name: account.name },
        key: actor.type === 'api_key' ? { id: actor.keyId, name: actor.keyName, prefix: actor.keyPrefix } : null,
        auth_type: actor.type,
        scopes: actor.scopes,
        rate_limit: { requests_per_minute: actor.requestsPerMinute },
      }
    },
    settings: (tenant: TenantContext) => accountSettings(db, tenant.accountId),
    updateSettings: (tenant: TenantContext, change: Static<typeof AccountSettingsBody>) =>
      updateAccountSettings(db, tenant.accountId, change),
    firstSteps: (tenant: TenantContext) => firstSteps(db, tenant.accountId),
    usage: (tenant: TenantContext) => usage(db, clock, tenant.accountId),
  }
}

export type AccountService = ReturnType<typeof accountService>
