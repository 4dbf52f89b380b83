// What the embedded database costs the request path while it does nothing: `GET /v1/me` on a Herold that runs on
// PostgreSQL, in three kinds of server process, interleaved:
//   plain         as `DATABASE_URL=… herold serve` runs
//   same thread   with an idle embedded database (PGlite, the server's settings) opened in the server's thread, the
//                 V8 isolate that answers HTTP, as `herold serve` without DATABASE_URL has it (node --import)
//   worker        the same database opened in a worker thread of the same process (its own isolate)
// /v1/me reads nothing from the database (the credential comes from the process's cache), so the three differ only
// in what else the process holds. Each kind runs in BENCH_PROCESSES fresh processes (one process of the same code
// differs from the next by up to a fifth on this kind of machine, so a single pair proves nothing), each measured
// once for BENCH_SECONDS under autocannon -c 50 after a second's warm-up; the figure is the server's CPU time per
// request from /proc (all its threads), which the machine's load moves far less than the rate. On Linux with
// `taskset` and two or more CPUs, the server runs on CPU 0 and the load generator on CPU 1, so the two do not trade
// places between runs.
// Usage: node bench/embedded-isolate.ts   (BENCH_ADMIN_URL, BENCH_PROCESSES=3, BENCH_SECONDS=6)
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import path from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { childEnv, tempDataDir } from '../test/helpers/process.ts'
import { cpuTicks, heroldCli, startHerold } from './herold.ts'

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 3)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6)
const CONNECTIONS = 50

const pinning = process.platform === 'linux' && availableParallelism() >= 2 && spawnSync('taskset', ['-V']).status === 0
const pin = (pid: number | undefined, cpu: number) => {
  if (pinning && pid) spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' })
}

function rssMb(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024)
}

const variants: Array<[string, string[]]> = [
  ['plain', []],
  ['same thread', ['--import', './bench/isolate/pglite-here.ts']],
  ['worker', ['--import', './bench/isolate/pglite-worker.ts']],
]

const name = `herold_bench_isolate_${Date.now()}`
const admin = new pg.Client({ connectionString: ADMIN_URL })
await admin.connect()
await admin.query(`CREATE DATABASE ${name}`)
pin(process.pid, 1)
try {
  const pgliteDir = path.join(tempDataDir(), 'pglite')
  const created = spawnSync(process.execPath, ['src/platform/db/pglite-initdb.ts', pgliteDir], { stdio: 'ignore' })
  if (created.status !== 0) throw new Error('creating the embedded database failed')
  const env = childEnv({
    DATABASE_URL: ADMIN_URL.replace(/\/[^/]*$/, `/${name}`),
    HEROLD_SECRET_KEY: Buffer.alloc(32, 3).toString('base64'),
    BENCH_PGLITE_DIR: pgliteDir,
  })
  const cli = heroldCli(env)
  await cli(['migrate'])
  await cli([
    'plans',
    'set',
    'bench',
    '--contacts',
    '1000',
    '--messages-per-month',
    '1000',
    '--webhooks',
    '1',
    '--requests-per-minute',
    '1000000',
  ])
  const account = await cli(['accounts', 'create', '--name', 'Bench', '--plan', 'bench'])
  const { key } = await cli(['keys', 'create', '--account', account.id, '--name', 'bench', '--scopes', 'all'])
  const headers = { authorization: `Bearer ${key}` }
  console.log(
    `GET /v1/me on PostgreSQL, ${PROCESSES} process${PROCESSES === 1 ? '' : 'es'} of each kind, ${SECONDS} s each${pinning ? ', server on CPU 0, load on CPU 1' : ''}`,
  )

  const results = new Map<string, Array<{ cpuUs: number; rps: number; rss: number }>>()
  for (let round = 0; round < PROCESSES; round++) {
    for (const [label, nodeArgs] of variants) {
      const server = await startHerold(env, nodeArgs)
      try {
        pin(server.child.pid, 0)
        const url = `${server.url}/v1/me`
        await new Promise((resolve) => setTimeout(resolve, 2000))
        await autocannon({ url, connections: CONNECTIONS, duration: 1, headers })
        const before = cpuTicks(server.child.pid)
        const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers })
        const cpuUs = ((cpuTicks(server.child.pid) - before) * 10_000) / Math.max(1, result.requests.total)
        if (result.non2xx + result.errors > 0) throw new Error(`${label}: ${result.non2xx + result.errors} failures`)
        const entry = { cpuUs, rps: result.requests.average, rss: rssMb(server.child.pid) }
        results.set(label, [...(results.get(label) ?? []), entry])
        console.log(
          `  ${label.padEnd(12)} ${cpuUs.toFixed(1).padStart(5)} µs CPU a request, ${Math.round(entry.rps).toLocaleString('en').padStart(6)} req/s, RSS ${entry.rss} MB`,
        )
      } finally {
        await server.stop()
      }
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
  const plain = median((results.get('plain') ?? []).map((r) => r.cpuUs))
  console.log('median CPU a request (ratio to plain), median RSS after the load:')
  for (const [label, runs] of results) {
    const cpu = median(runs.map((r) => r.cpuUs))
    console.log(
      `  ${label.padEnd(12)} ${cpu.toFixed(1).padStart(5)} µs (${(cpu / plain).toFixed(2)}), ${median(runs.map((r) => r.rss))} MB`,
    )
  }
} finally {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.end()
}
