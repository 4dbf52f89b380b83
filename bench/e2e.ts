/**
 * A message end to end, as a shop's integration sends them: BENCH_CONNECTIONS (default 32) clients POST
 * /v1/messages with an approved template, BENCH_SENDS (default 2,000) in all, each to the next of BENCH_CONTACTS
 * (default 1,000) confirmed contacts, against `herold serve` started as an operator starts it, a sandbox number
 * paced at BENCH_PACE (default 1,000/s). It prints the POSTs accepted a second, the sends final a second (from the
 * first POST to the last send's `sent`), p50/p99 of POST-to-`sent` (the client's POST against the send's `sent_at`
 * from GET /v1/sends/{id}), and the server's CPU a send; beside them, in the same run and on the same data:
 *
 * - acceptance alone: the same POSTs against the server with HEROLD_ROLE=api (nothing sent);
 * - sending alone: the sends that run accepted, sent by a fresh server (role `all`, or `worker` for the split) from
 *   the queue filled beforehand, first `sent` to last;
 *
 * and the ratios: end to end against the pace, accepted/s against acceptance alone, sends/s against sending alone.
 *
 * Set-ups: `herold serve` with role `all` (what `npm start` runs) on the embedded database, the same on PostgreSQL
 * (DATABASE_URL), and one `api` and one `worker` process on PostgreSQL.
 *
 *   node bench/e2e.ts                             all three set-ups (PostgreSQL: a fresh database on BENCH_ADMIN_URL)
 *   BENCH_SETUPS=embedded,postgres,split          which set-ups (default all three)
 *   BENCH_SENDS=500 BENCH_CONNECTIONS=8           a short run
 *   BENCH_OFFERED=900                             the clients offer 900 POSTs a second at most (below the pace)
 *   BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node bench/e2e.ts   profile the servers
 *
 * The server's statements are counted on PostgreSQL (bench/count-statements.ts preloaded): statements a send,
 * accepting and sending together.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import path from 'node:path'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../src/config.ts'
import { systemClock } from '../src/platform/clock.ts'
import { type Database, openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { buildServices } from '../src/services.ts'
import { childEnv, tempDataDir } from '../test/helpers/process.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'
import { cpuTicks, startHerold } from './herold.ts'
import { type Sender, seedSender } from './lib/sender.ts'

const SENDS = Number(process.env.BENCH_SENDS ?? 2_000)
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
/**
 * BENCH_OFFERED=N: the clients together start at most N POSTs a second (the n-th no earlier than n / N s after the
 * first), an integration's steady stream; default: as fast as the clients are answered, which offers more than a
 * number's pace, so the last sends wait behind it and POST-to-`sent` measures that queue
 */
const OFFERED = process.env.BENCH_OFFERED ? Number(process.env.BENCH_OFFERED) : Number.POSITIVE_INFINITY
const PACE = Number(process.env.BENCH_PACE ?? 1_000)
const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const SETUPS = (process.env.BENCH_SETUPS ?? 'embedded,postgres,split').split(',')
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)
const SECRET_KEY = randomBytes(32).toString('base64')
/** a send still not final this long after the last POST is counted as not sent */
const FINAL_TIMEOUT_MS = Number(process.env.BENCH_FINAL_TIMEOUT ?? 120_000)

type Server = Awaited<ReturnType<typeof startHerold>>

async function prepare(database: Database): Promise<Sender> {
  await migrate(database)
  const config = loadConfig({}, { databaseUrl: undefined, publicUrl: 'http://bench.herold', secretKey: SECRET_KEY })
  const services = buildServices({ config, database, clock: systemClock })
  const sender = await seedSender(database.orm, services, {
    contacts: CONTACTS,
    pace: PACE,
    name: 'Bench order shipped',
    content: 'Hallo {{name}}, deine Bestellung {{order}} ist unterwegs.',
  })
  await database.orm.execute(sql`ANALYZE`)
  await services.close()
  return sender
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS })

function request(
  url: string,
  key: string,
  method: 'GET' | 'POST',
  body?: string,
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
        },
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk) => chunks.push(chunk))
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          try {
            resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) })
          } catch {
            resolve({ status: res.statusCode ?? 0, json: { text } })
          }
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

interface Posted {
  /** send id → the client's clock (epoch ms) when its POST was started */
  postedAt: Map<string, number>
  firstAt: number
  lastAcceptedAt: number
  errors: number
}

/** CONNECTIONS clients POSTing SENDS template sends, each to the next contact. */
async function post(url: string, sender: Sender, label: string): Promise<Posted> {
  const postedAt = new Map<string, number>()
  let next = 0
  let errors = 0
  let lastAcceptedAt = 0
  const firstAt = Date.now()
  const client = async () => {
    while (next < SENDS) {
      const n = next++
      const due = firstAt + (n * 1000) / OFFERED
      if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()))
      const body = JSON.stringify({
        contact_id: sender.contactIds[n % sender.contactIds.length],
        template: { id: sender.templateId, variables: { order: `${label}-${n}` } },
      })
      const at = Date.now()
      const { status, json } = await request(`${url}/v1/messages`, sender.key, 'POST', body).catch(() => ({
        status: 0,
        json: {} as Record<string, unknown>,
      }))
      if (status === 202) {
        postedAt.set(String(json.send_id), at)
        lastAcceptedAt = Date.now()
      } else if (errors++ === 0) console.error(`  POST answered ${status}: ${JSON.stringify(json)}`)
    }
  }
  await Promise.all(Array.from({ length: CONNECTIONS }, client))
  return { postedAt, firstAt, lastAcceptedAt, errors }
}

interface Final {
  status: string
  /** epoch ms of sent_at (or failed_at / skipped_at) */
  at: number
}

const finalStatuses = new Set(['sent', 'delivered', 'read', 'failed', 'skipped'])

/**
 * Waits until every send is final, asking GET /v1/sends/{id}: the newest pending one every 100 ms until it is final
 * (then `measured` runs: the caller reads the CPU and statements before the sweep's GETs), then the rest one after
 * another (most are final by then), so the polling costs the server little while it sends.
 */
async function finals(url: string, key: string, ids: string[], measured: () => Promise<void>) {
  const done = new Map<string, Final>()
  let pending = [...ids]
  let first = true
  const until = Date.now() + FINAL_TIMEOUT_MS
  const look = async (id: string) => {
    const { status, json } = await request(`${url}/v1/sends/${id}`, key, 'GET')
    if (status !== 200 || !finalStatuses.has(String(json.status))) return false
    const at = json.sent_at ?? json.failed_at ?? json.skipped_at
    done.set(id, { status: String(json.status), at: Date.parse(String(at)) })
    return true
  }
  while (pending.length > 0 && Date.now() < until) {
    if (!(await look(pending[pending.length - 1]))) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      continue
    }
    if (first) await measured()
    first = false
    const left: string[] = []
    for (const id of pending) if (!done.has(id) && !(await look(id))) left.push(id)
    pending = left
    if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 100))
  }
  if (first) await measured()
  return done
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]

/** with BENCH_STATEMENT_TEXTS=1: each statement's count so far, over the servers (bench/count-statements.ts) */
let texts = new Map<string, number>()

/** The servers' statement counts so far (bench/count-statements.ts), null where none is counted (PGlite). */
async function statementsOf(servers: Array<{ server: Server; file: string }>): Promise<number | null> {
  let total = 0
  texts = new Map()
  for (const { server } of servers) server.child.kill('SIGUSR2')
  await new Promise((resolve) => setTimeout(resolve, 200))
  for (const { file } of servers) {
    try {
      total += Number(readFileSync(file, 'utf8'))
      if (process.env.BENCH_STATEMENT_TEXTS === '1')
        for (const [text, n] of Object.entries(
          JSON.parse(readFileSync(`${file}.texts`, 'utf8')) as Record<string, number>,
        ))
          texts.set(text, (texts.get(text) ?? 0) + n)
    } catch {
      return null
    }
  }
  return total > 0 ? total : null
}

async function start(env: NodeJS.ProcessEnv, role: string) {
  const file = path.join(tempDataDir(), 'statements')
  const server = await startHerold(
    { ...env, HEROLD_ROLE: role, HEROLD_SECRET_KEY: SECRET_KEY, BENCH_STATEMENTS_FILE: file },
    ['--import', './bench/count-statements.ts', ...NODE_ARGS],
  )
  return { server, file }
}

type Started = Awaited<ReturnType<typeof start>>

/** BENCH_STATEMENT_TEXTS=1: the statements counted since `since`, each a send */
function printTexts(since: Map<string, number>, sends: number) {
  if (process.env.BENCH_STATEMENT_TEXTS !== '1') return
  const counts = [...texts].map(([text, n]) => [text, n - (since.get(text) ?? 0)] as const)
  for (const [text, n] of counts.sort((a, b) => b[1] - a[1]).slice(0, 30))
    if (n > 0) console.log(`    ${(n / Math.max(1, sends)).toFixed(3)} a send  ${text}`)
}

const per = (n: number, ms: number) => (n / Math.max(ms, 1)) * 1000
const fmt = (n: number) => Math.round(n).toLocaleString('en')

/** Acceptance alone: the POSTs against a server with role api; leaves their sends queued. */
async function acceptOnly(env: NodeJS.ProcessEnv, sender: Sender) {
  const api = await start(env, 'api')
  try {
    await post(api.server.url, sender, 'warm').then(() => undefined)
    const cpu = cpuTicks(api.server.child.pid)
    const posted = await post(api.server.url, sender, 'api')
    const cpuMs = (cpuTicks(api.server.child.pid) - cpu) * 10
    const rate = per(posted.postedAt.size, posted.lastAcceptedAt - posted.firstAt)
    console.log(
      `  acceptance alone (role api): ${posted.postedAt.size} accepted in ${((posted.lastAcceptedAt - posted.firstAt) / 1000).toFixed(1)} s = ${fmt(rate)}/s, ${(cpuMs / posted.postedAt.size).toFixed(2)} ms server CPU a POST${posted.errors ? ` (${posted.errors} errors!)` : ''}`,
    )
    return rate
  } finally {
    await api.server.stop()
  }
}

/** Sending alone: the queue the acceptance run filled (the warm-up's and the measured POSTs, 2 × SENDS) sent by `servers`. */
async function sendOnly(servers: Started[], sender: Sender, ids: string[], url: string, label: string) {
  const before = await statementsOf(servers)
  const textsBefore = texts
  const cpu = servers.map((s) => cpuTicks(s.server.child.pid))
  let cpuMs = 0
  let after: number | null = null
  const done = await finals(url, sender.key, ids, async () => {
    cpuMs = servers.reduce((sum, s, i) => sum + (cpuTicks(s.server.child.pid) - cpu[i]) * 10, 0)
    after = await statementsOf(servers)
  })
  const times = [...done.values()].map((f) => f.at).sort((a, b) => a - b)
  const sent = [...done.values()].filter((f) => f.status !== 'failed' && f.status !== 'skipped').length
  const rate = per(times.length - 1, times[times.length - 1] - times[0])
  console.log(
    `  sending alone (${label}, ${ids.length} queued beforehand): ${sent} sent, first to last ${((times[times.length - 1] - times[0]) / 1000).toFixed(1)} s = ${fmt(rate)} sends/s, ${(cpuMs / Math.max(1, done.size)).toFixed(2)} ms server CPU a send` +
      `${before !== null && after !== null ? `, ${((after - before) / Math.max(1, done.size)).toFixed(1)} statements a send` : ''}` +
      `${done.size < ids.length ? ` (${ids.length - done.size} not final!)` : ''}`,
  )
  printTexts(textsBefore, done.size)
  return rate
}

/** End to end: the POSTs against servers that also send; until every send is final. */
async function endToEnd(servers: Started[], url: string, sender: Sender, label: string) {
  const before = await statementsOf(servers)
  const textsBefore = texts
  const cpu = servers.map((s) => cpuTicks(s.server.child.pid))
  const posted = await post(url, sender, 'e2e')
  let cpuMs = 0
  let after: number | null = null
  const done = await finals(url, sender.key, [...posted.postedAt.keys()], async () => {
    cpuMs = servers.reduce((sum, s, i) => sum + (cpuTicks(s.server.child.pid) - cpu[i]) * 10, 0)
    after = await statementsOf(servers)
  })
  const latencies = [...done].map(([id, f]) => f.at - (posted.postedAt.get(id) ?? f.at)).sort((a, b) => a - b)
  const lastFinal = Math.max(...[...done.values()].map((f) => f.at))
  const sent = [...done.values()].filter((f) => f.status !== 'failed' && f.status !== 'skipped').length
  const accepted = per(posted.postedAt.size, posted.lastAcceptedAt - posted.firstAt)
  const finalRate = per(done.size, lastFinal - posted.firstAt)
  console.log(
    `  end to end (${label}): ${posted.postedAt.size} accepted in ${((posted.lastAcceptedAt - posted.firstAt) / 1000).toFixed(1)} s = ${fmt(accepted)}/s; ${sent} sent, all final after ${((lastFinal - posted.firstAt) / 1000).toFixed(1)} s = ${fmt(finalRate)} sends/s; POST-to-sent p50 ${quantile(latencies, 0.5)} ms, p99 ${quantile(latencies, 0.99)} ms; ${(cpuMs / Math.max(1, done.size)).toFixed(2)} ms server CPU a send` +
      `${before !== null && after !== null ? `, ${((after - before) / Math.max(1, done.size)).toFixed(1)} statements a send` : ''}` +
      `${posted.errors ? ` (${posted.errors} errors!)` : ''}${done.size < posted.postedAt.size ? ` (${posted.postedAt.size - done.size} not final!)` : ''}`,
  )
  printTexts(textsBefore, done.size)
  return { accepted, finalRate, p99: quantile(latencies, 0.99) }
}

function summary(label: string, acceptRate: number, sendRate: number, e2e: Awaited<ReturnType<typeof endToEnd>>) {
  console.log(
    `  ${label}: end to end ${fmt(e2e.finalRate)} sends/s = ${(e2e.finalRate / PACE).toFixed(2)} of the pace (${PACE}/s)` +
      ` | accepted ${(e2e.accepted / acceptRate).toFixed(2)} of acceptance alone | sends ${(e2e.finalRate / sendRate).toFixed(2)} of sending alone | POST-to-sent p99 ${e2e.p99} ms`,
  )
}

/** The ids of the sends queued so far (the acceptance run's warm-up and measured POSTs), read from the database. */
async function queuedIds(database: Database, sender: Sender): Promise<string[]> {
  const rows = await database.query<{ id: string }>(
    `SELECT id FROM template_sends WHERE account_id = $1 AND status = 'queued' ORDER BY created_at, id`,
    [sender.accountId],
  )
  return rows.map((r) => r.id)
}

async function embedded() {
  const dataDir = tempDataDir()
  const database = await openDatabase({ dataDir })
  const sender = await prepare(database)
  await database.close()
  const env = childEnv({ HEROLD_DATA_DIR: dataDir })
  console.log(
    `embedded PGlite, role all: ${SENDS} POSTs, ${CONNECTIONS} clients${OFFERED < Number.POSITIVE_INFINITY ? ` offering ${OFFERED}/s` : ''}, ${CONTACTS} contacts, pace ${PACE}/s`,
  )
  const acceptRate = await acceptOnly(env, sender)
  const reading = await openDatabase({ dataDir })
  const queued = await queuedIds(reading, sender)
  await reading.close()
  const all = await start(env, 'all')
  try {
    const sendRate = await sendOnly([all], sender, queued, all.server.url, 'role all')
    const e2e = await endToEnd([all], all.server.url, sender, 'role all')
    summary('embedded, role all', acceptRate, sendRate, e2e)
  } finally {
    await all.server.stop()
  }
}

async function postgres(split: boolean) {
  const scratch = await createScratchDatabase(ADMIN_URL, 'herold_bench_e2e')
  const database = await openDatabase({ databaseUrl: scratch.url, dataDir: 'memory://', poolSize: 4 })
  const started: Started[] = []
  try {
    const sender = await prepare(database)
    const env = childEnv({ DATABASE_URL: scratch.url })
    const label = split ? 'one api and one worker process' : 'role all'
    console.log(
      `PostgreSQL, ${label}: ${SENDS} POSTs, ${CONNECTIONS} clients${OFFERED < Number.POSITIVE_INFINITY ? ` offering ${OFFERED}/s` : ''}, ${CONTACTS} contacts, pace ${PACE}/s`,
    )
    const acceptRate = await acceptOnly(env, sender)
    const queued = await queuedIds(database, sender)
    if (split) {
      // the api first, so the worker's sending alone is polled through it; then the worker
      started.push(await start(env, 'api'))
      started.push(await start(env, 'worker'))
    } else started.push(await start(env, 'all'))
    const url = started[0].server.url
    const senders = split ? [started[1]] : started
    const sendRate = await sendOnly(senders, sender, queued, url, split ? 'role worker' : 'role all')
    const e2e = await endToEnd(started, url, sender, label)
    summary(`PostgreSQL, ${label}`, acceptRate, sendRate, e2e)
  } finally {
    for (const s of started) await s.server.stop()
    await database.close()
    await scratch.drop()
  }
}

if (SETUPS.includes('embedded')) await embedded()
if (SETUPS.includes('postgres')) await postgres(false)
if (SETUPS.includes('split')) await postgres(true)
agent.destroy()
