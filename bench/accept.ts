/**
 * Template send acceptance over HTTP: BENCH_CONNECTIONS (default 32) clients POST /v1/messages with an approved
 * template to BENCH_CONTACTS (default 1,000) confirmed contacts on a sandbox chat number, each run BENCH_SECONDS
 * (default 10) after a one-second warm-up, BENCH_ROUNDS times (default 3) interleaved with the same-run baseline:
 * the raw transaction a 202 stands for, one send record and its job (messaging.repository insertSends and platform
 * enqueue in one transaction, straight through the driver, the same number of callers at once, no HTTP, no checks).
 * The machine is shared: the figures of one run move; read the ranges over the rounds, not one line.
 *
 * The server runs as an operator starts it (`herold serve`, its own process) with HEROLD_ROLE=api, so the figure is
 * the acceptance alone (role `all` would also send what it accepted). On PostgreSQL the server's statements are
 * counted (bench/count-statements.ts preloaded into it): statements per accepted request.
 *
 *   node bench/accept.ts                        embedded PGlite, then PostgreSQL (a fresh database on BENCH_ADMIN_URL)
 *   BENCH_EMBEDDED_ONLY=1 node bench/accept.ts  BENCH_POSTGRES_ONLY=1  BENCH_ROUNDS=5  BENCH_SECONDS=5  BENCH_SETTLE=0
 *   BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" node bench/accept.ts   to profile the server
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import autocannon from 'autocannon'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../src/config.ts'
import { systemClock } from '../src/platform/clock.ts'
import { type Database, openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { buildServices } from '../src/services.ts'
import { childEnv, tempDataDir } from '../test/helpers/process.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'
import { cpuTicks, settled, startHerold } from './herold.ts'
import { queueSends, type Sender, seedSender } from './lib/sender.ts'

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const EMBEDDED_ONLY = process.env.BENCH_EMBEDDED_ONLY === '1'
const POSTGRES_ONLY = process.env.BENCH_POSTGRES_ONLY === '1'
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)
/** BENCH_SETTLE=0: measure at once instead of waiting up to a minute for the machine at rest (a quick look) */
const SETTLE = process.env.BENCH_SETTLE !== '0'
const SECRET_KEY = randomBytes(32).toString('base64')

interface Run {
  rps: number
  p50: number
  p99: number
  /** non-2xx answers and socket errors */
  errors: number
  /** statements per accepted request (PostgreSQL only) */
  statements?: number
  /** CPU time of the server process per request, ms */
  cpuMs?: number
}

type Ready = Sender

/** A plan without practical limits, an account with a key, a sandbox number, an approved template, confirmed contacts. */
async function prepare(database: Database): Promise<Ready> {
  await migrate(database)
  const config = loadConfig({}, { databaseUrl: undefined, publicUrl: 'http://bench.herold', secretKey: SECRET_KEY })
  const services = buildServices({ config, database, clock: systemClock })
  const sender = await seedSender(database.orm, services, {
    contacts: CONTACTS,
    name: 'Bench order ready',
    content: 'Hallo {{name}}, deine Bestellung {{order}} liegt zur Abholung bereit.',
  })
  await database.orm.execute(sql`ANALYZE`)
  await services.close()
  return sender
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]

/** The baseline: CONNECTIONS callers, each writing one send record and its job per transaction, for SECONDS. */
async function baseline(database: Database, ready: Ready): Promise<Run> {
  const db = database.orm
  let next = 0
  const once = () => queueSends(db, ready, 1, (n) => ({ order: `B-${n}` }), 1, next++)
  const run = async (seconds: number) => {
    const latencies: number[] = []
    const until = performance.now() + seconds * 1000
    const caller = async () => {
      while (performance.now() < until) {
        const started = performance.now()
        await once()
        latencies.push(performance.now() - started)
      }
    }
    const started = performance.now()
    await Promise.all(Array.from({ length: CONNECTIONS }, caller))
    const elapsed = (performance.now() - started) / 1000
    latencies.sort((a, b) => a - b)
    return { rps: latencies.length / elapsed, p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), errors: 0 }
  }
  await run(1)
  return run(SECONDS)
}

type Server = Awaited<ReturnType<typeof startHerold>>

/** The server's statement count so far (bench/count-statements.ts), or null when it counts none (PGlite). */
async function statementsOf(server: Server, file: string): Promise<number | null> {
  server.child.kill('SIGUSR2')
  await new Promise((resolve) => setTimeout(resolve, 200))
  try {
    const count = Number(readFileSync(file, 'utf8'))
    return count > 0 ? count : null
  } catch {
    return null
  }
}

/** CONNECTIONS clients POSTing template sends, each to the next contact, for SECONDS. */
async function accept(server: Server, ready: Ready, statementsFile: string): Promise<Run> {
  let next = 0
  const options = (duration: number) => ({
    url: `${server.url}/v1/messages`,
    connections: CONNECTIONS,
    duration,
    method: 'POST' as const,
    headers: { authorization: `Bearer ${ready.key}`, 'content-type': 'application/json' },
    requests: [
      {
        setupRequest: (request: autocannon.Request) => {
          const n = next++
          return {
            ...request,
            body: JSON.stringify({
              contact_id: ready.contactIds[n % ready.contactIds.length],
              template: { id: ready.templateId, variables: { order: `A-${n}` } },
            }),
          }
        },
      },
    ],
  })
  await autocannon(options(1))
  const statementsBefore = await statementsOf(server, statementsFile)
  const cpuBefore = cpuTicks(server.child.pid)
  const result = await autocannon(options(SECONDS))
  const cpuMs = ((cpuTicks(server.child.pid) - cpuBefore) * 10) / Math.max(1, result.requests.total)
  const statementsAfter = await statementsOf(server, statementsFile)
  const accepted = result['2xx']
  return {
    rps: accepted / SECONDS,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
    cpuMs,
    ...(statementsBefore !== null && statementsAfter !== null
      ? { statements: (statementsAfter - statementsBefore) / Math.max(1, accepted) }
      : {}),
  }
}

const rate = (r: Run) => `${Math.round(r.rps).toLocaleString('en').padStart(6)}/s`
const latency = (r: Run) => `p50 ${r.p50.toFixed(1)} ms, p99 ${r.p99.toFixed(1)} ms`
const range = (values: number[], digits = 0) =>
  `${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)}`

async function measure(
  label: string,
  env: NodeJS.ProcessEnv,
  ready: Ready,
  base: { database: Database; ready: Ready },
) {
  const statementsFile = path.join(tempDataDir(), 'statements')
  const server = await startHerold(
    { ...env, HEROLD_ROLE: 'api', HEROLD_SECRET_KEY: SECRET_KEY, BENCH_STATEMENTS_FILE: statementsFile },
    ['--import', './bench/count-statements.ts', ...NODE_ARGS],
  )
  const herold: Run[] = []
  const raw: Run[] = []
  try {
    // a fresh server first works off its start (migrations checked, caches filled, the database's own writes)
    const rest = SETTLE ? await settled() : 0
    console.log(
      `${label}: ${CONNECTIONS} clients, ${SECONDS} s a run, ${ROUNDS} rounds, ${CONTACTS} contacts, the machine at rest after ${rest.toFixed(0)} s`,
    )
    for (let round = 1; round <= ROUNDS; round++) {
      const b = await baseline(base.database, base.ready)
      const h = await accept(server, ready, statementsFile)
      raw.push(b)
      herold.push(h)
      console.log(
        `  round ${round}: POST /v1/messages ${rate(h)} accepted, ${latency(h)}, ${h.cpuMs?.toFixed(2)} ms server CPU` +
          `${h.statements === undefined ? '' : `, ${h.statements.toFixed(2)} statements`} a request` +
          `${h.errors ? ` (${h.errors} errors!)` : ''} | baseline ${rate(b)}, ${latency(b)} | ratio ${(h.rps / b.rps).toFixed(2)}`,
      )
    }
  } finally {
    await server.stop()
  }
  const ratios = herold.map((h, i) => h.rps / raw[i].rps)
  const counted = herold.flatMap((h) => (h.statements === undefined ? [] : [h.statements]))
  console.log(
    `  ${label} over ${ROUNDS} rounds: accepted ${range(herold.map((h) => h.rps))}/s, p99 ${range(herold.map((h) => h.p99))} ms` +
      ` | baseline ${range(raw.map((r) => r.rps))}/s | ratio ${range(ratios, 2)}` +
      `${counted.length ? ` | ${range(counted, 2)} statements a request` : ''}`,
  )
}

async function embedded() {
  const dataDir = tempDataDir()
  const served = await openDatabase({ dataDir })
  const ready = await prepare(served)
  await served.close()
  // the baseline's own embedded database beside it (the server holds its directory), prepared the same way
  const base = await openDatabase({ dataDir: tempDataDir() })
  try {
    const baseReady = await prepare(base)
    await measure('embedded PGlite', childEnv({ HEROLD_DATA_DIR: dataDir }), ready, {
      database: base,
      ready: baseReady,
    })
  } finally {
    await base.close()
  }
}

async function postgres() {
  const scratch = await createScratchDatabase(ADMIN_URL, 'herold_bench_accept')
  const database = await openDatabase({ databaseUrl: scratch.url, dataDir: 'memory://', poolSize: CONNECTIONS })
  try {
    const ready = await prepare(database)
    await measure('PostgreSQL', childEnv({ DATABASE_URL: scratch.url }), ready, { database, ready })
  } finally {
    await database.close()
    await scratch.drop()
  }
}

if (!POSTGRES_ONLY) await embedded()
if (!EMBEDDED_ONLY) await postgres()
