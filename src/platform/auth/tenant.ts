import type { Role } from './people.tables.ts'
import type { Permission } from './roles.ts'
import type { Scope } from './scopes.ts'

/** The account a call is for, as every tenant context carries it. */
export interface TenantAccount {
  id: string
  name: string
  plan: string
  sendingPaused: boolean
  language: string
  timezone: string
}

/** Who is calling and for which account: the first argument of every service function. */
export interface TenantContext {
  accountId: string
  account: TenantAccount
  actor: {
    type: 'api_key' | 'oauth' | 'session'
    /** the API key's id (a session's id for the web app); null for OAuth */
    keyId: string | null
    keyName: string | null
    keyPrefix: string | null
    scopes: Scope[]
    /** the credential's rate limit: its account's plan's requests per minute */
    requestsPerMinute: number
    /** a web-app session: the member, their role and what the role may do beyond the scopes */
    userId?: string
    role?: Role
    permissions?: Permission[]
  }
}

/** The tenant's view of an account row (its other columns stay out of the context). */
export const tenantAccount = (row: TenantAccount): TenantAccount => ({
  id: row.id,
  name: row.name,
  plan: row.plan,
  sendingPaused: row.sendingPaused,
  language: row.language,
  timezone: row.timezone,
})
