import { and, eq, isNull } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { AppError } from '../http/errors.ts'
import { accounts, apiKeys, plans } from './auth.tables.ts'
import type { CredentialCache } from './credential-cache.ts'
import { hashSecret, OAUTH_TOKEN_PREFIX } from './credentials.ts'
import type { Scope } from './scopes.ts'
import { type TenantContext, tenantAccount } from './tenant.ts'

const unauthorized = (message: string) => new AppError(401, 'unauthorized', message)

export function bearerToken(header: string | undefined): string {
  if (!header) throw unauthorized('Missing API key: send it as "Authorization: Bearer <API_KEY>"')
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header)
  if (!match) throw unauthorized('Malformed Authorization header: expected "Bearer <API_KEY>"')
  return match[1]
}

/** What an API key resolves to: its tenant and its account's status (the account guard). */
export interface ResolvedKey {
  status: 'active' | 'blocked'
  tenant: TenantContext
}

/** The key's row with its account and plan, in one query; undefined for an unknown or revoked key. */
async function loadApiKey(db: Db, hash: string): Promise<ResolvedKey | undefined> {
  const [row] = await db
    .select({ key: apiKeys, account: accounts, requestsPerMinute: plans.requestsPerMinute })
    .from(apiKeys)
    .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
    .innerJoin(plans, eq(plans.name, accounts.plan))
    .where(and(eq(apiKeys.keyHash, hash), isNull(apiKeys.revokedAt)))
    .limit(1)
  if (!row) return undefined
  return {
    status: row.account.status,
    tenant: {
      accountId: row.account.id,
      account: tenantAccount(row.account),
      actor: {
        type: 'api_key',
        keyId: row.key.id,
        keyName: row.key.name,
        keyPrefix: row.key.prefix,
        scopes: row.key.scopes as Scope[],
        requestsPerMinute: row.requestsPerMinute,
      },
    },
  }
}

/**
 * Resolves an API key to its tenant, from the process's credential cache when it holds the key (every change to
 * keys, accounts and plans clears it on every process within a second); the account's status is the account guard.
 */
export async function authenticateApiKey(
  db: Db,
  token: string,
  cache?: CredentialCache<ResolvedKey>,
): Promise<TenantContext> {
  const hash = hashOfApiKey(token)
  let resolved: ResolvedKey | undefined
  try {
    resolved = cache ? await cache.get(hash, () => loadApiKey(db, hash)) : await loadApiKey(db, hash)
  } catch {
    throw new AppError(503, 'status_unavailable', 'The account status could not be checked; retry in a minute', {
      headers: { 'retry-after': '60' },
    })
  }
  return tenantOf(resolved)
}

/**
 * authenticateApiKey's answer when the credential cache holds the key, synchronously (the same errors); undefined
 * when it does not (the caller then awaits authenticateApiKey).
 */
export function cachedApiKey(token: string, cache: CredentialCache<ResolvedKey>): TenantContext | undefined {
  const resolved = cache.peek(hashOfApiKey(token))
  return resolved === undefined ? undefined : tenantOf(resolved)
}

function hashOfApiKey(token: string): string {
  if (token.startsWith(OAUTH_TOKEN_PREFIX)) {
    throw unauthorized('OAuth access tokens are only accepted by the tool server; use an API key')
  }
  return hashSecret(token)
}

function tenantOf(resolved: ResolvedKey | undefined): TenantContext {
  if (!resolved) throw unauthorized('Invalid or revoked API key')
  if (resolved.status !== 'active') throw new AppError(403, 'account_blocked', 'This account is blocked')
  return resolved.tenant
}

export function requireScope(tenant: TenantContext, scope: Scope): void {
  if (!tenant.actor.scopes.includes(scope)) {
    const message =
      tenant.actor.type === 'session'
        ? `Your role (${tenant.actor.role}) does not allow this (scope ${scope})`
        : `This API key lacks the scope ${scope}`
    throw new AppError(403, 'forbidden', message, { key: 'apikey_scope_fehlt' })
  }
}
