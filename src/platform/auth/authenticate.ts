import { and, eq, isNull } from 'drizzle-orm'
import type { Db } from '../db/client.ts'
import { AppError } from '../http/errors.ts'
import { accounts, apiKeys } from './auth.tables.ts'
import { hashSecret, OAUTH_TOKEN_PREFIX } from './credentials.ts'
import type { Scope } from './scopes.ts'
import type { TenantContext } from './tenant.ts'

const unauthorized = (message: string) => new AppError(401, 'unauthorized', message)

export function bearerToken(header: string | undefined): string {
  if (!header) throw unauthorized('Missing API key: send it as "Authorization: Bearer <API_KEY>"')
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header)
  if (!match) throw unauthorized('Malformed Authorization header: expected "Bearer <API_KEY>"')
  return match[1]
}

/** Resolves an API key to its tenant; the account's status is read in the same query (the account guard). */
export async function authenticateApiKey(db: Db, token: string): Promise<TenantContext> {
  if (token.startsWith(OAUTH_TOKEN_PREFIX)) {
    throw unauthorized('OAuth access tokens are only accepted by the tool server; use an API key')
  }
  let row: { key: typeof apiKeys.$inferSelect; account: typeof accounts.$inferSelect } | undefined
  try {
    ;[row] = await db
      .select({ key: apiKeys, account: accounts })
      .from(apiKeys)
      .innerJoin(accounts, eq(accounts.id, apiKeys.accountId))
      .where(and(eq(apiKeys.keyHash, hashSecret(token)), isNull(apiKeys.revokedAt)))
      .limit(1)
  } catch {
    throw new AppError(503, 'status_unavailable', 'The account status could not be checked; retry in a minute', {
      headers: { 'retry-after': '60' },
    })
  }
  if (!row) throw unauthorized('Invalid or revoked API key')
  if (row.account.status !== 'active') throw new AppError(403, 'account_blocked', 'This account is blocked')
  return {
    accountId: row.account.id,
    account: {
      id: row.account.id,
      name: row.account.name,
      plan: row.account.plan,
      sendingPaused: row.account.sendingPaused,
      language: row.account.language,
      timezone: row.account.timezone,
    },
    actor: {
      type: 'api_key',
      keyId: row.key.id,
      keyName: row.key.name,
      keyPrefix: row.key.prefix,
      scopes: row.key.scopes as Scope[],
    },
  }
}

export function requireScope(tenant: TenantContext, scope: Scope): void {
  if (!tenant.actor.scopes.includes(scope)) {
    throw new AppError(403, 'forbidden', `This API key lacks the scope ${scope}`, { key: 'apikey_scope_fehlt' })
  }
}
