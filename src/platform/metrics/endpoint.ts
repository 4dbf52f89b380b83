import { timingSafeEqual } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { renderMetrics } from './metrics.ts'

const LOOPBACK = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1'])

type Refusal = { status: 401 | 404; code: string; message: string }

/**
 * Who may read GET /metrics. With HEROLD_METRICS_TOKEN: whoever sends it as a bearer token (else 401). Without one,
 * on the main port: loopback only, and anyone else gets the 404 of a route that is not there (the metrics' existence
 * is not announced to the internet); on HEROLD_METRICS_PORT: anyone who reaches the port (bind it privately).
 */
export function metricsRefusal(
  authorization: string | undefined,
  remoteAddress: string | undefined,
  rules: { token?: string; loopbackOnly: boolean },
): Refusal | null {
  if (rules.token !== undefined) {
    const given = Buffer.from(/^Bearer (.+)$/i.exec(authorization ?? '')?.[1] ?? '')
    const expected = Buffer.from(rules.token)
    if (given.length === expected.length && timingSafeEqual(given, expected)) return null
    return { status: 401, code: 'unauthorized', message: 'GET /metrics needs the bearer token HEROLD_METRICS_TOKEN' }
  }
  if (!rules.loopbackOnly || LOOPBACK.has(remoteAddress ?? '')) return null
  return { status: 404, code: 'not_found', message: 'Route GET:/metrics not found' }
}

const envelope = (r: Refusal) => ({ error: { code: r.code, key: r.code, message: r.message } })

/** GET /metrics on the main port. */
export function metricsRoute(token: string | undefined) {
  return async (app: FastifyInstance) => {
    app.get('/metrics', { config: { public: true }, schema: { hide: true } }, async (request, reply) => {
      // request.ip: the client's address, behind a proxy HEROLD_TRUST_PROXY names the forwarded one
      const refused = metricsRefusal(request.headers.authorization, request.ip, {
        token,
        loopbackOnly: true,
      })
      if (refused) return reply.code(refused.status).send(envelope(refused))
      const { contentType, body } = await renderMetrics()
      return reply.type(contentType).send(body)
    })
  }
}

/** HEROLD_METRICS_PORT: a small server of its own that answers GET /metrics and nothing else. */
export async function startMetricsServer(options: {
  host: string
  port: number
  token?: string
}): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((request, response) => {
    const answer = (status: number, body: unknown) => {
      response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' })
      response.end(JSON.stringify(body))
    }
    const route = (request.url ?? '').split('?')[0]
    if (route !== '/metrics') return answer(404, envelope({ status: 404, code: 'not_found', message: 'Not found' }))
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      return answer(405, { error: { code: 'method_not_allowed', key: 'method_not_allowed', message: 'GET only' } })
    }
    const refused = metricsRefusal(request.headers.authorization, request.socket.remoteAddress, {
      token: options.token,
      loopbackOnly: false,
    })
    if (refused) return answer(refused.status, envelope(refused))
    renderMetrics().then(
      ({ contentType, body }) => {
        response.writeHead(200, { 'content-type': contentType })
        response.end(request.method === 'HEAD' ? undefined : body)
      },
      () => answer(500, { error: { code: 'internal_error', key: 'internal_error', message: 'Internal error' } }),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => resolve())
  })
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : options.port
  return {
    url: `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}
