import { and, eq, gt, isNotNull, isNull, or } from 'drizzle-orm'
import { accounts, oauthAccessTokens, plans } from '../platform/auth/auth.tables.ts'
import { authenticateApiKey, bearerToken, type ResolvedKey } from '../platform/auth/authenticate.ts'
import type { CredentialCache } from '../platform/auth/credential-cache.ts'
import { hashSecret, OAUTH_TOKEN_PREFIX } from '../platform/auth/credentials.ts'
import { memberships, type Role } from '../platform/auth/people.tables.ts'
import { ROLE_PERMISSIONS, ROLE_SCOPES } from '../platform/auth/roles.ts'
import { SCOPES, type Scope } from '../platform/auth/scopes.ts'
import { activeMembership } from '../platform/auth/sessions.ts'
import type { Clock } from '../platform/clock.ts'
import type { Db } from '../platform/db/client.ts'
import { AppError } from '../platform/http/errors.ts'
import type { ToolCaller } from '../platform/tools/tool.ts'
import { grantTokens } from './grants.ts'
import { oauthGrants } from './mcp.tables.ts'

/**
 * The tool server accepts API keys (as REST does) and the OAuth access tokens of assistants (which REST refuses).
 * The account guard holds for both: a blocked account is 403, an unreadable status 503.
 */
export async function authenticateToolCaller(
  db: Db,
  clock: Clock,
  authorization: string | undefined,
  cache?: CredentialCache<ResolvedKey>,
): Promise<ToolCaller> {
  const token = bearerToken(authorization)
  if (!token.startsWith(OAUTH_TOKEN_PREFIX)) {
    const tenant = await authenticateApiKey(db, token, cache)
    const keyId = tenant.actor.keyId as string
    return { tenant, credentialId: keyId, rateKey: `key:${keyId}` }
  }
  let row: Awaited<ReturnType<typeof loadOAuthToken>>
  try {
    row = await loadOAuthToken(db, hashSecret(token), clock.now())
  } catch {
    throw new AppError(503, 'status_unavailable', 'The account status could not be checked; retry in a minute', {
      headers: { 'retry-after': '60' },
    })
  }
  if (!row) throw new AppError(401, 'unauthorized', 'Invalid or expired access token')
  if (row.account.status !== 'active') throw new AppError(403, 'account_blocked', 'This account is blocked')
  const { account } = row
  // a member's grant carries no more than the member's role allows now (a role changed since the approval)
  const scopes = (row.token.scopes as Scope[]).filter(
    (scope) => row.role === null || ROLE_SCOPES[row.role as Role].includes(scope),
  )
  // team and credential management: only an assistant the member trusted with everything acts as the member there
  const member = row.grantUserId !== null && row.role !== null ? (row.role as Role) : null
  const fullGrant = SCOPES.every((scope) => scopes.includes(scope))
  return {
    credentialId: row.token.id,
    rateKey: `oauth:${row.token.id}`,
    tenant: {
      accountId: account.id,
      account: {
        id: account.id,
        name: account.name,
        plan: account.plan,
        sendingPaused: account.sendingPaused,
        language: account.language,
        timezone: account.timezone,
      },
      actor: {
        type: 'oauth',
        keyId: null,
        keyName: null,
        keyPrefix: null,
        scopes,
        requestsPerMinute: row.requestsPerMinute,
        ...(member
          ? {
              userId: row.grantUserId as string,
              role: member,
              permissions: fullGrant ? [...ROLE_PERMISSIONS[member]] : [],
            }
          : {}),
      },
    },
  }
}

async function loadOAuthToken(db: Db, hash: string, now: Date) {
  const [row] = await db
    .select({
      token: oauthAccessTokens,
      account: accounts,
      requestsPerMinute: plans.requestsPerMinute,
      grantUserId: oauthGrants.userId,
      role: memberships.role,
    })
    .from(oauthAccessTokens)
    .innerJoin(accounts, eq(accounts.id, oauthAccessTokens.accountId))
    .innerJoin(plans, eq(plans.name, accounts.plan))
    .leftJoin(oauthGrants, grantTokens)
    .leftJoin(memberships, activeMembership(oauthGrants.accountId, oauthGrants.userId))
    .where(
      and(
        eq(oauthAccessTokens.tokenHash, hash),
        // a member's grant lives only while the member who approved it is an active member of the account
        or(isNull(oauthGrants.userId), isNotNull(memberships.userId)),
        gt(oauthAccessTokens.expiresAt, now),
        // a token of a revoked grant is dead (revocation, a reused refresh token)
        or(
          isNull(oauthAccessTokens.grantId),
          and(eq(oauthGrants.id, oauthAccessTokens.grantId), isNull(oauthGrants.revokedAt)),
        ),
      ),
    )
    .limit(1)
  return row
}
