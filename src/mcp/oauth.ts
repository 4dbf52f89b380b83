import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { and, eq, gt, isNull, notExists, sql } from 'drizzle-orm'
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import { oauthAccessTokens } from '../platform/auth/auth.tables.ts'
import { generateOAuthToken, hashSecret } from '../platform/auth/credentials.ts'
import { memberships } from '../platform/auth/people.tables.ts'
import { isScope, SCOPES, type Scope } from '../platform/auth/scopes.ts'
import type { Clock } from '../platform/clock.ts'
import { inAccount } from '../platform/db/account-rows.ts'
import type { Db } from '../platform/db/client.ts'
import type { RateLimiter } from '../platform/rate-limit/rate-limiter.ts'
import { type ClientMetadataOptions, clientMetadataFetcher, isClientMetadataUrl } from './client-metadata.ts'
import { oauthClients, oauthCodes, oauthGrants, oauthRefreshTokens } from './mcp.tables.ts'
import { isAllowedRedirect, OAuthError } from './oauth.rules.ts'

export { isAllowedRedirect, OAuthError }

/**
 * OAuth 2.1 for assistants, as the MCP authorization specification asks: protected-resource metadata (RFC 9728),
 * authorization-server metadata (RFC 8414), dynamic client registration (RFC 7591, public clients), the
 * authorization code with PKCE S256 only, the resource parameter (RFC 8707) bound to {mcp_url}, short-lived access
 * tokens, rotating refresh tokens whose reuse revokes the grant, revocation (RFC 7009); every secret stored hashed.
 *
 * The approval itself belongs to the web app: /oauth/authorize checks the request and sends the browser to the
 * consent page (/consent), where a signed-in member chooses the account and approves or denies the scopes
 * (src/mcp/consent.ts, POST /app/oauth/authorization, which calls `approveAuthorization` or `denyAuthorization`).
 */

export const ACCESS_TOKEN_TTL_S = 3600
const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3600 * 1000
const CODE_TTL_MS = 5 * 60 * 1000

export interface OAuthUrls {
  issuer: string
  resource: string
}

export function oauthUrls(publicUrl: string): OAuthUrls {
  const issuer = new URL(publicUrl).origin
  return { issuer, resource: `${issuer}/mcp` }
}

export const resourceMetadataUrl = (publicUrl: string) =>
  `${oauthUrls(publicUrl).issuer}/.well-known/oauth-protected-resource/mcp`

/**
 * What one address may register, and how many registered clients may wait unused: registration needs no sign-in
 * (RFC 7591, as MCP clients expect), so these bound what anyone can store. A client that never completed an
 * authorization is removed after UNUSED_CLIENT_DAYS (mcp.retention.ts).
 */
export const REGISTRATION = {
  perAddress: 25,
  windowSeconds: 3600,
  bodyBytes: 8 * 1024,
  redirectUris: 10,
  redirectUriLength: 512,
  clientNameLength: 200,
  unusedClients: 10_000,
} as const
export const UNUSED_CLIENT_DAYS = 7

export async function registerClient(db: Db, clock: Clock, input: Record<string, unknown>) {
  const redirectUris = input.redirect_uris
  if (
    !Array.isArray(redirectUris) ||
    redirectUris.length === 0 ||
    redirectUris.length > REGISTRATION.redirectUris ||
    !redirectUris.every(
      (u) => typeof u === 'string' && u.length <= REGISTRATION.redirectUriLength && isAllowedRedirect(u),
    )
  ) {
    throw new OAuthError(
      'invalid_redirect_uri',
      `redirect_uris: 1 to ${REGISTRATION.redirectUris} https, loopback http or private-scheme addresses without fragment, each at most ${REGISTRATION.redirectUriLength} characters`,
    )
  }
  const method = input.token_endpoint_auth_method ?? 'none'
  if (method !== 'none') {
    throw new OAuthError('invalid_client_metadata', 'Only public clients (token_endpoint_auth_method none) with PKCE')
  }
  if (input.client_name !== undefined && typeof input.client_name !== 'string') {
    throw new OAuthError('invalid_client_metadata', 'client_name must be a string')
  }
  if (typeof input.client_name === 'string' && input.client_name.trim().length > REGISTRATION.clientNameLength) {
    throw new OAuthError(
      'invalid_client_metadata',
      `client_name must be at most ${REGISTRATION.clientNameLength} characters`,
    )
  }
  const name = typeof input.client_name === 'string' && input.client_name.trim() ? input.client_name.trim() : 'client'
  await refuseOverUnusedCap(db, clock)
  const clientId = `hoc_${randomBytes(16).toString('base64url')}`
  const [row] = await db
    .insert(oauthClients)
    .values({ clientId, clientName: name.slice(0, 200), redirectUris: redirectUris as string[] })
    .returning()
  return {
    client_id: row.clientId,
    client_id_issued_at: Math.floor(row.createdAt.getTime() / 1000),
    client_name: row.clientName,
    redirect_uris: row.redirectUris,
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  }
}

/** 503 while UNUSED_CLIENT_DAYS' worth of registrations that were never used fills the cap (they expire). */
async function refuseOverUnusedCap(db: Db, clock: Clock): Promise<void> {
  const since = new Date(clock.now().getTime() - UNUSED_CLIENT_DAYS * 24 * 3600_000)
  const [row] = await db
    .select({ count: sql<number>`count(*)::int` })
    .from(oauthClients)
    .where(
      and(
        gt(oauthClients.createdAt, since),
        notExists(db.select({ one: sql`1` }).from(oauthGrants).where(eq(oauthGrants.clientId, oauthClients.clientId))),
      ),
    )
  if (Number(row?.count ?? 0) >= REGISTRATION.unusedClients) {
    throw Object.assign(
      new OAuthError('temporarily_unavailable', 'Too many registered clients are waiting unused; try again later', 503),
      { retryAfter: 3600 },
    )
  }
}

export interface AuthorizationRequest {
  clientId: string
  redirectUri: string
  codeChallenge: string
  scopes: Scope[]
  state?: string
}

/** Checks an authorization request; errors before the redirect address is known are not sent to it. */
export async function checkAuthorizationRequest(
  db: Db,
  urls: OAuthUrls,
  query: Record<string, string | undefined>,
): Promise<AuthorizationRequest> {
  const [client] = query.client_id
    ? await db.select().from(oauthClients).where(eq(oauthClients.clientId, query.client_id))
    : []
  if (!client) throw new OAuthError('invalid_client', 'Unknown client_id')
  if (!query.redirect_uri || !client.redirectUris.includes(query.redirect_uri)) {
    throw new OAuthError('invalid_request', 'redirect_uri is not one the client registered')
  }
  const redirect = (error: string, description: string) =>
    Object.assign(new OAuthError(error, description), { redirectUri: query.redirect_uri, state: query.state })
  if (query.response_type !== 'code') throw redirect('unsupported_response_type', 'response_type must be code')
  if (query.code_challenge_method !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(query.code_challenge ?? '')) {
    throw redirect('invalid_request', 'PKCE is required: code_challenge (S256, 43 characters) and method S256')
  }
  if (query.resource !== undefined && query.resource !== urls.resource) {
    throw redirect('invalid_target', `resource must be ${urls.resource}`)
  }
  const requested = (query.scope ?? '').split(' ').filter(Boolean)
  if (!requested.every(isScope)) throw redirect('invalid_scope', 'Unknown scope')
  return {
    clientId: client.clientId,
    redirectUri: query.redirect_uri,
    codeChallenge: query.code_challenge as string,
    scopes: (requested.length > 0 ? requested : [...SCOPES]) as Scope[],
    state: query.state,
  }
}

/** The address the client hears a denial at (access_denied, RFC 6749 4.1.2.1). */
export function denyAuthorization(urls: OAuthUrls, request: AuthorizationRequest): string {
  const target = new URL(request.redirectUri)
  target.searchParams.set('error', 'access_denied')
  target.searchParams.set('error_description', 'The member denied the request')
  if (request.state !== undefined) target.searchParams.set('state', request.state)
  target.searchParams.set('iss', urls.issuer)
  return target.href
}

/**
 * What the consent page calls once a signed-in member approved the request for an account: a grant and a
 * single-use code, returned as the address to send the browser to.
 */
export async function approveAuthorization(
  db: Db,
  clock: Clock,
  urls: OAuthUrls,
  input: AuthorizationRequest & { accountId: string; userId?: string },
): Promise<{ redirectTo: string }> {
  const code = randomBytes(32).toString('base64url')
  const grantId = randomUUID()
  await db.transaction(async (tx) => {
    await tx.insert(oauthGrants).values({
      accountId: input.accountId,
      id: grantId,
      clientId: input.clientId,
      scopes: input.scopes,
      resource: urls.resource,
      userId: input.userId ?? null,
    })
    await tx.insert(oauthCodes).values({
      codeHash: hashSecret(code),
      accountId: input.accountId,
      grantId,
      clientId: input.clientId,
      redirectUri: input.redirectUri,
      codeChallenge: input.codeChallenge,
      expiresAt: new Date(clock.now().getTime() + CODE_TTL_MS),
    })
  })
  const target = new URL(input.redirectUri)
  target.searchParams.set('code', code)
  if (input.state !== undefined) target.searchParams.set('state', input.state)
  target.searchParams.set('iss', urls.issuer)
  return { redirectTo: target.href }
}

export async function revokeGrant(db: Db, clock: Clock, accountId: string, grantId: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx
      .update(oauthGrants)
      .set({ revokedAt: clock.now() })
      .where(and(eq(oauthGrants.accountId, accountId), eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt)))
    await tx
      .delete(oauthAccessTokens)
      .where(and(eq(oauthAccessTokens.accountId, accountId), eq(oauthAccessTokens.grantId, grantId)))
  })
}

async function issueTokens(db: Db, clock: Clock, grant: typeof oauthGrants.$inferSelect) {
  const access = generateOAuthToken()
  const refresh = `hor_${randomBytes(32).toString('base64url')}`
  const now = clock.now().getTime()
  await db.transaction(async (tx) => {
    await tx.insert(oauthAccessTokens).values({
      accountId: grant.accountId,
      id: randomUUID(),
      tokenHash: access.hash,
      scopes: grant.scopes,
      expiresAt: new Date(now + ACCESS_TOKEN_TTL_S * 1000),
      grantId: grant.id,
    })
    await tx.insert(oauthRefreshTokens).values({
      tokenHash: hashSecret(refresh),
      accountId: grant.accountId,
      grantId: grant.id,
      expiresAt: new Date(now + REFRESH_TOKEN_TTL_MS),
    })
  })
  return {
    access_token: access.token,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_S,
    refresh_token: refresh,
    scope: grant.scopes.join(' '),
  }
}

async function activeGrant(db: Db, accountId: string, grantId: string) {
  const [grant] = await db
    .select()
    .from(oauthGrants)
    .where(and(eq(oauthGrants.accountId, accountId), eq(oauthGrants.id, grantId)))
  if (!grant || grant.revokedAt) throw new OAuthError('invalid_grant', 'The grant was revoked')
  if (grant.userId) {
    // the member who approved it must still be an active member of the account
    const [membership] = await db
      .select({ userId: memberships.userId })
      .from(memberships)
      .where(inAccount(memberships, accountId, eq(memberships.userId, grant.userId), eq(memberships.status, 'active')))
    if (!membership) throw new OAuthError('invalid_grant', 'The member who approved this grant left the account')
  }
  return grant
}

export async function exchangeToken(db: Db, clock: Clock, urls: OAuthUrls, form: Record<string, string | undefined>) {
  if (form.resource !== undefined && form.resource !== urls.resource) {
    throw new OAuthError('invalid_target', `resource must be ${urls.resource}`)
  }
  const now = clock.now()
  if (form.grant_type === 'authorization_code') {
    const [code] = form.code
      ? await db
          .select()
          .from(oauthCodes)
          .where(eq(oauthCodes.codeHash, hashSecret(form.code)))
      : []
    if (!code || code.clientId !== form.client_id) throw new OAuthError('invalid_grant', 'Unknown code')
    if (code.usedAt) {
      // a code presented twice: whoever holds it may be an attacker; end what the first exchange gave
      await revokeGrant(db, clock, code.accountId, code.grantId)
      throw new OAuthError('invalid_grant', 'The code was already used; its tokens are revoked')
    }
    if (code.expiresAt.getTime() <= now.getTime()) throw new OAuthError('invalid_grant', 'The code expired')
    if (code.redirectUri !== form.redirect_uri) throw new OAuthError('invalid_grant', 'redirect_uri does not match')
    const challenge = createHash('sha256')
      .update(form.code_verifier ?? '')
      .digest('base64url')
    if (!form.code_verifier || challenge !== code.codeChallenge) {
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge')
    }
    const used = await db
      .update(oauthCodes)
      .set({ usedAt: now })
      .where(and(eq(oauthCodes.codeHash, code.codeHash), isNull(oauthCodes.usedAt)))
      .returning()
    if (used.length === 0) throw new OAuthError('invalid_grant', 'The code was already used')
    return issueTokens(db, clock, await activeGrant(db, code.accountId, code.grantId))
  }
  if (form.grant_type === 'refresh_token') {
    const hash = hashSecret(form.refresh_token ?? '')
    const [token] = await db.select().from(oauthRefreshTokens).where(eq(oauthRefreshTokens.tokenHash, hash))
    if (!token) throw new OAuthError('invalid_grant', 'Unknown refresh token')
    const grant = await activeGrant(db, token.accountId, token.grantId)
    if (grant.clientId !== form.client_id) throw new OAuthError('invalid_grant', 'The token belongs to another client')
    if (token.usedAt) {
      // rotation: a refresh token works once; its reuse means it leaked, so the whole grant ends
      await revokeGrant(db, clock, token.accountId, token.grantId)
      throw new OAuthError('invalid_grant', 'The refresh token was already used; the grant is revoked')
    }
    if (token.expiresAt.getTime() <= now.getTime()) throw new OAuthError('invalid_grant', 'The refresh token expired')
    const used = await db
      .update(oauthRefreshTokens)
      .set({ usedAt: now })
      .where(and(eq(oauthRefreshTokens.tokenHash, hash), isNull(oauthRefreshTokens.usedAt)))
      .returning()
    if (used.length === 0) {
      await revokeGrant(db, clock, token.accountId, token.grantId)
      throw new OAuthError('invalid_grant', 'The refresh token was already used; the grant is revoked')
    }
    return issueTokens(db, clock, grant)
  }
  throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token')
}

/** RFC 7009: a refresh token revokes its grant; an access token ends itself. Unknown tokens are not an error. */
export async function revokeToken(db: Db, clock: Clock, form: Record<string, string | undefined>): Promise<void> {
  const hash = hashSecret(form.token ?? '')
  const [refresh] = await db.select().from(oauthRefreshTokens).where(eq(oauthRefreshTokens.tokenHash, hash))
  if (refresh) {
    await revokeGrant(db, clock, refresh.accountId, refresh.grantId)
    return
  }
  await db.delete(oauthAccessTokens).where(eq(oauthAccessTokens.tokenHash, hash))
}

function sendOAuthError(reply: FastifyReply, error: unknown) {
  if (!(error instanceof OAuthError)) throw error
  const retryAfter = (error as OAuthError & { retryAfter?: number }).retryAfter
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter))
  return reply
    .code(error.status)
    .header('cache-control', 'no-store')
    .send({ error: error.error, error_description: error.message })
}

/**
 * A body the OAuth endpoints cannot read (too large, not JSON, nested too deep) answered as OAuth clients read
 * errors: RFC 7591's invalid_client_metadata at registration, invalid_request elsewhere; the rest as the API does.
 */
function oauthBodyError(error: FastifyError, url: string): OAuthError | null {
  const code = url.startsWith('/oauth/register') ? 'invalid_client_metadata' : 'invalid_request'
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new OAuthError(code, `The request body is larger than ${REGISTRATION.bodyBytes / 1024} KB`, 413)
  }
  const status = (error as { status?: number }).status ?? error.statusCode
  if (status === 400 || status === 415) return new OAuthError(code, error.message || 'The body cannot be read', status)
  return null
}

const FORM = 'application/x-www-form-urlencoded'
const AUTHORIZE_PARAMETERS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'code_challenge',
  'code_challenge_method',
  'scope',
  'state',
  'resource',
] as const

/** The OAuth endpoints of the tool server, at the root of HEROLD_PUBLIC_URL. */
export function oauthRoutes(deps: {
  db: Db
  clock: Clock
  publicUrl: string
  clientMetadata: ClientMetadataOptions
  /** counts registrations per address (REGISTRATION.perAddress in REGISTRATION.windowSeconds); closed with the app */
  registrationLimiter: RateLimiter
}) {
  const urls = oauthUrls(deps.publicUrl)
  return async (app: FastifyInstance): Promise<void> => {
    const metadata = clientMetadataFetcher(deps.clientMetadata)
    app.addHook('onClose', () => metadata.close())
    app.addHook('onClose', () => deps.registrationLimiter.close())
    app.setErrorHandler((error: FastifyError, request, reply) => {
      const oauthError = oauthBodyError(error, request.url)
      if (!oauthError) throw error
      return sendOAuthError(reply, oauthError)
    })
    app.addContentTypeParser(FORM, { parseAs: 'string' }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(String(body))))
    })
    const config = { public: true }
    const schema = { hide: true }
    const protectedResource = async () => ({
      resource: urls.resource,
      authorization_servers: [urls.issuer],
      scopes_supported: SCOPES,
      bearer_methods_supported: ['header'],
      resource_name: 'Herold tool server',
    })
    app.get('/.well-known/oauth-protected-resource', { config, schema }, protectedResource)
    app.get('/.well-known/oauth-protected-resource/mcp', { config, schema }, protectedResource)
    app.get('/.well-known/oauth-authorization-server', { config, schema }, async () => ({
      issuer: urls.issuer,
      authorization_endpoint: `${urls.issuer}/oauth/authorize`,
      token_endpoint: `${urls.issuer}/oauth/token`,
      registration_endpoint: `${urls.issuer}/oauth/register`,
      revocation_endpoint: `${urls.issuer}/oauth/revoke`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      scopes_supported: SCOPES,
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    }))

    app.post('/oauth/register', { config, schema, bodyLimit: REGISTRATION.bodyBytes }, async (request, reply) => {
      try {
        const rate = await deps.registrationLimiter.consume(`oauth-register:${request.ip}`, REGISTRATION.perAddress)
        if (!rate.allowed) {
          throw Object.assign(
            new OAuthError(
              'temporarily_unavailable',
              `At most ${REGISTRATION.perAddress} registrations an hour from one address`,
              429,
            ),
            { retryAfter: rate.resetSeconds },
          )
        }
        const body = request.body
        if (body === null || typeof body !== 'object' || Array.isArray(body)) {
          throw new OAuthError('invalid_client_metadata', 'The registration is a JSON object')
        }
        const client = await registerClient(deps.db, deps.clock, body as Record<string, unknown>)
        return reply.code(201).header('cache-control', 'no-store').send(client)
      } catch (error) {
        return sendOAuthError(reply, error)
      }
    })

    app.get('/oauth/authorize', { config, schema }, async (request, reply) => {
      try {
        const query = request.query as Record<string, string | undefined>
        // a client ID metadata document is fetched again at each authorization request (its current redirects)
        if (
          query.client_id &&
          isClientMetadataUrl(query.client_id, { httpLoopback: deps.clientMetadata.httpLoopback })
        ) {
          await metadata.resolve(deps.db, query.client_id)
        }
        await checkAuthorizationRequest(deps.db, urls, query)
        // the consent step: the web app's page, where a member signs in, chooses the account and decides; it
        // receives the request as it came and checks it again (src/mcp/consent.ts)
        const target = new URL('/consent', urls.issuer)
        for (const name of AUTHORIZE_PARAMETERS) {
          const value = query[name]
          if (typeof value === 'string') target.searchParams.set(name, value)
        }
        return reply.header('cache-control', 'no-store').redirect(`${target.pathname}${target.search}`, 302)
      } catch (error) {
        const withRedirect = error as OAuthError & { redirectUri?: string; state?: string }
        if (error instanceof OAuthError && withRedirect.redirectUri) {
          const target = new URL(withRedirect.redirectUri)
          target.searchParams.set('error', error.error)
          target.searchParams.set('error_description', error.message)
          if (withRedirect.state !== undefined) target.searchParams.set('state', withRedirect.state)
          target.searchParams.set('iss', urls.issuer)
          return reply.redirect(target.href, 302)
        }
        return sendOAuthError(reply, error)
      }
    })

    app.post('/oauth/token', { config, schema }, async (request, reply) => {
      try {
        const form = (request.body ?? {}) as Record<string, string | undefined>
        const tokens = await exchangeToken(deps.db, deps.clock, urls, form)
        return reply.header('cache-control', 'no-store').send(tokens)
      } catch (error) {
        return sendOAuthError(reply, error)
      }
    })

    app.post('/oauth/revoke', { config, schema }, async (request, reply) => {
      await revokeToken(deps.db, deps.clock, (request.body ?? {}) as Record<string, string | undefined>)
      return reply.code(200).send({})
    })
  }
}
