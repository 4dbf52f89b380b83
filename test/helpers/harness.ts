import { randomBytes, randomUUID } from 'node:crypto'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { buildApp } from '../../src/app.ts'
import { type Config, loadConfig } from '../../src/config.ts'
import { CHAT_LANE } from '../../src/modules/channels/pacer.ts'
import { TEMPLATE_SEND_QUEUE } from '../../src/modules/messaging/messaging.ports.ts'
import { sendingSettings } from '../../src/modules/messaging/messaging.tables.ts'
import { createAccount, createApiKey, setPlan } from '../../src/platform/auth/accounts.service.ts'
import { SCOPES, type Scope } from '../../src/platform/auth/scopes.ts'
import { TestClock } from '../../src/platform/clock.ts'
import { type Database, openDatabase } from '../../src/platform/db/client.ts'
import { migrate } from '../../src/platform/db/migrate.ts'
import { PACE_WINDOW_MS } from '../../src/platform/jobs/jobs.ts'
import { type JobRunner, jobRunnerFor } from '../../src/platform/jobs/runner.ts'
import {
  memoryRateLimiter,
  type RateLimiter,
  REQUESTS_PER_MINUTE,
  redisRateLimiter,
} from '../../src/platform/rate-limit/rate-limiter.ts'
import { buildServices, type MountedModule, moduleJobs, mountedModules, type Services } from '../../src/services.ts'
import { createScratchDatabase } from './scratch-database.ts'

export interface Harness {
  app: FastifyInstance
  database: Database
  clock: TestClock
  config: Config
  /** the services of the app and its workers, built once by the composition root (src/services.ts) */
  services: Services
  /** the job runner of every module's queues, when created with `workers: true` (`drain()` after moving the clock) */
  jobs: JobRunner | null
  /** accounts made by createTestAccount; their jobs are removed on close so no later test runs them */
  accountIds: string[]
  close(): Promise<void>
}

/**
 * A real app on a real database: PGlite in memory, or the PostgreSQL server named by HEROLD_TEST_DATABASE_URL
 * (shared by every test file; each test makes its own account, so nothing is truncated).
 */
export async function createHarness(
  options: {
    rateLimiter?: RateLimiter
    config?: Partial<Config>
    extraModules?: MountedModule[]
    workers?: boolean
  } = {},
): Promise<Harness> {
  const sharedUrl = process.env.HEROLD_TEST_DATABASE_URL || undefined
  // A harness that runs workers gets a database of its own: on a shared one, another test process's runner
  // (with its own clock and secret key) would claim this harness's jobs.
  const ownDatabase = sharedUrl && options.workers ? await createScratchDatabase(sharedUrl, 'herold_h') : null
  const databaseUrl = ownDatabase?.url ?? sharedUrl
  const database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: 5 })
  await migrate(database)
  const clock = new TestClock()
  const config = loadConfig(
    {},
    { databaseUrl, publicUrl: 'http://herold.test', secretKey: randomBytes(32).toString('base64'), ...options.config },
  )
  const redisUrl = process.env.HEROLD_TEST_REDIS_URL || undefined
  // counters of this harness only: test files run side by side on one Redis, all signing in from 127.0.0.1
  const rateLimiter =
    options.rateLimiter ??
    (redisUrl
      ? redisRateLimiter(redisUrl, REQUESTS_PER_MINUTE, 60, `herold-test:${randomUUID()}:rl`)
      : memoryRateLimiter())
  const mounted = [...mountedModules, ...(options.extraModules ?? [])]
  // the extra modules' reactions (a test's probe) are handed to the services like the application's own
  const services = buildServices({ config, database, clock, rateLimiter }, mounted)
  const app = await buildApp({ config, database, clock, rateLimiter, services, extraModules: options.extraModules })
  await app.ready()
  const workers = options.workers ? jobRunnerFor({ config, database, clock }, moduleJobs(mounted, services)) : null
  const stopWorkers = workers ? await workers.start() : null
  const accountIds: string[] = []
  if (workers) drainsAtThePace(workers.runner, database, clock, accountIds)
  return {
    app,
    database,
    clock,
    config,
    services,
    jobs: workers?.runner ?? null,
    accountIds,
    async close() {
      await stopWorkers?.()
      if (accountIds.length > 0) {
        await database.query('DELETE FROM jobs WHERE account_id = ANY($1::uuid[])', [accountIds]).catch(() => {})
      }
      await app.close()
      await services.close()
      await rateLimiter.close()
      await database.close()
      await ownDatabase?.drop().catch(() => {})
    },
  }
}

export interface TestAccount {
  accountId: string
  keyId: string
  key: string
  /** calls the API with this account's key */
  request(options: InjectOptions): Promise<LightMyRequestResponse>
}

let planCounter = 0

/** A fresh account with one key; by default every scope. */
export async function createTestAccount(
  harness: Harness,
  options: {
    scopes?: Scope[]
    name?: string
    plan?: { contacts?: number; messagesPerMonth?: number; webhooks?: number; requestsPerMinute?: number }
    /** 'defaults': a new account's frequency cap (on) instead of the cap off */
    protection?: 'defaults'
  } = {},
): Promise<TestAccount> {
  let plan: string | undefined
  if (options.plan) {
    plan = `test-${process.pid}-${++planCounter}-${Date.now()}`
    await setPlan(harness.database.orm, {
      name: plan,
      contactsLimit: options.plan.contacts ?? 1000,
      messagesPerMonth: options.plan.messagesPerMonth ?? 1000,
      webhooksLimit: options.plan.webhooks ?? 10,
      ...(options.plan.requestsPerMinute === undefined ? {} : { requestsPerMinute: options.plan.requestsPerMinute }),
    })
  }
  const account = await createAccount(harness.database.orm, { name: options.name ?? 'Test account', plan })
  harness.accountIds.push(account.id)
  // tests start as the accounts that existed before the frequency cap (migration 0081): cap and quiet hours off;
  // the tests of those rules switch them on (createTestAccount's protection: 'defaults' keeps a new account's)
  if (options.protection !== 'defaults') {
    await harness.database.orm
      .insert(sendingSettings)
      .values({ accountId: account.id, capEnabled: false, quietEnabled: false })
  }
  const key = await createApiKey(harness.database.orm, {
    accountId: account.id,
    name: 'test key',
    scopes: options.scopes ?? [...SCOPES],
  })
  return {
    accountId: account.id,
    keyId: key.id,
    key: key.key,
    request: (req) =>
      harness.app.inject({ ...req, headers: { authorization: `Bearer ${key.key}`, ...(req.headers ?? {}) } }),
  }
}

/** Another key on the same account. */
export async function createKey(harness: Harness, accountId: string, scopes: Scope[]): Promise<string> {
  return (await createApiKey(harness.database.orm, { accountId, name: 'extra key', scopes })).key
}

export function json<T = Record<string, unknown>>(response: LightMyRequestResponse): T {
  return response.json() as T
}

/**
 * A paced number sends only as time passes: a claim books slots PACE_WINDOW_MS ahead at most, and the test clock
 * stands still. The harness's `drain()` therefore moves the clock on by PACE_WINDOW_MS while this harness's accounts
 * still have template sends due and queued behind their number's pace, and drains again, as long as each round sends
 * some of them (a round that sends none leaves them to the test).
 */
function drainsAtThePace(runner: JobRunner, database: Database, clock: TestClock, accountIds: string[]) {
  const drainOnce = runner.drain.bind(runner)
  const waiting = async () => {
    if (accountIds.length === 0) return 0
    const [row] = await database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs j
       WHERE j.account_id = ANY($1::uuid[]) AND j.queue = $2 AND j.state = 'queued' AND j.run_at <= $3::timestamptz
         AND EXISTS (SELECT 1 FROM job_paces p WHERE p.account_id = j.account_id AND p.lane = $4)`,
      [accountIds, TEMPLATE_SEND_QUEUE, clock.now().toISOString(), CHAT_LANE],
    )
    return row.n
  }
  runner.drain = async () => {
    let before = Number.POSITIVE_INFINITY
    for (;;) {
      await drainOnce()
      const left = await waiting()
      if (left === 0 || left >= before) return
      before = left
      clock.advance(PACE_WINDOW_MS)
    }
  }
}
