import type { FastifyInstance } from 'fastify'
import type { Permission } from '../auth/roles.ts'
import { type ResolvedSession, sessionOfRequest } from '../auth/sessions.ts'
import type { Clock } from '../clock.ts'
import type { Db } from '../db/client.ts'
import { AppDocument } from './app-document.ts'
import { AppError } from './errors.ts'
import { requireScopes } from './pipeline.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** on /app: the role permission the signed-in member needs (team and key management) */
    permission?: Permission
  }
  interface FastifyRequest {
    appSession: (ResolvedSession & { token: string }) | null
  }
}

/** A module's routes under /app, as a module's `appRoutes` gives them. */
export type AppRoutes = (app: FastifyInstance) => Promise<void>

/**
 * The web app's routes under /app, mounted as /v1 is: every route but those with `config.public` needs a session
 * (and on POST, PUT, PATCH and DELETE its CSRF token), and the role must allow `config.permission` and `config.scope`. GET /app/openapi.json is the document of them all.
 */
export function appRoutes(deps: { db: Db; clock: Clock }, routes: AppRoutes[]) {
  const { db, clock } = deps
  const document = new AppDocument()
  return async (app: FastifyInstance): Promise<void> => {
    app.addHook('onRoute', (route) => document.collect(route))
    app.decorateRequest('appSession', null)
    app.addHook('onRequest', async (request) => {
      if (request.is404 || request.routeOptions.config.public) return
      const session = await sessionOfRequest(db, clock, request)
      if (!session) throw new AppError(401, 'unauthorized', 'Sign in first')
      request.appSession = session
      request.tenant = session.tenant
      // as on /v1: a member whose role does not allow the route is refused before the input is read
      const { permission, scope } = request.routeOptions.config
      if (permission) requirePermission(session, permission)
      if (scope) requireScopes(session.tenant, scope)
    })

    app.get('/openapi.json', { config: { public: true } }, async () => document.document())
    for (const register of routes) await app.register(register)
  }
}

function requirePermission(session: ResolvedSession, permission: Permission): void {
  if (!session.tenant.actor.permissions?.includes(permission)) {
    throw new AppError(403, 'forbidden', `Your role (${session.role}) does not allow this`, { key: 'rolle_fehlt' })
  }
}
