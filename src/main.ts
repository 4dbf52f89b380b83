import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'
import type { FastifyInstance } from 'fastify'
import { pino } from 'pino'
import { buildApp } from './app.ts'
import type { Config } from './config.ts'
import { bootstrapFirstStart } from './platform/bootstrap.ts'
import { systemClock } from './platform/clock.ts'
import { PRIVATE_UMASK, restrictDataDir } from './platform/data-dir-modes.ts'
import { type Database, openDatabase } from './platform/db/client.ts'
import { maintenanceWorker } from './platform/db/maintenance.ts'
import { migrate } from './platform/db/migrate.ts'
import { readServerFile, removeServerFile, writeServerFile } from './platform/embedded-lock.ts'
import { jobRunnerFor } from './platform/jobs/runner.ts'
import { batchedLogDestination } from './platform/log-destination.ts'
import { startMetricsServer } from './platform/metrics/endpoint.ts'
import { watchDatabase } from './platform/metrics/scrape.ts'
import { registerProcess } from './platform/processes/processes.ts'
import { memoryRateLimiter, redisRateLimiter } from './platform/rate-limit/rate-limiter.ts'
import { startTracing } from './platform/tracing/tracing.ts'
import { declaredRetention } from './retention.ts'
import { buildServices, moduleJobs, moduleWorkers, mountedModules } from './services.ts'

/** One full collection, once, after the start (node's --expose-gc set at run time, then gc from a new context). */
function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc')
  const gc = runInNewContext('gc') as (() => void) | undefined
  gc?.()
}

/** The CLI's endpoint on the server of an embedded database (src/cli/admin-endpoint.ts), handed in by the CLI. */
export type AdminEndpoint = (
  database: Database,
  token: string,
  config: Config,
) => (app: FastifyInstance) => Promise<void>

export interface RunningServer {
  app: FastifyInstance | null
  url: string | null
  stop(): Promise<void>
}

/** herold serve: migrate, (first start) bootstrap, then run the role's parts until stop(). */
export async function serve(
  config: Config,
  print: (line: string) => void = console.log,
  options: { logsToStderr?: boolean; adminEndpoint?: AdminEndpoint } = {},
): Promise<RunningServer> {
  const embedded = !config.databaseUrl
  if (embedded) {
    const holder = readServerFile(config.dataDir)
    if (holder && holder.pid !== process.pid) {
      throw new Error(
        `another Herold server (pid ${holder.pid}) holds ${config.dataDir}; stop it or use another HEROLD_DATA_DIR`,
      )
    }
  }
  // what the process creates is its user's alone (0600/0700); the data directory's files too, though PGlite writes
  // its own as 0666: an existing install's are fixed here, with a warning, a first start's after the database opens
  process.umask(PRIVATE_UMASK)
  const logStream = batchedLogDestination(options.logsToStderr ? 2 : 1)
  const onDisk = !config.dataDir.startsWith('memory://')
  const fixedModes = onDisk ? restrictDataDir(config.dataDir) : 0
  if (fixedModes > 0) {
    pino({ level: config.logLevel }, logStream).warn(
      { data_dir: config.dataDir, changed: fixedModes },
      'the data directory was readable by other users: group and other permissions taken off its files',
    )
  }
  // what the last turn logged is written when the process exits (or the server stops)
  const flushLog = () => logStream.flushSync()
  process.once('exit', flushLog)
  const stopLog = () => {
    process.off('exit', flushLog)
    flushLog()
  }
  // tracing first: the database wraps its statements in spans only when it is on at its opening
  const stopTracing = config.otlpEndpoint
    ? await startTracing({ endpoint: config.otlpEndpoint, serviceName: config.serviceName })
    : null
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
  })
  if (onDisk) restrictDataDir(config.dataDir)
  const lockFile = embedded ? writeServerFile(config.dataDir, null) : null
  const stops: Array<() => Promise<void>> = []
  // A first start's key is shown once the server answers at its address (the curl beside it works then), or before
  // the error if it cannot start: it exists from the bootstrap on and is never shown again.
  let showFirstKey: (() => void) | null = null
  try {
    await migrate(database)
    if (embedded) {
      const first = await bootstrapFirstStart(database.orm)
      if (first) {
        showFirstKey = () => {
          showFirstKey = null
          printFirstKey(print, config, first.key, first.setupToken)
        }
      }
    }
    const rateLimiter = config.redisUrl ? redisRateLimiter(config.redisUrl) : memoryRateLimiter()
    stops.push(() => rateLimiter.close())
    // one set of services for the app and the workers; closed after both stopped
    const services = buildServices({ config, database, clock: systemClock })
    let app: FastifyInstance | null = null
    let url: string | null = null
    if (config.role !== 'worker' || embedded) {
      app = await buildApp({
        config,
        database,
        clock: systemClock,
        rateLimiter,
        services,
        logger: { level: config.logLevel, stream: logStream },
      })
      if (lockFile && options.adminEndpoint) await app.register(options.adminEndpoint(database, lockFile.token, config))
      await app.listen({ port: config.port, host: config.host })
      const address = app.server.address()
      const port = typeof address === 'object' && address ? address.port : config.port
      url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`
      if (lockFile) writeServerFile(config.dataDir, url, lockFile.token)
      showFirstKey?.()
      const listening = app
      stops.unshift(() => listening.close())
    }
    if (config.role !== 'api') {
      const deps = { config, database, clock: systemClock }
      const logger = app?.log ?? pino({ level: config.logLevel }, logStream)
      const jobs = jobRunnerFor(deps, moduleJobs(mountedModules, services), (message, error) =>
        logger.error({ err: error }, message),
      )
      // retention (expired idempotency records among them), and vacuum and analyze where the database does not
      const maintenance = maintenanceWorker({ ...deps, retention: declaredRetention }, (message, data) =>
        logger.info({ ...data }, message),
      )
      const starters = [maintenance, jobs.start, ...moduleWorkers(mountedModules, deps, services)]
      for (const start of starters) stops.push(await start())
    }
    if (config.metricsPort !== undefined) {
      // a worker without HTTP reads its gauges here (the app's watch covers the other roles)
      if (!app) {
        const unwatch = watchDatabase(database, systemClock)
        stops.push(async () => unwatch())
      }
      const metrics = await startMetricsServer({
        host: config.host,
        port: config.metricsPort,
        token: config.metricsToken,
      })
      stops.unshift(() => metrics.close())
      print(`metrics: ${metrics.url}/metrics`)
    }
    // herold status lists it (herold_processes)
    stops.unshift(await registerProcess(database, systemClock, { role: config.role, url }))
    stops.push(() => services.close())
    if (stopTracing) stops.push(stopTracing)
    // The start's garbage (a first start's initdb instance of PGlite, the module loader's) would otherwise hold
    // hundreds of MB until the heap grows enough to collect it.
    if (embedded) collectGarbage()
    const stop = async () => {
      await shutdown(stops, database, embedded ? config.dataDir : null)
      stopLog()
    }
    return { app, url, stop }
  } catch (error) {
    showFirstKey?.()
    await shutdown(stops, database, embedded ? config.dataDir : null)
    await stopTracing?.()
    stopLog()
    throw error
  }
}

async function shutdown(stops: Array<() => Promise<void>>, database: Database, dataDir: string | null) {
  for (const stop of stops) await stop().catch(() => {})
  await database.close()
  if (dataDir) removeServerFile(dataDir)
}

function printFirstKey(print: (line: string) => void, config: Config, key: string, setupToken: string): void {
  print(
    [
      '',
      'Herold created the account "Default" and an API key with every scope.',
      'This key is shown only this once; store it now:',
      '',
      `  HEROLD_API_KEY=${key}`,
      '',
      `Try it:  curl -H "Authorization: Bearer ${key}" ${config.publicUrl}/v1/me`,
      '',
      'Set up the web app: open this one-time link (valid for 7 days) and create the owner:',
      '',
      `  ${config.publicUrl}/setup/${setupToken}`,
      '',
    ].join('\n'),
  )
}
