// The request path: Herold's hot read routes against a bare Fastify server, same load generator, same run.
//   GET /v1/me, GET /v1/contacts/{id}, GET /v1/contacts (50 per page, BENCH_CONTACTS contacts imported)
// Each server runs in its own process (as `npm start` does) with autocannon beside it (-c 50 -d BENCH_SECONDS).
// The bare server runs throughout and is measured right before each route, so each ratio compares two runs seconds
// apart (on a machine shared with other work the baseline alone moved between 12,000 and 39,000 req/s in an hour);
// each line also gives the CPU time each server process spent per request (from /proc), which the machine's load
// moves much less than the rates.
// Usage: node bench/api.ts                       embedded PGlite, then PostgreSQL (a fresh database on BENCH_ADMIN_URL)
//        BENCH_EMBEDDED_ONLY=1 node bench/api.ts  BENCH_CONTACTS=100000 BENCH_SECONDS=10
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { loadConfig } from '../src/config.ts'
import { contactJson, pageOfContactsJson } from '../src/modules/contacts/contacts.repository.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { childEnv, freePort, listeningAt, runCli, startProcess, tempDataDir } from '../test/helpers/process.ts'
import { cpuTicks, heroldCli, settled, startHerold } from './herold.ts'

const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 100_000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const EMBEDDED_ONLY = process.env.BENCH_EMBEDDED_ONLY === '1'
const POSTGRES_ONLY = process.env.BENCH_POSTGRES_ONLY === '1'
// extra node flags for the Herold server, such as `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean)
// which routes to measure: any of me, id, list (all three by default), to profile one at a time
const ROUTES = (process.env.BENCH_ROUTES ?? 'me,id,list').split(',')

interface Load {
  rps: number
  p99: number
  errors: number
  /** CPU time of the server process per request, ms (Linux /proc; 0 elsewhere) */
  cpuMs: number
}

async function load(url: string, pid: number | undefined, headers: Record<string, string> = {}): Promise<Load> {
  // a short warm-up, then the measured run
  await autocannon({ url, connections: CONNECTIONS, duration: 1, headers })
  const before = cpuTicks(pid)
  const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers })
  const cpuMs = ((cpuTicks(pid) - before) * 10) / Math.max(1, result.requests.total)
  return { rps: result.requests.average, p99: result.latency.p99, errors: result.non2xx + result.errors, cpuMs }
}

const line = (label: string, herold: Load, bare: Load) =>
  `${label.padEnd(34)} ${Math.round(herold.rps).toLocaleString('en').padStart(7)} req/s, p99 ${String(herold.p99).padStart(4)} ms, ${herold.cpuMs.toFixed(3)} ms CPU` +
  `${herold.errors ? ` (${herold.errors} non-2xx!)` : ''} | bare Fastify ${Math.round(bare.rps).toLocaleString('en')} req/s, ${bare.cpuMs.toFixed(3)} ms CPU | ratio ${(herold.rps / bare.rps).toFixed(2)}`

/** The baseline server, running beside Herold's for the whole benchmark. */
async function bareServer() {
  return startProcess(
    process.execPath,
    ['bench/bare-fastify.ts'],
    childEnv({ PORT: String(await freePort()) }),
    listeningAt,
  )
}
type Bare = Awaited<ReturnType<typeof bareServer>>

function contactsCsv(): string {
  const file = path.join(tempDataDir(), 'contacts.csv')
  const lines = ['name,email,phone,tags']
  for (let i = 0; i < CONTACTS; i++) lines.push(`Kunde ${i},kunde${i}@bench.example,,${i % 10 ? '' : 'stamm'}`)
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}

async function measureHerold(label: string, env: NodeJS.ProcessEnv, file: string, bare: Bare) {
  let accountId = ''
  let contactId = ''
  const cli = heroldCli(env)
  // its log goes to a file, as an operator's would, not through a pipe into this process (the load generator's)
  const server = await startHerold(env, NODE_ARGS)
  try {
    // the operator's way to give a large integration more than the spec's 120 requests a minute
    await cli([
      'plans',
      'set',
      'bench',
      '--contacts',
      '10000000',
      '--messages-per-month',
      '1000000',
      '--webhooks',
      '10',
      '--requests-per-minute',
      '1000000',
    ])
    const account = await cli(['accounts', 'create', '--name', 'Bench', '--plan', 'bench'])
    const { key } = await cli(['keys', 'create', '--account', account.id, '--name', 'bench', '--scopes', 'all'])
    const imported = await cli(['import', 'contacts', '--account', account.id, file])
    const headers = { authorization: `Bearer ${key}` }
    const page = (await (await fetch(`${server.url}/v1/contacts?limit=1`, { headers })).json()) as {
      contacts: Array<{ id: string }>
    }
    const rest = await settled()
    console.log(
      `${label}: ${imported.created.toLocaleString('en')} contacts imported, the server at rest after ${rest.toFixed(0)} s`,
    )
    const routes: Array<[string, string, string]> = [
      ['me', '  GET /v1/me', '/v1/me'],
      ['id', '  GET /v1/contacts/{id}', `/v1/contacts/${page.contacts[0].id}`],
      ['list', '  GET /v1/contacts (50 per page)', '/v1/contacts?limit=50'],
    ]
    for (const [key, name, path] of routes) {
      if (!ROUTES.includes(key)) continue
      const baseline = await load(`${bare.url}/`, bare.child.pid)
      console.log(line(name, await load(`${server.url}${path}`, server.child.pid, headers), baseline))
    }
    contactId = page.contacts[0].id
    accountId = account.id
  } finally {
    await server.stop()
  }
  await statementsAlone(env, accountId, contactId)
}

/**
 * What bounds the two contact routes: the route's own prepared statement run with the same driver, the same way, in
 * this process, CONNECTIONS at a time, without HTTP (the embedded database once the server has stopped and released
 * it).
 */
async function statementsAlone(env: NodeJS.ProcessEnv, accountId: string, contactId: string) {
  const config = loadConfig(env)
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
  })
  try {
    const rate = async (run: () => Promise<unknown>) => {
      const until = performance.now() + SECONDS * 1000
      let done = 0
      const worker = async () => {
        while (performance.now() < until) {
          await run()
          done++
        }
      }
      const started = performance.now()
      await Promise.all(Array.from({ length: CONNECTIONS }, worker))
      return done / ((performance.now() - started) / 1000)
    }
    const statements: Array<[string, string, () => Promise<unknown>]> = [
      ['id', '  the statement of /v1/contacts/{id} alone', () => contactJson(database.orm, accountId, contactId)],
      [
        'list',
        '  the statement of /v1/contacts alone',
        () => pageOfContactsJson(database.orm, accountId, { limit: 50, offset: 0 }),
      ],
    ]
    for (const [key, name, run] of statements) {
      if (!ROUTES.includes(key)) continue
      await rate(run)
      console.log(
        `${name.padEnd(34)} ${Math.round(await rate(run))
          .toLocaleString('en')
          .padStart(7)} /s (same driver, no HTTP)`,
      )
    }
  } finally {
    await database.close()
  }
}

const file = contactsCsv()
const bare = await bareServer()
try {
  if (!POSTGRES_ONLY) {
    await measureHerold('embedded PGlite', childEnv({ HEROLD_DATA_DIR: tempDataDir() }), file, bare)
  }
  if (!EMBEDDED_ONLY) {
    const name = `herold_bench_api_${Date.now()}`
    const admin = new pg.Client({ connectionString: ADMIN_URL })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${name}`)
    try {
      const url = ADMIN_URL.replace(/\/[^/]*$/, `/${name}`)
      const env = childEnv({ DATABASE_URL: url, HEROLD_SECRET_KEY: Buffer.alloc(32, 3).toString('base64') })
      const migrated = await runCli(['migrate'], env)
      if (migrated.code !== 0) throw new Error(migrated.stderr)
      await measureHerold('PostgreSQL', env, file, bare)
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.end()
    }
  }
} finally {
  await bare.stop()
}
