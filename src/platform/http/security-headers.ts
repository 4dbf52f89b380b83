import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction, RouteOptions } from 'fastify'

/** Browsers reach Herold only over https for a year once they saw it there (the public URL is https). */
export const HSTS = 'max-age=31536000; includeSubDomains'

/**
 * Strict-Transport-Security on every answer when the public URL is https (none over plain http, where a browser
 * ignores it). Set on the raw response, so answers written past Fastify (the tool server's) carry it too.
 */
export function strictTransportSecurity(app: FastifyInstance, publicUrl: string): void {
  if (!publicUrl.startsWith('https://')) return
  app.addHook('onRequest', (_request, reply, done) => {
    reply.raw.setHeader('strict-transport-security', HSTS)
    done()
  })
}

/** The routes whose answers are a caller's data (JSON of the API, the web app's API, OAuth, the tool server). */
export function isPrivateAnswerRoute(url: string | undefined): boolean {
  if (!url) return false
  return (
    url.startsWith('/v1/') || url.startsWith('/app/') || url.startsWith('/oauth/') || url === '/mcp' || url === '/app'
  )
}

/**
 * `Cache-Control: no-store` unless the route sets its own: nothing of an account (the CSRF token of /app/session, a
 * contact) is kept by a browser's or a proxy's cache. On the raw response, so a route's own header wins (Node gives
 * the headers Fastify writes precedence) and hijacked answers (the tool server) carry it too.
 */
function noStore(_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  reply.raw.setHeader('cache-control', 'no-store')
  done()
}

/** Adds noStore to a route of isPrivateAnswerRoute (called from the pipeline's onRoute hook). */
export function addNoStore(route: RouteOptions): void {
  if (!isPrivateAnswerRoute(route.url)) return
  const existing = route.onRequest
  route.onRequest = existing === undefined ? [noStore] : [noStore, ...(Array.isArray(existing) ? existing : [existing])]
}
