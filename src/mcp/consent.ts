import { and, asc, eq } from 'drizzle-orm'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { type Static, Type } from 'typebox'
import { accounts } from '../platform/auth/auth.tables.ts'
import { memberships, type Role } from '../platform/auth/people.tables.ts'
import { ROLE_SCOPES } from '../platform/auth/roles.ts'
import type { Scope } from '../platform/auth/scopes.ts'
import { type ResolvedSession, sessionOfRequest } from '../platform/auth/sessions.ts'
import type { Clock } from '../platform/clock.ts'
import type { Db } from '../platform/db/client.ts'
import { collectOutsideAppRoute } from '../platform/http/app-document.ts'
import { AppError } from '../platform/http/errors.ts'
import { callTool, type ToolRuntime } from './call.ts'
import { oauthClients } from './mcp.tables.ts'
import {
  type AuthorizationRequest,
  approveAuthorization,
  checkAuthorizationRequest,
  denyAuthorization,
  OAuthError,
  oauthUrls,
} from './oauth.ts'

/**
 * The web app's side of the tool server, under /app with the member's session (every POST needs its CSRF token):
 * the consent step of OAuth (which account, which scopes, approve or deny) and every tool over plain HTTP at
 * POST /app/{tool_name}, with the scopes of the member's role.
 */

const AuthorizeFields = {
  client_id: Type.String({ maxLength: 200 }),
  redirect_uri: Type.String({ maxLength: 2000 }),
  response_type: Type.String({ maxLength: 40 }),
  code_challenge: Type.String({ maxLength: 200 }),
  code_challenge_method: Type.String({ maxLength: 20 }),
  scope: Type.Optional(Type.String({ maxLength: 2000 })),
  state: Type.Optional(Type.String({ maxLength: 2000 })),
  resource: Type.Optional(Type.String({ maxLength: 2000 })),
}
export const ConsentQuery = Type.Object(AuthorizeFields)

export const ConsentAccount = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  role: Type.String({ description: 'the member’s role in this account' }),
  scopes: Type.Array(Type.String(), { description: 'the requested scopes this role allows: what approval grants' }),
  current: Type.Boolean({ description: 'the account of this session' }),
})

export const ConsentView = Type.Object({
  client: Type.Object({
    client_id: Type.String(),
    client_name: Type.String(),
    redirect_uri: Type.String(),
  }),
  requested_scopes: Type.Array(Type.String()),
  resource: Type.String({ description: 'the tool server the tokens are bound to' }),
  user: Type.Object({ name: Type.String(), email: Type.String() }),
  accounts: Type.Array(ConsentAccount),
})

export const ConsentDecision = Type.Object({
  ...AuthorizeFields,
  account_id: Type.String({ format: 'uuid' }),
  decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]),
})

export const ConsentRedirect = Type.Object({
  redirect_to: Type.String({ description: 'where the browser goes next: the client, with the code or the error' }),
})

const sessions = new WeakMap<FastifyRequest, ResolvedSession>()

function sessionOf(request: FastifyRequest): ResolvedSession {
  const session = sessions.get(request)
  if (!session) throw new AppError(401, 'unauthorized', 'Sign in first')
  return session
}

/** The request as /oauth/authorize checked it; a tampered request is a 400, never a redirect. */
async function checked(db: Db, publicUrl: string, query: Record<string, string | undefined>) {
  try {
    return await checkAuthorizationRequest(db, oauthUrls(publicUrl), query)
  } catch (error) {
    if (error instanceof OAuthError) {
      throw new AppError(400, 'bad_request', `The authorization request is invalid: ${error.message}`, {
        key: `oauth_${error.error}`,
      })
    }
    throw error
  }
}

/** The accounts in which this person is an active member, with what each role allows of the requested scopes. */
async function accountsOf(db: Db, session: ResolvedSession, requested: Scope[]) {
  const rows = await db
    .select({ id: accounts.id, name: accounts.name, status: accounts.status, role: memberships.role })
    .from(memberships)
    .innerJoin(accounts, eq(accounts.id, memberships.accountId))
    .where(and(eq(memberships.userId, session.userId), eq(memberships.status, 'active')))
    .orderBy(asc(memberships.createdAt))
  return rows
    .filter((row) => row.status === 'active')
    .map((row) => ({
      id: row.id,
      name: row.name,
      role: row.role as Role,
      scopes: requested.filter((scope) => ROLE_SCOPES[row.role as Role].includes(scope)),
      current: row.id === session.tenant.accountId,
    }))
}

export function toolAppRoutes(deps: { db: Db; clock: Clock; publicUrl: string; runtime: ToolRuntime }) {
  const { db, clock, publicUrl, runtime } = deps
  const urls = oauthUrls(publicUrl)
  const tags = ['app']
  return async (app: FastifyInstance): Promise<void> => {
    // documented in the web app's OpenAPI document beside the people module's /app routes
    app.addHook('onRoute', (route) => collectOutsideAppRoute(route))
    app.addHook('onRequest', async (request) => {
      if (request.is404) return
      const session = await sessionOfRequest(db, clock, request)
      if (!session) throw new AppError(401, 'unauthorized', 'Sign in first')
      sessions.set(request, session)
      request.tenant = session.tenant
    })

    app.get<{ Querystring: Static<typeof ConsentQuery> }>(
      '/oauth/authorization',
      {
        schema: {
          operationId: 'getOAuthAuthorization',
          summary: 'What an assistant asks for: the client, the scopes, and the accounts the member can grant them in',
          description:
            'The consent page of an assistant’s OAuth request: who asks, which scopes, and for which accounts.',
          tags,
          hide: true,
          querystring: ConsentQuery,
          response: { 200: ConsentView },
        },
      },
      async (request) => {
        const session = sessionOf(request)
        const authorization = await checked(db, publicUrl, request.query)
        const [client] = await db.select().from(oauthClients).where(eq(oauthClients.clientId, authorization.clientId))
        return {
          client: {
            client_id: client.clientId,
            client_name: client.clientName,
            redirect_uri: authorization.redirectUri,
          },
          requested_scopes: authorization.scopes,
          resource: urls.resource,
          user: { name: session.user.name, email: session.user.email },
          accounts: await accountsOf(db, session, authorization.scopes),
        }
      },
    )

    app.post<{ Body: Static<typeof ConsentDecision> }>(
      '/oauth/authorization',
      {
        schema: {
          operationId: 'decideOAuthAuthorization',
          summary: 'Approve or deny an assistant’s request for one account; the answer is where the browser goes next',
          description: 'Grants the request for one account (the scopes the member’s role allows) or denies it.',
          tags,
          hide: true,
          body: ConsentDecision,
          response: { 200: ConsentRedirect },
        },
      },
      async (request) => {
        const session = sessionOf(request)
        const { account_id: accountId, decision, ...query } = request.body
        const authorization: AuthorizationRequest = await checked(db, publicUrl, query)
        if (decision === 'deny') return { redirect_to: denyAuthorization(urls, authorization) }
        const account = (await accountsOf(db, session, authorization.scopes)).find((a) => a.id === accountId)
        // an account the person is no active member of looks like one that does not exist
        if (!account) throw new AppError(404, 'not_found', 'No such account among your memberships')
        if (account.scopes.length === 0) {
          throw new AppError(403, 'forbidden', `Your role (${account.role}) allows none of the requested scopes`, {
            key: 'rolle_fehlt',
          })
        }
        const { redirectTo } = await approveAuthorization(db, clock, urls, {
          ...authorization,
          scopes: account.scopes,
          accountId: account.id,
          userId: session.userId,
        })
        return { redirect_to: redirectTo }
      },
    )

    app.post<{ Params: { tool_name: string }; Body: Record<string, unknown> | undefined }>(
      '/:tool_name',
      {
        schema: {
          operationId: 'callAppTool',
          summary: 'Call a tool of the tool server with the session (the scopes of the member’s role)',
          description:
            'The web app calls the tools of the tool server with the session; the arguments are the tool’s own.',
          tags,
          hide: true,
          params: Type.Object({
            tool_name: Type.String({ enum: [...runtime.tools.keys()], description: 'the tool’s name' }),
          }),
          body: Type.Optional(
            Type.Unsafe<Record<string, unknown>>({ type: 'object', description: 'the tool’s arguments' }),
          ),
        },
      },
      async (request, reply) => {
        const session = sessionOf(request)
        const caller = { tenant: session.tenant, credentialId: session.sessionId, rateKey: `key:${session.sessionId}` }
        const outcome = await callTool(runtime, caller, request.params.tool_name, request.body ?? {}).catch(
          (error: unknown) => {
            if (error instanceof AppError && (error as AppError & { replayed?: boolean }).replayed) {
              reply.header('idempotent-replayed', 'true')
            }
            throw error
          },
        )
        if (outcome.replayed) reply.header('idempotent-replayed', 'true')
        return outcome.result
      },
    )
  }
}
