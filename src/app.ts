import Fastify, { type FastifyInstance } from 'fastify'
import type { DestinationStream } from 'pino'
import type { Config } from './config.ts'
import { toolServer } from './mcp/server.ts'
import type { ResolvedKey } from './platform/auth/authenticate.ts'
import { CredentialCache } from './platform/auth/credential-cache.ts'
import type { Clock } from './platform/clock.ts'
import type { Database } from './platform/db/client.ts'
import { appRoutes } from './platform/http/app-routes.ts'
import { homePage } from './platform/http/home.ts'
import { requestForLog } from './platform/http/log-url.ts'
import { openapi, openapiRoutes } from './platform/http/openapi.ts'
import { pipeline } from './platform/http/pipeline.ts'
import { lazyRequestLogger, OneLinePerRequest } from './platform/http/request-log.ts'
import { strictTransportSecurity } from './platform/http/security-headers.ts'
import { webApp, webAppBuilt } from './platform/http/web-app.ts'
import { metricsRoute } from './platform/metrics/endpoint.ts'
import { watchDatabase } from './platform/metrics/scrape.ts'
import type { RateLimiter } from './platform/rate-limit/rate-limiter.ts'
import { instrumentRequests } from './platform/tracing/tracing.ts'
import { buildServices, type MountedModule, mountedModules, type Services } from './services.ts'

export interface AppDeps {
  config: Config
  database: Database
  clock: Clock
  rateLimiter: RateLimiter
  logger?: boolean | { level: string; stream?: NodeJS.WritableStream | DestinationStream }
  /** modules mounted after the application's own (tests use this to exercise the pipeline) */
  extraModules?: MountedModule[]
  /**
   * the process's services (src/services.ts), shared with its workers, built with the reactions of the extra modules
   * too; without them the app builds and closes its own
   */
  services?: Services
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // a request's url in the log without its secrets (log-url.ts), in the request lines and wherever `req` is logged
    logger: deps.logger ? { ...(deps.logger === true ? {} : deps.logger), serializers: { req: requestForLog } } : false,
    // the server's own logger (a level and a stream) gets its request lines written without pino
    logController: new OneLinePerRequest(typeof deps.logger === 'object' ? deps.logger.stream : undefined),
    childLoggerFactory: lazyRequestLogger,
    bodyLimit: 1024 * 1024,
    // the client's address (request.ip) from X-Forwarded-For of the proxies HEROLD_TRUST_PROXY names; none by default
    trustProxy: trustProxyOption(deps.config.trustProxy),
    ajv: {
      customOptions: {
        // strict input: an unknown field is refused by name (src/platform/http/strict-input.ts), never dropped
        removeAdditional: false,
        coerceTypes: 'array',
        useDefaults: true,
        allErrors: false,
        discriminator: true,
      },
    },
    return503OnClosing: true,
    forceCloseConnections: 'idle',
  })
  // Each request's metric is taken where its log line is written (OneLinePerRequest.requestCompleted), which Fastify
  // calls only with a logger or an onResponse hook: an app without a logger (tests, scripts) gets an empty hook.
  if (!deps.logger) app.addHook('onResponse', (_request, _reply, done) => done())
  // request spans when tracing is on (OTEL_EXPORTER_OTLP_ENDPOINT); nothing added otherwise
  instrumentRequests(app)
  strictTransportSecurity(app, deps.config.publicUrl)
  const credentials = new CredentialCache<ResolvedKey>()
  await credentials.start(deps.database)
  app.addHook('onClose', () => credentials.stop())
  await app.register(pipeline, {
    db: deps.database.orm,
    clock: deps.clock,
    rateLimiter: deps.rateLimiter,
    credentials,
  })
  await app.register(openapi, { publicUrl: deps.config.publicUrl })

  // the web app when `npm install` built it; without a build (dev dependencies omitted) a plain page at /
  await app.register(webAppBuilt() ? webApp() : homePage(deps.config.serviceName))
  await app.register(metricsRoute(deps.config.metricsToken))
  const unwatch = watchDatabase(deps.database, deps.clock)
  app.addHook('onClose', async () => unwatch())
  app.get('/healthz', { config: { public: true }, schema: { hide: true } }, async () => ({ ok: true }))
  app.get('/readyz', { config: { public: true }, schema: { hide: true } }, async (_request, reply) => {
    try {
      await deps.database.query('SELECT 1')
      return { ok: true, database: 'reachable' }
    } catch {
      return reply
        .code(503)
        .send({ error: { code: 'not_ready', key: 'not_ready', message: 'The database is unreachable' } })
    }
  })

  const platform = { config: deps.config, database: deps.database, clock: deps.clock, rateLimiter: deps.rateLimiter }
  const mounted = [...mountedModules, ...(deps.extraModules ?? [])]
  const services = deps.services ?? buildServices(platform, mounted)
  if (!deps.services) app.addHook('onClose', () => services.close())
  await app.register(
    async (v1) => {
      await v1.register(openapiRoutes)
      for (const module of mounted) if (module.routes) await v1.register(module.routes(platform, services))
    },
    { prefix: '/v1' },
  )
  // the web app's routes: every module's under /app, behind the session (src/platform/http/app-routes.ts)
  const appPlugins = mounted.flatMap((module) => (module.appRoutes ? [module.appRoutes(platform, services)] : []))
  await app.register(appRoutes({ db: deps.database.orm, clock: deps.clock }, appPlugins), { prefix: '/app' })
  for (const module of mounted) if (module.publicRoutes) await app.register(module.publicRoutes(platform, services))
  // the tool server (MCP at /mcp, POST /v1/tools/{tool_name}): tools call the module services
  await app.register(toolServer({ ...platform, rateLimiter: deps.rateLimiter, credentials, services }))
  return app
}

/** HEROLD_TRUST_PROXY as Fastify takes it: a hop count as the function proxy-addr makes of one (the types lack it). */
function trustProxyOption(
  value: Config['trustProxy'],
): boolean | string[] | ((address: string, hop: number) => boolean) {
  return typeof value === 'number' ? (_address: string, hop: number) => hop < value : value
}
