/**
 * An idle server: `herold serve` started on a fresh embedded data directory (and on a fresh PostgreSQL database with
 * DATABASE_URL), then left alone. Prints its RSS one minute after the start, its CPU over the idle period (from
 * /proc/PID/stat: user + system time of the server process), and the latency of the first job after the idle period
 * (a webhook test event: POST to the receiver's receipt) beside a warm one right after it.
 *
 *   node bench/idle.ts                  embedded, then PostgreSQL (a fresh database on BENCH_ADMIN_URL)
 *   BENCH_IDLE_SECONDS=600              the idle period (default 60)
 *   BENCH_EMBEDDED_ONLY=1 / BENCH_POSTGRES_ONLY=1
 *
 * Linux only (/proc). Goals (issue 35): RSS <= 250 MB a minute after the first start, CPU <= 1 % of a core idle.
 */

import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import {
  childEnv,
  freePort,
  ROOT,
  runCli,
  type ServerProcess,
  startProcess,
  tempDataDir,
} from '../test/helpers/process.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'

const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 60)
const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const TICKS = 100 // clock ticks a second (getconf CLK_TCK on Linux)

function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  // utime and stime are fields 14 and 15 of the line; 12 and 13 after the command
  return (Number(fields[11]) + Number(fields[12])) / TICKS
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A webhook receiver that resolves a waiter per delivery. */
async function receiver() {
  const waiters: Array<() => void> = []
  const server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      response.writeHead(200)
      response.end('ok')
      waiters.shift()?.()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    next: () => new Promise<void>((resolve) => waiters.push(resolve)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

async function measure(label: string, env: NodeJS.ProcessEnv, keyOf: (server: ServerProcess) => Promise<string>) {
  const hook = await receiver()
  const started = performance.now()
  const server = await startProcess(
    process.execPath,
    [path.join(ROOT, 'src/cli/main.ts'), 'serve', '--json'],
    env,
    (output) => /"url":"(http[^"]+)"/.exec(output)?.[1] ?? null,
  )
  const pid = server.child.pid!
  try {
    const key = await keyOf(server)
    const call = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(`${server.url}${url}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      if (response.status >= 300) throw new Error(`${method} ${url}: ${response.status} ${await response.text()}`)
      return (await response.json()) as Record<string, unknown>
    }
    const subscription = await call('POST', '/v1/webhook-subscriptions', {
      url: hook.url,
      events: ['contact.created'],
    })
    const deliver = async () => {
      const received = hook.next()
      const t0 = performance.now()
      await call('POST', `/v1/webhook-subscriptions/${subscription.id}/test`, {})
      await received
      return performance.now() - t0
    }
    await deliver()
    const untilMinute = 60_000 - (performance.now() - started)
    if (untilMinute > 0) await sleep(untilMinute)
    const rssAtMinute = rssMb(pid)
    const cpuBefore = cpuSeconds(pid)
    const idleStart = performance.now()
    await sleep(IDLE_SECONDS * 1000)
    const cpuShare = (cpuSeconds(pid) - cpuBefore) / ((performance.now() - idleStart) / 1000)
    const rssAfterIdle = rssMb(pid)
    const first = await deliver()
    const warm = [await deliver(), await deliver(), await deliver()].sort((a, b) => a - b)[1]
    console.log(
      `${label.padEnd(11)} RSS a minute after the start ${rssAtMinute.toFixed(0)} MB (after ${IDLE_SECONDS} s idle ${rssAfterIdle.toFixed(0)} MB), ` +
        `CPU while idle ${(cpuShare * 100).toFixed(2)} % of a core, ` +
        `first job after the idle period ${first.toFixed(1)} ms, warm ${warm.toFixed(1)} ms`,
    )
  } finally {
    await server.stop()
    await hook.close()
  }
}

const firstKey = async (server: ServerProcess) => {
  const key = /HEROLD_API_KEY=(hk_[A-Za-z0-9_-]+)/.exec(server.output())?.[1]
  if (!key) throw new Error(`no first-start key:\n${server.output()}`)
  return key
}

console.log(`idle server: ${IDLE_SECONDS} s idle, sampled from /proc`)
if (!process.env.BENCH_POSTGRES_ONLY) {
  await measure(
    'embedded',
    childEnv({
      HEROLD_DATA_DIR: tempDataDir(),
      PORT: String(await freePort()),
      HEROLD_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'warn',
    }),
    firstKey,
  )
}
if (!process.env.BENCH_EMBEDDED_ONLY) {
  const scratch = await createScratchDatabase(ADMIN_URL, 'herold_bench_idle')
  try {
    const env = childEnv({
      DATABASE_URL: scratch.url,
      HEROLD_SECRET_KEY: randomBytes(32).toString('base64'),
      PORT: String(await freePort()),
      HEROLD_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'warn',
    })
    await measure('PostgreSQL', env, async () => {
      const account = await runCli(['accounts', 'create', '--name', 'Idle', '--json'], env)
      const { id } = JSON.parse(account.stdout) as { id: string }
      const key = await runCli(['keys', 'create', '--account', id, '--name', 'bench', '--scopes', 'all', '--json'], env)
      return (JSON.parse(key.stdout) as { key: string }).key
    })
  } finally {
    await scratch.drop()
  }
}
