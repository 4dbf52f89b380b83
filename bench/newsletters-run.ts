// The benchmark itself; bench/newsletters.ts starts it with the server's memory settings.
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { loadConfig } from '../src/config.ts'
import { createAccount, getAccount, setPlan } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { jobRunnerFor } from '../src/platform/jobs/runner.ts'
import { buildServices, moduleJobs, mountedModules } from '../src/services.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'

interface DatabaseIo {
  blocksHit: number
  blocksRead: number
  walRecords: number
  walFpi: number
  walBytes: number
}

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000)
const PACE = Number(process.env.BENCH_PACE ?? 1_000)
const SEND_SECONDS = Number(process.env.BENCH_SEND_SECONDS ?? 60)
/** the server's own settings, so the figures are what `herold serve` gets (HEROLD_WORKER_CONCURRENCY, HEROLD_DATABASE_POOL_SIZE) */
const SERVER_DEFAULTS = loadConfig(process.env)
const WORKERS = SERVER_DEFAULTS.workerConcurrency
/** the database connections of the process: the server's own setting (HEROLD_DATABASE_POOL_SIZE, default 20) */
const POOL = SERVER_DEFAULTS.databasePoolSize
const CTA = process.env.BENCH_CTA !== '0'
const mb = (bytes: number) => `${Math.round(bytes / 1e6)} MB`
/** the kernel's peak resident set of this process so far (VmHWM), in bytes; null where /proc is missing */
const highWater = async () => {
  const status = await readFile('/proc/self/status', 'utf8').catch(() => '')
  const kb = /VmHWM:\s+(\d+) kB/.exec(status)?.[1]
  return kb ? Number(kb) * 1024 : null
}
const memory = () => {
  const m = process.memoryUsage()
  return `RSS ${mb(m.rss)}, V8 heap ${mb(m.heapUsed)} of ${mb(m.heapTotal)}, external ${mb(m.external)}`
}

const base = process.env.DATABASE_URL || undefined
const fresh = base ? await createScratchDatabase(base, 'herold_bench_nl') : null
const databaseUrl = fresh?.url
const database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: POOL })
try {
  await migrate(database)
  const config = loadConfig(
    {},
    {
      databaseUrl,
      publicUrl: 'https://bench.herold.example',
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
  const atRest = process.memoryUsage().rss
  console.error(`at rest (modules loaded, ${database.kind}, pool open): ${memory()}`)
  const seeded = performance.now()
  // the trigram search index is built once after the rows rather than entry by entry
  const [search] = await database.query<{ indexdef: string }>(
    `SELECT indexdef FROM pg_indexes WHERE tablename = 'contacts' AND indexname = 'contacts_search_trgm_idx'`,
  )
  if (search) await database.query('DROP INDEX contacts_search_trgm_idx')
  for (let from = 1; from <= CONTACTS; from += 250_000) {
    await database.query(
      `INSERT INTO contacts (account_id, id, name, phone, optin_chat, source, created_at)
       SELECT $1::uuid, gen_random_uuid(), 'Kunde ' || i, '+49172' || lpad(i::text, 8, '0'), 'confirmed', 'bench', now()
       FROM generate_series($2::int, $3::int) AS i`,
      [account.id, from, Math.min(CONTACTS, from + 250_000 - 1)],
    )
  }
  if (search) {
    if (database.kind === 'postgres') await database.query(`SET maintenance_work_mem = '256MB'`)
    await database.query(search.indexdef)
  }
  await database.query('ANALYZE contacts')
  console.error(
    `seeded ${CONTACTS.toLocaleString('en')} confirmed contacts in ${((performance.now() - seeded) / 1000).toFixed(1)} s`,
  )

  const newsletters = services.newsletters
  const tenant = { accountId: account.id, account }
  const draft = await newsletters.create(tenant, {
    subject: 'Sommerfest',
    content: 'Hallo {{name}}, wir feiern am Samstag.',
  })
  if (CTA)
    await newsletters.update(tenant, draft.id, { cta: { text: 'Anmelden', url: 'https://fest.example/anmelden' } })
  await newsletters.schedule(tenant, draft.id, { scheduled_at: new Date(Date.now() + 1000).toISOString() })

  let peak = process.memoryUsage().rss
  let heapPeak = process.memoryUsage().heapUsed
  const before = peak
  console.error(`before the fan-out: ${memory()}`)
  const sampler = setInterval(() => {
    const m = process.memoryUsage()
    peak = Math.max(peak, m.rss)
    heapPeak = Math.max(heapPeak, m.heapUsed)
  }, 50)
  const count = async (statuses: string[]) => {
    const [row] = await database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM template_sends WHERE account_id = $1 AND status = ANY($2::text[])`,
      [account.id, `{${statuses.join(',')}}`],
    )
    return Number(row.n)
  }
  const log = (message: string, error?: unknown) => console.error(message, error)
  /** the database's buffer and WAL counters (PostgreSQL only): what a send costs it beyond CPU */
  const databaseIo = async (): Promise<DatabaseIo | null> => {
    if (database.kind !== 'postgres') return null
    const [row] = await database.query<Record<keyof DatabaseIo, string>>(
      `SELECT d.blks_hit AS "blocksHit", d.blks_read AS "blocksRead", w.wal_records AS "walRecords",
              w.wal_fpi AS "walFpi", w.wal_bytes AS "walBytes"
       FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = current_database()`,
    )
    return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, Number(v)])) as unknown as DatabaseIo
  }
  // BENCH_FANOUT_ALONE=1 (default): the fan-out with only the newsletter's and the templates' queues, so its time and
  // memory are its own; the sends start after it. 0: every queue at once, as a server runs it (sends start with the
  // first batch and share the process and the database with the rest of the fan-out).
  const alone = process.env.BENCH_FANOUT_ALONE !== '0'
  const fanoutModules = mountedModules.filter((m) => m.name === 'newsletters' || m.name === 'templates')
  let stop = await jobRunnerFor(deps, moduleJobs(alone ? fanoutModules : mountedModules, services), log).start()
  let fanoutSeconds = 0
  for (;;) {
    // the row alone (GET /newsletters/{id} would count the audience for recipients_estimate on every poll)
    const [view] = await database.query<{ phase: string; started_at: Date | string | null }>(
      'SELECT phase, started_at FROM newsletters WHERE account_id = $1 AND id = $2',
      [account.id, draft.id],
    )
    if (view.phase === 'sending' || view.phase === 'done') {
      // from the move to `sending` (started_at) to the phase seen after the last batch (polled every 100 ms)
      fanoutSeconds = (Date.now() - new Date(view.started_at as string).getTime()) / 1000
      break
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  const fanoutPeak = peak
  const fanoutHeapPeak = heapPeak
  const fanoutHighWater = await highWater()
  console.error(`after the fan-out: ${memory()}`)
  if (alone) {
    await stop()
    stop = await jobRunnerFor(deps, moduleJobs(mountedModules, services), log).start()
  }
  peak = process.memoryUsage().rss
  heapPeak = process.memoryUsage().heapUsed
  const sentAtStart = await count(['sent', 'delivered', 'read'])
  const ioAtStart = await databaseIo()
  const sendStarted = performance.now()
  // the rate of every 10 seconds of the window (stderr): whether it holds, falls off or comes in bursts
  let lastCount = sentAtStart
  let lastAt = sendStarted
  while (performance.now() - sendStarted < SEND_SECONDS * 1000 - 1) {
    await new Promise((r) => setTimeout(r, Math.min(10_000, SEND_SECONDS * 1000 - (performance.now() - sendStarted))))
    const n = await count(['sent', 'delivered', 'read'])
    const at = performance.now()
    console.error(
      `  ${((at - sendStarted) / 1000).toFixed(0).padStart(3)} s: ${Math.round(((n - lastCount) * 1000) / (at - lastAt))}/s`,
    )
    lastCount = n
    lastAt = at
  }
  const sent = (await count(['sent', 'delivered', 'read'])) - sentAtStart
  const ioAtEnd = await databaseIo()
  const seconds = (performance.now() - sendStarted) / 1000
  const sendPeak = peak
  const sendHeapPeak = heapPeak
  console.error(`after the send window: ${memory()}`)
  // with --expose-gc: what of the heap is live (the rest is garbage V8 had not collected yet)
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc) {
    gc()
    console.error(`after a full garbage collection, sends still running: ${memory()}`)
  }
  const [queuedJobs] = await database.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE account_id = $1 AND queue = 'messaging.template_send'`,
    [account.id],
  )
  await stop()
  clearInterval(sampler)
  const status = await newsletters.status(tenant, draft.id)
  console.log(
    `newsletter to ${CONTACTS.toLocaleString('en')} confirmed contacts (${database.kind}, ${WORKERS} workers, CTA ${status.cta_tracking ?? 'none'}, fan-out ${alone ? 'alone' : 'beside the sends'})`,
  )
  console.log(
    `  fan-out: ${status.recipients.toLocaleString('en')} send records (and the first send jobs) in ${fanoutSeconds.toFixed(1)} s = ${Math.round(status.recipients / Math.max(fanoutSeconds, 0.001)).toLocaleString('en')}/s`,
  )
  const hwm = await highWater()
  console.log(
    `  RSS: ${mb(atRest)} at rest, ${mb(before)} before the fan-out; peak ${mb(fanoutPeak)} during the fan-out (+${mb(fanoutPeak - before)}), peak ${mb(sendPeak)} while sending (+${mb(sendPeak - before)}) (goal < 200 MB)`,
  )
  console.log(
    `  V8 heap used: peak ${mb(fanoutHeapPeak)} during the fan-out, ${mb(sendHeapPeak)} while sending | VmHWM ${hwm ? mb(hwm) : 'n/a'} (${fanoutHighWater ? mb(fanoutHighWater) : 'n/a'} at the end of the fan-out)`,
  )
  console.log(
    `  at the end: ${status.counts.queued.toLocaleString('en')} send records open, ${Number(queuedJobs.n).toLocaleString('en')} send jobs written ahead of the sender; sent ${(status.counts.sent + status.counts.delivered + status.counts.read).toLocaleString('en')}, skipped ${status.counts.skipped}, failed ${status.counts.failed}`,
  )
  if (ioAtStart && ioAtEnd) {
    const per = (key: keyof DatabaseIo) => ((ioAtEnd[key] - ioAtStart[key]) / Math.max(sent, 1)).toFixed(1)
    console.log(
      `  database per sent message (send window): ${per('blocksHit')} buffer hits, ${per('blocksRead')} blocks read from outside shared_buffers, ${per('walRecords')} WAL records, ${per('walFpi')} full-page images, ${(Number(per('walBytes')) / 1024).toFixed(1)} kB WAL`,
    )
  }
  console.log(
    `  sends: ${sent.toLocaleString('en')} in ${seconds.toFixed(1)} s = ${(sent / seconds).toFixed(0)}/s | pace ${PACE}/s | ratio ${(sent / seconds / PACE).toFixed(2)} (goal ≥ 0.9)`,
  )
  await services.close()
} finally {
  await database.close()
  await fresh?.drop()
}
