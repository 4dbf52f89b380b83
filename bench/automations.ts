/**
 * Automations benchmark: BENCH_CONTACTS contacts (default 10,000) imported with `herold import contacts`'s service into
 * an account whose active automation is triggered by contact.created and runs two steps: add a tag, send an approved
 * template (queued through the send pipeline). The job runner of this process works the runs.
 *
 *   node bench/automations.ts                                 embedded PGlite (in memory)
 *   DATABASE_URL=postgres://... node bench/automations.ts     (a fresh database beside it, dropped after)
 *
 * Figures: the import's time with the automation against the same import into an account without one (what starting
 * the runs costs the import, same run); runs completed per second against the runner's rate for as many no-op jobs
 * (what the parts allow: claim, run, complete), and the time from the import's commit to the last run's first step;
 * on PostgreSQL also the statements the runs cost (BEGIN and COMMIT included), per run.
 */
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { loadConfig } from '../src/config.ts'
import { automationsModule } from '../src/modules/automations/index.ts'
import { importContacts } from '../src/modules/contacts/index.ts'
import { createAccount, getAccount, setPlan } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { enqueue } from '../src/platform/jobs/jobs.ts'
import { JobRunner } from '../src/platform/jobs/runner.ts'
import { buildServices } from '../src/services.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 10_000)
/** the server's own settings, so the figures are what `herold serve` gets (HEROLD_WORKER_CONCURRENCY, HEROLD_DATABASE_POOL_SIZE) */
const SERVER_DEFAULTS = loadConfig(process.env)
const WORKERS = SERVER_DEFAULTS.workerConcurrency
/** the database connections of the process: the server's own setting (HEROLD_DATABASE_POOL_SIZE, default 20) */
const POOL = SERVER_DEFAULTS.databasePoolSize

/** statements sent to PostgreSQL by this process */
let statements = 0
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements++
  return query.apply(this, args)
} as typeof pg.Client.prototype.query

function csv(prefix: string): string {
  const file = path.join(tmpdir(), `herold-bench-automations-${prefix}-${process.pid}.csv`)
  const lines = ['name,email,phone,tags']
  for (let i = 0; i < CONTACTS; i++)
    lines.push(`Kunde ${i},${prefix}${i}@example.com,+4916${prefix === 'a' ? 1 : 2}${String(10_000_000 + i)},`)
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}

async function main() {
  const base = process.env.DATABASE_URL || undefined
  const fresh = base ? await createScratchDatabase(base, 'herold_bench_auto') : null
  const database = await openDatabase({ databaseUrl: fresh?.url, dataDir: 'memory://', poolSize: POOL })
  await migrate(database)
  const config = loadConfig(
    {},
    {
      databaseUrl: fresh?.url,
      publicUrl: 'http://bench.herold',
      workerConcurrency: WORKERS,
      secretKey: randomBytes(32).toString('base64'),
    },
  )
  const deps = { config, database, clock: systemClock }
  const services = buildServices(deps)
  const db = database.orm
  const plan = `bench-${Date.now()}`
  await setPlan(db, { name: plan, contactsLimit: CONTACTS * 2, messagesPerMonth: CONTACTS * 2, webhooksLimit: 1 })

  // baseline 1: the same import into an account without automations
  const plain = await createAccount(db, { name: 'plain', plan })
  const plainReport = await importContacts(db, systemClock, { accountId: plain.id, file: csv('b') })

  const created = await createAccount(db, { name: 'bench', plan })
  const account = await getAccount(db, created.id)
  const tenant = { accountId: account.id, account }
  await services.channels.connect(account.id, { channel: 'chat', provider: 'sandbox', messagesPerSecond: 1000 })
  const templates = services.templates
  const template = await templates.create(tenant, {
    name: 'Bench welcome',
    content: 'Hallo {{name}}, willkommen bei uns. Schön, dass du da bist!',
    language: 'de',
  })
  await templates.submit(tenant, template.id)
  const automations = services.automations
  const automation = await automations.create(tenant, {
    name: 'Welcome',
    intent: 'transactional',
    trigger: { type: 'contact_created' },
    steps: [
      { type: 'add_tag', tag: 'willkommen' },
      { type: 'send_template', template_id: template.id },
    ],
  })
  await automations.activate(tenant, automation.id)

  const report = await importContacts(db, systemClock, { accountId: account.id, file: csv('a') })
  const committed = Date.now()

  // the runs, by this process's runner (only the automations queue, so the template sends wait: they are the send
  // pipeline's own benchmark)
  const automationJobs = automationsModule.jobs!(deps, services)
  const runner = new JobRunner({
    database,
    clock: systemClock,
    handlers: automationJobs.handlers,
    concurrency: WORKERS,
    leaseMs: 30_000,
  })
  const started = performance.now()
  const statementsBefore = statements
  await runner.start()
  await runner.drain()
  const runSeconds = (performance.now() - started) / 1000
  const runStatements = statements - statementsBefore
  await runner.stop()
  const [{ completed, last_first_step }] = await database.query<{ completed: number; last_first_step: string }>(
    `SELECT count(*)::int AS completed, max((log->0->>'at')::timestamptz) AS last_first_step
     FROM automation_runs WHERE account_id = $1 AND state = 'completed'`,
    [account.id],
  )

  // baseline 2: the same runner working as many no-op jobs
  const noop = new JobRunner({
    database,
    clock: systemClock,
    handlers: { 'bench.noop': { run: async () => {} } },
    concurrency: WORKERS,
    leaseMs: 30_000,
  })
  for (let i = 0; i < CONTACTS; i += 5_000) {
    await db.transaction((tx) =>
      enqueue(
        tx,
        systemClock,
        Array.from({ length: Math.min(5_000, CONTACTS - i) }, () => ({
          accountId: account.id,
          queue: 'bench.noop',
          payload: {},
        })),
      ),
    )
  }
  const noopStarted = performance.now()
  await noop.start()
  await noop.drain()
  const noopSeconds = (performance.now() - noopStarted) / 1000
  await noop.stop()

  const runsPerSecond = completed / runSeconds
  const noopPerSecond = CONTACTS / noopSeconds
  const kind = base ? 'PostgreSQL' : 'PGlite'
  console.log(`automations benchmark (${kind}, ${CONTACTS} contacts, ${WORKERS} workers)`)
  console.log(
    `  import without automation   ${plainReport.seconds.toFixed(2)} s (${plainReport.rows_per_second.toFixed(0)} rows/s)`,
  )
  console.log(
    `  import with automation      ${report.seconds.toFixed(2)} s (${report.rows_per_second.toFixed(0)} rows/s), ratio ${(plainReport.seconds / report.seconds).toFixed(2)}`,
  )
  console.log(
    `  runs completed              ${completed} in ${runSeconds.toFixed(2)} s: ${runsPerSecond.toFixed(0)} runs/s${base ? `, ${(runStatements / completed).toFixed(2)} statements a run` : ''}`,
  )
  console.log(
    `  no-op jobs (baseline)       ${CONTACTS} in ${noopSeconds.toFixed(2)} s: ${noopPerSecond.toFixed(0)} jobs/s, ratio ${(runsPerSecond / noopPerSecond).toFixed(2)}`,
  )
  console.log(
    `  import commit -> last run's first step  ${((new Date(last_first_step).getTime() - committed) / 1000).toFixed(2)} s`,
  )
  await services.close()
  await database.close()
  await fresh?.drop()
}

await main()
