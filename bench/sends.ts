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
import { insertSends } from '../src/modules/messaging/messaging.repository.ts'
import { systemClock } from '../src/platform/clock.ts'
import { type Database, openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { jobRunnerFor } from '../src/platform/jobs/runner.ts'
import { buildServices, moduleJobs, mountedModules } from '../src/services.ts'
import { busiestSecond } from '../test/helpers/jobs.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'
import { queueSends, type Sender, seedSender } from './lib/sender.ts'

const SENDS = Number(process.env.BENCH_SENDS ?? 100_000)
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000)
const PACE = Number(process.env.BENCH_PACE ?? 1_000)
/** BENCH_REFUSE_ABOVE=N: the sandbox refuses above N a second (130429), so the adaptive pace is seen at work */
const REFUSE_ABOVE = process.env.BENCH_REFUSE_ABOVE ? Number(process.env.BENCH_REFUSE_ABOVE) : undefined
const ROUTE_SENDS = Math.min(SENDS, Number(process.env.BENCH_ROUTE_SENDS ?? 1_000))
/** the server's own settings, so the figures are what `herold serve` gets (HEROLD_WORKER_CONCURRENCY, HEROLD_DATABASE_POOL_SIZE) */
const SERVER_DEFAULTS = loadConfig(process.env)
const WORKERS = SERVER_DEFAULTS.workerConcurrency
/** the database connections of the process: the server's own setting (HEROLD_DATABASE_POOL_SIZE, default 20) */
const POOL = SERVER_DEFAULTS.databasePoolSize
const BATCH = 1_000
/** how many sends the minimal-writes baseline makes (at most as many as Herold sent) */
const MINIMAL_SENDS = Number(process.env.BENCH_MINIMAL_SENDS ?? 20_000)
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

/**
 * The same-run baseline: the least a send needs, batched as Herold batches it. For `count` sends written queued
 * beforehand (not measured), per batch of half the workers one transaction with one statement moving the batch's
 * sends to `sent` and one inserting their outbound messages (into each contact's conversation); the CPU of this
 * process and of the database's backends, and the statements, a send.
 */
async function minimalWrites(database: Database, sender: Sender, count: number, backends: () => Promise<number[]>) {
  const now = systemClock.now()
  const ids: string[] = []
  for (let start = 0; start < count; start += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, count - start) }, (_, i) => ({
      accountId: sender.accountId,
      id: randomUUID(),
      contactId: sender.contactIds[(start + i) % sender.contactIds.length],
      templateId: sender.templateId,
      variables: { code: `M-${start + i}` },
      status: 'queued' as const,
      createdAt: now,
      updatedAt: now,
    }))
    await database.orm.transaction((tx) => insertSends(tx, rows))
    ids.push(...rows.map((row) => row.id))
  }
  const batch = Math.max(1, Math.ceil(WORKERS / 2))
  const before = database.kind === 'postgres' ? cpuOf(await backends()) : new Map<number, number>()
  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  let statementsBefore = statements
  counting = true
  for (let start = 0; start < ids.length; start += batch) {
    const list = `{${ids.slice(start, start + batch).join(',')}}`
    await database.orm.transaction(async (tx) => {
      await tx.execute(sql`UPDATE template_sends SET status = 'sent', sent_at = now(), updated_at = now(),
          message_id = gen_random_uuid(), provider_message_id = 'wamid.' || id
        WHERE account_id = ${sender.accountId} AND id = ANY(${list}::uuid[])`)
      await tx.execute(sql`INSERT INTO messages (account_id, id, conversation_id, contact_id, channel, direction, type,
          text, provider_message_id, status, created_at)
        SELECT s.account_id, s.message_id, coalesce(c.id, gen_random_uuid()), s.contact_id, 'chat', 'outbound',
          'template', 'Hallo, dein Gutschein gilt bis Sonntag', s.provider_message_id, 'sent', clock_timestamp()
        FROM template_sends s
        LEFT JOIN conversations c ON c.account_id = s.account_id AND c.contact_id = s.contact_id AND c.channel = 'chat'
        WHERE s.account_id = ${sender.accountId} AND s.id = ANY(${list}::uuid[])`)
    })
  }
  counting = false
  statementsBefore = statements - statementsBefore
  const seconds = (performance.now() - started) / 1000
  const nodeMs = (({ user, system }) => (user + system) / 1000)(process.cpuUsage(cpuBefore))
  const after = database.kind === 'postgres' ? cpuOf(await backends()) : new Map<number, number>()
  const databaseMs = [...after].reduce((sum, [pid, ms]) => sum + ms - (before.get(pid) ?? 0), 0)
  const [written] = await database.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM messages m JOIN template_sends s ON s.account_id = m.account_id AND s.message_id = m.id
     WHERE s.account_id = $1 AND s.id = ANY($2::uuid[])`,
    [sender.accountId, `{${ids.join(',')}}`],
  )
  if (Number(written.n) !== count) console.log(`  (the baseline wrote ${written.n} messages for ${count} sends!)`)
  const per = (ms: number) => (ms / count).toFixed(3)
  console.log(
    `  baseline, the minimal writes (${count} sends, batches of ${batch}: one status update and one message insert a batch): ${(count / seconds).toFixed(0)}/s, CPU a send: this process ${per(nodeMs)} ms${database.kind === 'postgres' ? `, the database's backends ${per(databaseMs)} ms, ${(statementsBefore / count).toFixed(2)} statements` : ''}`,
  )
  return { nodeMs: nodeMs / count, databaseMs: databaseMs / count }
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
  const sender = await seedSender(db, services, {
    contacts: CONTACTS,
    pace: PACE,
    ...(REFUSE_ABOVE === undefined ? {} : { refuseAbove: REFUSE_ABOVE }),
    messagesPerMonth: SENDS + 10,
    name: 'Bench offer',
    content: 'Hallo {{name}}, dein Gutschein {{code}} gilt bis Sonntag: https://shop.example.com/angebot',
  })
  const { account, contactIds } = sender
  const tenant = { accountId: account.id, account }
  const template = { id: sender.templateId }
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
  await queueSends(db, sender, SENDS - ROUTE_SENDS, (i) => ({ code: `G-${i}` }), BATCH, ROUTE_SENDS)
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
    (await database.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()')).map(
      (r) => Number(r.pid),
    )
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
  // the number's busiest 1-second window of sends, by when each provider call began (sent_at): at most the pace
  const sentAt = await database.query<{ at: number }>(
    `SELECT (extract(epoch FROM sent_at) * 1000)::float8 AS at FROM template_sends
     WHERE account_id = $1 AND sent_at IS NOT NULL ORDER BY sent_at`,
    [account.id],
  )
  const busiest = busiestSecond(sentAt.map((r) => Number(r.at)))
  console.log(`  busiest 1-second window of sent_at: ${busiest} sends = ${(busiest / PACE).toFixed(2)} × the pace`)
  if (REFUSE_ABOVE !== undefined) {
    const [refused] = await database.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM template_sends WHERE account_id = $1 AND error_code = '130429'",
      [account.id],
    )
    const [pace] = await database.query<{ per_second: number; reduced_reason: string | null }>(
      "SELECT per_second, reduced_reason FROM job_paces WHERE account_id = $1 AND lane = 'chat'",
      [account.id],
    )
    console.log(
      `  the sandbox refusing above ${REFUSE_ABOVE}/s: ${refused?.n ?? 0} sends refused once or more (130429) and sent on a retry; the pace at the end ${pace?.per_second}/s of ${PACE}${pace?.reduced_reason ? ` (${pace.reduced_reason})` : ''}`,
    )
  }
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
  const base = await minimalWrites(database, sender, Math.min(Math.max(sent, 1), MINIMAL_SENDS), backends)
  const herold = (nodeCpuMs + databaseCpuMs) / Math.max(sent, 1)
  console.log(
    `  CPU a send, Herold and its database together: ${herold.toFixed(2)} ms against the minimal writes' ${(base.nodeMs + base.databaseMs).toFixed(2)} ms = ${(herold / Math.max(0.001, base.nodeMs + base.databaseMs)).toFixed(1)} ×`,
  )
  console.log(`  configured pace of the number: ${PACE}/s`)
  console.log(`  ratio sends/s : pace = ${(rate / PACE).toFixed(2)}`)
  await services.close()
  await database.close()
  await fresh.drop()
}

await main()
