/**
 * Follow-up benchmark: BENCH_CONTACTS confirmed contacts (default 100,000, written with generate_series), one active
 * sequence whose first step is due for all of them in the same minute, the sandbox number paced at BENCH_PACE
 * (default 1,000/s). Measures the activation (every contact enrolled and its step job written, future times only),
 * then, with the workers running, the sends per second over BENCH_SEND_SECONDS (default 30) against the pace, and how
 * fast due steps become queued sends.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/followups.ts   (a fresh database beside it)
 *   node bench/followups.ts                                                            embedded PGlite in memory
 *   BENCH_CONTACTS=10000 BENCH_SEND_SECONDS=10 node bench/followups.ts
 *   HEROLD_WORKER_CONCURRENCY=32 BENCH_STATEMENTS=1 …                                   32 in flight; the costliest statements
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { loadConfig } from '../src/config.ts'
import { createFollowupsService } from '../src/modules/followups/index.ts'
import { createAccount, getAccount, setPlan } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { jobRunnerFor } from '../src/platform/jobs/runner.ts'
import { buildServices, moduleJobs, mountedModules } from '../src/services.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000)
const PACE = Number(process.env.BENCH_PACE ?? 1_000)
const SEND_SECONDS = Number(process.env.BENCH_SEND_SECONDS ?? 30)
// as bench/sends.ts: a number paced at 1,000/s wants batches of 128 (half the slots), so 256 in flight
/** the server's own settings, so the figures are what `herold serve` gets (HEROLD_WORKER_CONCURRENCY, HEROLD_DATABASE_POOL_SIZE) */
const SERVER_DEFAULTS = loadConfig(process.env)
const WORKERS = SERVER_DEFAULTS.workerConcurrency
/** the database connections of the process: the server's own setting (HEROLD_DATABASE_POOL_SIZE, default 20) */
const POOL = SERVER_DEFAULTS.databasePoolSize

/**
 * Round trips to PostgreSQL while the workers run (every query of every pooled connection, BEGIN and COMMIT included;
 * the benchmark's own counts are left out), to print statements per send. BENCH_STATEMENTS=1 also lists the costliest.
 */
let statements = 0
let counting = false
const byText = new Map<string, { n: number; ms: number }>()
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  const result = query.apply(this, args)
  if (counting) {
    statements++
    if (process.env.BENCH_STATEMENTS && result instanceof Promise) {
      const first = args[0] as string | { text?: string }
      const text = (typeof first === 'string' ? first : (first?.text ?? '')).replace(/\s+/g, ' ').trim().slice(0, 90)
      const started = performance.now()
      const entry = byText.get(text) ?? { n: 0, ms: 0 }
      byText.set(text, entry)
      entry.n++
      result.finally(() => (entry.ms += performance.now() - started)).catch(() => {})
    }
  }
  return result
} as typeof pg.Client.prototype.query

const base = process.env.DATABASE_URL || undefined
const fresh = base ? await createScratchDatabase(base, 'herold_bench_fu') : null
const databaseUrl = fresh?.url
const database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: POOL })
try {
  await migrate(database)
  const config = loadConfig(
    {},
    {
      databaseUrl,
      publicUrl: 'http://bench.herold',
      workerConcurrency: WORKERS,
      secretKey: randomBytes(32).toString('base64'),
    },
  )
  const deps = { config, database, clock: systemClock }
  const services = buildServices(deps)
  const plan = `bench-${Date.now()}`
  await setPlan(database.orm, {
    name: plan,
    contactsLimit: CONTACTS + 10,
    messagesPerMonth: CONTACTS + 10,
    webhooksLimit: 1,
  })
  const account = await getAccount(database.orm, (await createAccount(database.orm, { name: 'bench', plan })).id)
  await services.channels.connect(account.id, { channel: 'chat', provider: 'sandbox', messagesPerSecond: PACE })
  // every contact confirmed (created) 59 minutes before T0: with a 1-hour delay, every step is due at T0 + 1 minute
  const t0 = new Date()
  const seeded = performance.now()
  await database.query(
    `INSERT INTO contacts (account_id, id, name, phone, optin_chat, source, created_at)
     SELECT $1::uuid, gen_random_uuid(), 'Kunde ' || i, '+49173' || lpad(i::text, 8, '0'), 'confirmed', 'bench',
       $3::timestamptz - interval '59 minutes'
     FROM generate_series(1, $2::int) AS i`,
    [account.id, CONTACTS, t0.toISOString()],
  )
  await database.query('ANALYZE contacts')
  console.error(
    `seeded ${CONTACTS.toLocaleString('en')} confirmed contacts in ${((performance.now() - seeded) / 1000).toFixed(1)} s`,
  )
  const tenant = { accountId: account.id, account }
  // the activation sees T0 however long it takes, so every step time counts as ahead
  const followups = createFollowupsService({ ...deps, clock: { now: () => new Date(t0) } }, services)
  const sequence = await followups.create(tenant, {
    name: 'bench',
    steps: [{ text: 'Hallo {{name}}, wie gefällt dir deine Bestellung?', delay: { amount: 1, unit: 'hours' } }],
  })
  const activationStarted = performance.now()
  const active = await followups.update(tenant, sequence.id, { status: 'active' })
  const activationSeconds = (performance.now() - activationStarted) / 1000
  await database.query('ANALYZE followup_enrollments, jobs')
  const scheduled = active.steps[0].counts.scheduled
  const dueAt = new Date(t0.getTime() + 60_000)
  const wait = dueAt.getTime() - Date.now()
  if (wait > 0) await new Promise((r) => setTimeout(r, wait))

  const count = async (statuses: string[]) => {
    if (counting) statements--
    const [row] = await database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM template_sends WHERE account_id = $1 AND status = ANY($2::text[])`,
      [account.id, `{${statuses.join(',')}}`],
    )
    return Number(row.n)
  }
  const workers = jobRunnerFor(deps, moduleJobs(mountedModules, services), (message, error) =>
    console.error(message, error),
  )
  const stop = await workers.start()
  const started = performance.now()
  counting = true
  await new Promise((r) => setTimeout(r, SEND_SECONDS * 1000))
  counting = false
  const sent = await count(['sent', 'delivered', 'read'])
  const queued = await count(['queued', 'sending', 'sent', 'delivered', 'read', 'skipped', 'failed'])
  const seconds = (performance.now() - started) / 1000
  await stop()
  console.log(
    `follow-up step due for ${CONTACTS.toLocaleString('en')} contacts at once (${database.kind}, ${WORKERS} workers)`,
  )
  console.log(
    `  activation: ${scheduled.toLocaleString('en')} enrollments and step jobs in ${activationSeconds.toFixed(1)} s = ${Math.round(scheduled / Math.max(activationSeconds, 0.001)).toLocaleString('en')}/s`,
  )
  console.log(
    `  due steps turned into send records: ${queued.toLocaleString('en')} in ${seconds.toFixed(1)} s = ${(queued / seconds).toFixed(0)}/s`,
  )
  console.log(
    `  sends: ${sent.toLocaleString('en')} in ${seconds.toFixed(1)} s = ${(sent / seconds).toFixed(0)}/s | pace ${PACE}/s | ratio ${(sent / seconds / PACE).toFixed(2)} (goal ≥ 0.9 on PostgreSQL)`,
  )
  if (database.kind === 'postgres') {
    console.log(
      `  statements while the workers ran: ${statements.toLocaleString('en')} = ${(statements / Math.max(sent, 1)).toFixed(2)} per sent message`,
    )
    const top = [...byText].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25)
    for (const [text, { n, ms }] of top) {
      console.log(`    ${(n / Math.max(sent, 1)).toFixed(3)}/send ${(ms / n).toFixed(1)} ms each  ${text}`)
    }
  }
  await services.close()
} finally {
  await database.close()
  await fresh?.drop()
}
