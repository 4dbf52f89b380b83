import type { Scope } from './scopes.ts'

/** Who is calling and for which account: the first argument of every service function. */
export interface TenantContext {
  accountId: string
  account: {
    id: string
    name: string
    plan: string
    sendingPaused: boolean
    language: string
    timezone: string
  }
  actor: {
    type: 'api_key' | 'oauth'
    /** the API key's id; null for OAuth */
    keyId: string | null
    keyName: string | null
    keyPrefix: string | null
    scopes: Scope[]
    /** the credential's rate limit: its account's plan's requests per minute */
    requestsPerMinute: number
  }
}
