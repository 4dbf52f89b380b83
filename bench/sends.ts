/**
 * Template sends benchmark: queues BENCH_SENDS template sends (default 100,000) to BENCH_CONTACTS confirmed contacts
 * and lets the real job runner send them through the sandbox chat provider, paced per number at BENCH_PACE messages
 * per second (the number's configured rate, default 1,000, WhatsApp's highest tier; the default of a connection is 80).
 *
 *   node bench/sends.ts                         embedded PGlite (in memory)
 *   DATABASE_URL=postgres://... node bench/sends.ts   (runs in a fresh database created beside it, dropped after)
 *   BENCH_SENDS=5000 BENCH_PACE=200 node bench/sends.ts
 *   BENCH_SEND_SECONDS=120 node bench/sends.ts    100,000 queued, the rate measured over the first two minutes
 *
 * Queueing: the first BENCH_ROUTE_SENDS (default 1,000) go through the service of POST /messages (every check, one
 * send record and one job per call); the rest are written in batches of 1,000 with the same two writes the route makes
 * (messaging.repository insertSends and platform enqueue, one transaction per batch), skipping the per-request checks.
 * Sending: the process's job runner (HEROLD_WORKER_CONCURRENCY, here default 256; the server's default is 32) works the
 * queue in batches of up to half of that: a batch is re-checked in one query, its quota units reserved in one
 * statement, each send paced and handed to the sandbox (which stores the batch and queues one delivered and one read
 * job for it), the batch stored in the inbox and its results recorded in one statement. On PostgreSQL the round trips
 * while sending are counted (BENCH_STATEMENTS=1 lists the most costly statements). The figure is sends per second against the configured pace: the ratio says
 * how much of the number's allowed throughput Herold's own work leaves.
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { sql } from 'drizzle-orm'
import pg from 'pg'
import { loadConfig } from '../src/config.ts'
import { recordOptinChange } from '../src/modules/contacts/index.ts'
import { insertSends } from '../src/modules/messaging/messaging.repository.ts'
import { TEMPLATE_SEND_QUEUE } from '../src/modules/messaging/messaging.sends.ts'
import { createAccount, getAccount, setPlan } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { enqueue } from '../src/platform/jobs/jobs.ts'
import { jobRunnerFor } from '../src/platform/jobs/runner.ts'
import { buildServices, moduleJobs, mountedModules } from '../src/services.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'

const SENDS = Number(process.env.BENCH_SENDS ?? 100_000)
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000)
const PACE = Number(process.env.BENCH_PACE ?? 1_000)
const ROUTE_SENDS = Math.min(SENDS, Number(process.env.BENCH_ROUTE_SENDS ?? 1_000))
/** the server's own settings, so the figures are what `herold serve` gets (HEROLD_WORKER_CONCURRENCY, HEROLD_DATABASE_POOL_SIZE) */
const SERVER_DEFAULTS = loadConfig(process.env)
const WORKERS = SERVER_DEFAULTS.workerConcurrency
/** the database connections of the process: the server's own setting (HEROLD_DATABASE_POOL_SIZE, default 20) */
const POOL = SERVER_DEFAULTS.databasePoolSize
const BATCH = 1_000
const t0 = performance.now()
const phase = (what: string) => console.error(`[${((performance.now() - t0) / 1000).toFixed(1)} s] ${what}`)
/** stop measuring after this many seconds (the rate is taken over the sends finished so far); default: until done */
const SEND_SECONDS = Number(process.env.BENCH_SEND_SECONDS ?? Number.POSITIVE_INFINITY)

/**
 * Round trips to PostgreSQL while the workers send (every query of every pooled connection, BEGIN and COMMIT
 * included; the benchmark's own progress counts are left out), to print statements per send. PGlite runs the same
 * code, so the count holds for it too.
 */
let statements = 0
let counting = false
/** BENCH_STATEMENTS=1: also print the most frequent statements (their first 90 characters) and their time */
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

/** CPU milliseconds of each given process (Linux /proc, this machine; a PostgreSQL elsewhere counts nothing). */
function cpuOf(pids: number[]): Map<number, number> {
  const cpu = new Map<number, number>()
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      cpu.set(pid, (Number(fields[11]) + Number(fields[12])) * 10)
    } catch {}
  }
  return cpu
}

/** On PostgreSQL a fresh database beside the given one, so no earlier run's jobs take part; dropped at the end. */
async function freshDatabase(base: string | undefined): Promise<{ url: string | undefined; drop(): Promise<void> }> {
  if (!base) return { url: undefined, drop: async () => {} }
  return createScratchDatabase(base, 'herold_bench_sends')
}

async function main() {
  const fresh = await freshDatabase(process.env.DATABASE_URL || undefined)
  const databaseUrl = fresh.url
  const database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: POOL })
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
  const db = database.orm
  const plan = `bench-${Date.now()}`
  await setPlan(db, { name: plan, contactsLimit: CONTACTS + 10, messagesPerMonth: SENDS + 10, webhooksLimit: 1 })
  const created = await createAccount(db, { name: 'bench', plan })
  const account = await getAccount(db, created.id)
  const tenant = { accountId: account.id, account }
  await services.channels.connect(account.id, { channel: 'chat', provider: 'sandbox', messagesPerSecond: PACE })

  const templates = services.templates
  const template = await templates.create(tenant, {
    name: 'Bench offer',
    content: 'Hallo {{name}}, dein Gutschein {{code}} gilt bis Sonntag: https://shop.example.com/angebot',
    language: 'de',
  })
  await templates.submit(tenant, template.id)

  const contactIds: string[] = []
  for (let start = 0; start < CONTACTS; start += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, CONTACTS - start) }, (_, i) => ({
      id: randomUUID(),
      phone: `+4915${String(100_000_000 + start + i)}`,
      name: `Kunde ${start + i}`,
    }))
    await db.execute(sql`INSERT INTO contacts (account_id, id, name, phone, language, source, created_at)
      SELECT ${account.id}::uuid, r.id::uuid, r.name, r.phone, 'de', 'bench', now()
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(id text, name text, phone text)`)
    for (const row of rows) {
      await db.transaction((tx) =>
        recordOptinChange(tx, systemClock, {
          accountId: account.id,
          contactId: row.id,
          channel: 'chat',
          to: 'confirmed',
          source: 'bench',
        }),
      )
      contactIds.push(row.id)
    }
  }

  phase(`${CONTACTS} confirmed contacts written`)
  // queueing through the service of POST /messages
  const sends = services.templateSends
  const routeStarted = performance.now()
  for (let i = 0; i < ROUTE_SENDS; i++) {
    await sends.queue(tenant, {
      contact_id: contactIds[i % contactIds.length],
      template: { id: template.id, variables: { code: `G-${i}` } },
    })
  }
  const routeSeconds = (performance.now() - routeStarted) / 1000

  phase(`${ROUTE_SENDS} queued through the service`)
  // the rest: the route's two writes, 1,000 per transaction
  const bulkStarted = performance.now()
  for (let start = ROUTE_SENDS; start < SENDS; start += BATCH) {
    const now = systemClock.now()
    const rows = Array.from({ length: Math.min(BATCH, SENDS - start) }, (_, i) => ({
      accountId: account.id,
      id: randomUUID(),
      contactId: contactIds[(start + i) % contactIds.length],
      templateId: template.id,
      variables: { code: `G-${start + i}` },
      status: 'queued' as const,
      createdAt: now,
      updatedAt: now,
    }))
    await db.transaction(async (tx) => {
      await insertSends(tx, rows)
      await enqueue(
        tx,
        systemClock,
        rows.map((row) => ({ accountId: account.id, queue: TEMPLATE_SEND_QUEUE, payload: { send_id: row.id } })),
      )
    })
  }
  const bulkSeconds = (performance.now() - bulkStarted) / 1000

  phase(`${SENDS - ROUTE_SENDS} queued in batches`)
  // fresh statistics for the planner after the bulk load (PostgreSQL's autovacuum would do it; PGlite has none)
  await db.execute(sql`ANALYZE`)
  const remaining = async () => {
    if (counting) statements--
    const [row] = await database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM template_sends WHERE account_id = $1 AND status IN ('queued', 'sending')`,
      [account.id],
    )
    return Number(row.n)
  }
  // the database's CPU while sending: its backends serving this database (one per pooled connection)
  const backends = async () =>
    (
      await database.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
      )
    ).map((r) => Number(r.pid))
  const backendsBefore = database.kind === 'postgres' ? cpuOf(await backends()) : new Map<number, number>()
  const workers = jobRunnerFor(deps, moduleJobs(mountedModules, services), (message, error) =>
    console.error(message, error),
  )
  const cpuBefore = process.cpuUsage()
  // the server's own thread (HTTP, the job runner; PGlite too unless HEROLD_EMBEDDED_THREAD=1 puts it on its own)
  const threadCpuBefore = process.threadCpuUsage()
  const started = performance.now()
  counting = true
  const stop = await workers.start()
  // on PGlite (one connection) a count waits behind the workers' queries, so there the time limit is a timer alone;
  // on PostgreSQL the queue is polled within the limit too, so a run that empties the queue early is not undercounted
  const deadline = started + SEND_SECONDS * 1000
  if (SEND_SECONDS === Number.POSITIVE_INFINITY || database.kind === 'postgres') {
    while (performance.now() < deadline && (await remaining()) > 0) {
      await new Promise((r) => setTimeout(r, Math.max(0, Math.min(250, deadline - performance.now()))))
    }
  } else await new Promise((r) => setTimeout(r, SEND_SECONDS * 1000))
  await stop()
  counting = false
  const nodeCpuMs = (({ user, system }) => (user + system) / 1000)(process.cpuUsage(cpuBefore))
  const threadCpuMs = (({ user, system }) => (user + system) / 1000)(process.threadCpuUsage(threadCpuBefore))
  const backendsAfter = database.kind === 'postgres' ? cpuOf(await backends()) : new Map<number, number>()
  const databaseCpuMs = [...backendsAfter].reduce((sum, [pid, ms]) => sum + ms - (backendsBefore.get(pid) ?? 0), 0)
  // taken after stop: the sends the running jobs finished during the stop are counted too
  const seconds = (performance.now() - started) / 1000
  const left = await remaining()
  phase(`${left} left`)

  const outcome = await database.query<{ status: string; n: number }>(
    'SELECT status, count(*)::int AS n FROM template_sends WHERE account_id = $1 GROUP BY status ORDER BY status',
    [account.id],
  )
  const sent = outcome.filter((o) => ['sent', 'delivered', 'read'].includes(o.status)).reduce((a, o) => a + o.n, 0)
  const rate = sent / seconds
  console.log(`template sends (${database.kind}, ${SENDS} sends to ${CONTACTS} contacts, ${WORKERS} workers)`)
  console.log(
    `  queued through the POST /messages service: ${ROUTE_SENDS} in ${routeSeconds.toFixed(1)} s = ${(ROUTE_SENDS / routeSeconds).toFixed(0)}/s`,
  )
  console.log(
    `  queued in batches of ${BATCH} (the route's writes): ${SENDS - ROUTE_SENDS} in ${bulkSeconds.toFixed(1)} s = ${((SENDS - ROUTE_SENDS) / Math.max(bulkSeconds, 0.001)).toFixed(0)}/s`,
  )
  console.log(`  outcome: ${outcome.map((o) => `${o.status} ${o.n}`).join(', ')}`)
  console.log(
    `  sent through the sandbox: ${sent} in ${seconds.toFixed(1)} s = ${rate.toFixed(0)} sends/s${left > 0 ? ` (stopped after BENCH_SEND_SECONDS, ${left} still queued)` : ''}`,
  )
  const perSend = (ms: number) => (ms / Math.max(sent, 1)).toFixed(2)
  console.log(
    `  CPU per sent message: this process ${perSend(nodeCpuMs)} ms (its main thread ${perSend(threadCpuMs)} ms)${database.kind === 'postgres' ? `, the database's backends ${perSend(databaseCpuMs)} ms` : ''} (the machine has ${availableParallelism()} cores)`,
  )
  if (database.kind === 'postgres') {
    console.log(
      `  statements while sending: ${statements} = ${(statements / Math.max(sent, 1)).toFixed(1)} per sent message`,
    )
    // row versions written by updates, and how many of them stayed on their page without new index entries (HOT)
    const updates = await database.query<{ relname: string; upd: number; hot: number; ins: number; del: number }>(
      `SELECT relname, n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot, n_tup_ins::int AS ins, n_tup_del::int AS del
       FROM pg_stat_user_tables WHERE n_tup_upd + n_tup_ins > 0 ORDER BY n_tup_upd + n_tup_ins + n_tup_del DESC LIMIT 8`,
    )
    for (const t of updates) {
      console.log(
        `    ${t.relname}: ${(t.ins / Math.max(sent, 1)).toFixed(2)} inserts, ${(t.upd / Math.max(sent, 1)).toFixed(2)} updates (${t.hot} HOT of ${t.upd}), ${(t.del / Math.max(sent, 1)).toFixed(2)} deletes per sent message (whole run)`,
      )
    }
    const top = [...byText].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25)
    for (const [text, { n, ms }] of top) {
      console.log(`    ${(n / Math.max(sent, 1)).toFixed(3)}/send ${(ms / n).toFixed(1)} ms each  ${text}`)
    }
  }
  console.log(`  configured pace of the number: ${PACE}/s`)
  console.log(`  ratio sends/s : pace = ${(rate / PACE).toFixed(2)}`)
  await services.close()
  await database.close()
  await fresh.drop()
}

await main()
