/**
 * Live updates benchmark (issue 48): 500 open event streams (GET /app/events) of one account and 500 of 50 other
 * accounts while customers' messages arrive through the sandbox's inbound webhook (POST /v1/sandbox/inbound).
 *
 *   node bench/live.ts                         embedded PGlite (in memory)
 *   DATABASE_URL=postgres://... node bench/live.ts
 *
 * This process is the server (buildApp on loopback, as bench/inbound.ts runs it), so its RSS is the server's; the
 * streams and the webhooks come from a child process (this file with --clients), which timestamps both ends on its
 * own clock. Prints:
 * - the time from a webhook's 200 to its message's event on each of the account's 500 streams, p50/p99/max (an
 *   event can overtake its 200: both leave the server at the commit);
 * - the server's RSS per open stream (RSS with the 1,000 streams open minus RSS before, after a GC, / 1,000);
 * - the inbound rate (16 connections, as fast as it goes) without streams and with the 1,000 open, in the same run.
 * Env: BENCH_STREAMS (500 per side), BENCH_RATE (100/s), BENCH_SECONDS (20), BENCH_BLAST (2,000 messages).
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { createMember } from '../src/modules/people/index.ts'
import { createAccount, createApiKey, setPlan } from '../src/platform/auth/accounts.service.ts'
import { SCOPES } from '../src/platform/auth/scopes.ts'
import { createSession, SESSION_COOKIE } from '../src/platform/auth/sessions.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { memoryRateLimiter } from '../src/platform/rate-limit/rate-limiter.ts'
import { buildServices } from '../src/services.ts'

const STREAMS = Number(process.env.BENCH_STREAMS ?? 500)
const RATE = Number(process.env.BENCH_RATE ?? 100)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20)
const BLAST = Number(process.env.BENCH_BLAST ?? 1000)
const CONCURRENCY = 16
/** the customers who write (their contacts and conversations made in the warm-up) */
const CUSTOMERS = 200
/** streams per member (the server allows 10) */
const PER_MEMBER = 10
const OTHER_ACCOUNTS = 50

/** What the server hands the load generator. */
interface Plan {
  base: string
  key: string
  /** session cookies of the measured account's streams, and of the others' */
  mine: string[]
  others: string[]
}

type ToClients =
  | { go: 'blast'; run: string }
  | { go: 'open' }
  | { go: 'steady' }
  | { go: 'texts'; ids: Record<string, string> }
  | { go: 'quit' }
type FromClients =
  | { done: 'blast'; rate: number }
  | { done: 'open'; open: number; refused: number }
  | { done: 'steady'; posted: number; rate: number }
  | { done: 'latency'; samples: number; p50: number; p99: number; max: number; missing: number; otherEvents: number }

const now = () => performance.timeOrigin + performance.now()
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]

// ---------------------------------------------------------------------------------------------------------------
// the load generator (child process)

async function clients(plan: Plan): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY })
  const send = (message: FromClients) => process.send?.(message)
  let counter = 0

  function post(text: string): Promise<number> {
    const from = `+4916${String(10_000_000 + (counter++ % CUSTOMERS))}`
    const body = JSON.stringify({ from, text, name: `Kunde ${counter % CUSTOMERS}` })
    return new Promise((resolve, reject) => {
      const request = http.request(
        `${plan.base}/v1/sandbox/inbound`,
        {
          method: 'POST',
          agent,
          headers: { authorization: `Bearer ${plan.key}`, 'content-type': 'application/json' },
        },
        (response) => {
          response.resume()
          response.on('end', () =>
            response.statusCode === 200 ? resolve(now()) : reject(new Error(`inbound: ${response.statusCode}`)),
          )
        },
      )
      request.on('error', reject)
      request.end(body)
    })
  }

  async function blast(run: string, count: number): Promise<number> {
    let next = 0
    const started = now()
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < count) await post(`${run}-${next++}`)
      }),
    )
    return count / ((now() - started) / 1000)
  }

  // arrivals on the measured account's streams: message id → times
  const arrivals = new Map<string, number[]>()
  let otherEvents = 0
  function open(cookie: string, measured: boolean): Promise<boolean> {
    return new Promise((resolve) => {
      const request = http.get(
        `${plan.base}/app/events`,
        { agent: false, headers: { cookie, accept: 'text/event-stream' } },
        (response) => {
          if (response.statusCode !== 200) {
            response.resume()
            resolve(false)
            return
          }
          response.setEncoding('utf8')
          let text = ''
          let ready = false
          response.on('data', (chunk: string) => {
            const at = now()
            if (!measured) {
              if (!ready && chunk.includes('event: ready')) {
                ready = true
                resolve(true)
              } else otherEvents += chunk.split('event: inbox').length - 1
              return
            }
            text += chunk
            let end = text.indexOf('\n\n')
            while (end >= 0) {
              const block = text.slice(0, end)
              text = text.slice(end + 2)
              end = text.indexOf('\n\n')
              if (block.includes('event: ready') && !ready) {
                ready = true
                resolve(true)
              }
              if (!block.includes('event: inbox')) continue
              const data = JSON.parse(block.slice(block.indexOf('data: ') + 6)) as {
                changes: Array<{ type: string; message_id?: string }>
              }
              for (const change of data.changes) {
                if (change.type !== 'message' || !change.message_id) continue
                let times = arrivals.get(change.message_id)
                if (!times) {
                  times = []
                  arrivals.set(change.message_id, times)
                }
                times.push(at)
              }
            }
          })
        },
      )
      request.on('error', () => resolve(false))
    })
  }

  const posted = new Map<string, number>()
  process.on('message', async (message: ToClients) => {
    if (message.go === 'blast') {
      send({ done: 'blast', rate: await blast(message.run, message.run === 'warm' ? CUSTOMERS : BLAST) })
    } else if (message.go === 'open') {
      let refused = 0
      // a few at a time, as pages open
      const all = [...plan.mine.map((c) => [c, true] as const), ...plan.others.map((c) => [c, false] as const)]
      for (let i = 0; i < all.length; i += 50) {
        const opened = await Promise.all(all.slice(i, i + 50).map(([cookie, measured]) => open(cookie, measured)))
        refused += opened.filter((ok) => !ok).length
      }
      send({ done: 'open', open: all.length - refused, refused })
    } else if (message.go === 'steady') {
      // RATE webhooks per second, each on its own (open loop): a slow answer does not slow the next
      const total = RATE * SECONDS
      const started = now()
      const pending: Promise<void>[] = []
      for (let i = 0; i < total; i++) {
        const due = started + (i * 1000) / RATE
        const wait = due - now()
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
        const text = `steady-${i}`
        pending.push(post(text).then((at) => void posted.set(text, at)))
      }
      await Promise.all(pending)
      const rate = total / ((Math.max(...posted.values()) - started) / 1000)
      // the last events arrive
      await new Promise((resolve) => setTimeout(resolve, 2000))
      send({ done: 'steady', posted: posted.size, rate })
    } else if (message.go === 'texts') {
      const latencies: number[] = []
      let missing = 0
      for (const [id, text] of Object.entries(message.ids)) {
        const at200 = posted.get(text)
        if (at200 === undefined) continue
        const times = arrivals.get(id) ?? []
        missing += plan.mine.length - times.length
        for (const t of times) latencies.push(t - at200)
      }
      latencies.sort((a, b) => a - b)
      send({
        done: 'latency',
        samples: latencies.length,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: latencies.at(-1) ?? Number.NaN,
        missing,
        otherEvents,
      })
    } else if (message.go === 'quit') process.exit(0)
  })
}

// ---------------------------------------------------------------------------------------------------------------
// the server (this process)

function ask<T extends FromClients['done']>(child: ChildProcess, message: ToClients, done: T) {
  return new Promise<Extract<FromClients, { done: T }>>((resolve) => {
    const listener = (answer: FromClients) => {
      if (answer.done !== done) return
      child.off('message', listener)
      resolve(answer as Extract<FromClients, { done: T }>)
    }
    child.on('message', listener)
    child.send(message)
  })
}

async function rssAfterGc(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.()
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  return process.memoryUsage().rss
}

async function server(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL || undefined
  const database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: CONCURRENCY + 2 })
  await migrate(database)
  const config = loadConfig(
    {},
    { databaseUrl, dataDir: 'memory://', secretKey: randomBytes(32).toString('base64'), logLevel: 'silent' },
  )
  const services = buildServices({ config, database, clock: systemClock, rateLimiter: memoryRateLimiter() })
  const app = await buildApp({ config, database, clock: systemClock, rateLimiter: memoryRateLimiter(), services })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const db = database.orm
  const plan = `bench-live-${Date.now()}`
  await setPlan(db, {
    name: plan,
    contactsLimit: 100_000,
    messagesPerMonth: 100_000_000,
    webhooksLimit: 1,
    requestsPerMinute: 1_000_000,
  })
  const run = Date.now().toString(36)
  const sessionsOf = async (accountId: string, members: number, streams: number) => {
    const cookies: string[] = []
    for (let m = 0; m < members; m++) {
      const user = await createMember(db, {
        accountId,
        email: `live-${run}-${accountId.slice(0, 8)}-${m}@bench.example`,
        name: `Member ${m}`,
        password: 'bench password 12',
        role: 'member',
      })
      for (let s = 0; s < streams / members; s++) {
        const { token } = await createSession(db, systemClock, { userId: user.id, accountId })
        cookies.push(`${SESSION_COOKIE}=${token}`)
      }
    }
    return cookies
  }
  const account = await createAccount(db, { name: 'bench live', plan })
  await services.channels.connect(account.id, { channel: 'chat', provider: 'sandbox' })
  const { key } = await createApiKey(db, { accountId: account.id, name: 'bench', scopes: [...SCOPES] })
  const mine = await sessionsOf(account.id, Math.ceil(STREAMS / PER_MEMBER), STREAMS)
  const others: string[] = []
  for (let a = 0; a < OTHER_ACCOUNTS; a++) {
    const other = await createAccount(db, { name: `bench other ${a}`, plan })
    others.push(
      ...(await sessionsOf(other.id, Math.ceil(STREAMS / OTHER_ACCOUNTS / PER_MEMBER), STREAMS / OTHER_ACCOUNTS)),
    )
  }

  const child = fork(fileURLToPath(import.meta.url), ['--clients'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  await new Promise((resolve) => child.once('message', resolve))
  child.send({ plan: { base, key, mine, others } satisfies Plan } as never)

  // warm-up: JIT, connections, the customers' contacts and conversations
  await ask(child, { go: 'blast', run: 'warm' }, 'blast')
  await database.query('ANALYZE contacts, conversations, messages, events, jobs')
  const cpuMs = (since: NodeJS.CpuUsage) => {
    const used = process.cpuUsage(since)
    return (used.user + used.system) / 1000
  }
  let cpu = process.cpuUsage()
  const without = await ask(child, { go: 'blast', run: 'without' }, 'blast')
  const withoutCpu = cpuMs(cpu) / BLAST

  const rssBefore = await rssAfterGc()
  const heapBefore = process.memoryUsage()
  const opened = await ask(child, { go: 'open' }, 'open')
  const rssWith = await rssAfterGc()
  const heapWith = process.memoryUsage()
  const heapPerStream =
    (heapWith.heapUsed + heapWith.external - heapBefore.heapUsed - heapBefore.external) / opened.open
  const perStream = (rssWith - rssBefore) / opened.open

  const steady = await ask(child, { go: 'steady' }, 'steady')
  const rows = await database.query<{ id: string; text: string }>(
    "SELECT id, text FROM messages WHERE account_id = $1 AND direction = 'inbound' AND text LIKE 'steady-%'",
    [account.id],
  )
  const latency = await ask(child, { go: 'texts', ids: Object.fromEntries(rows.map((r) => [r.id, r.text])) }, 'latency')
  cpu = process.cpuUsage()
  const withStreams = await ask(child, { go: 'blast', run: 'with' }, 'blast')
  const withCpu = cpuMs(cpu) / BLAST
  child.send({ go: 'quit' } satisfies ToClients)

  console.log(
    `live updates (${database.kind}; server in this process, streams and webhooks from a child process; 2 cores shared)`,
  )
  console.log(
    `  streams open: ${opened.open} (${STREAMS} of the measured account, ${others.length} of ${OTHER_ACCOUNTS} others), refused ${opened.refused}`,
  )
  console.log(
    `  webhook 200 → event on each of the account's streams, ${RATE}/s for ${SECONDS} s: p50 ${latency.p50.toFixed(0)} ms, p99 ${latency.p99.toFixed(0)} ms, max ${latency.max.toFixed(0)} ms (${latency.samples} samples, ${latency.missing} missing; ${steady.rate.toFixed(0)}/s reached)`,
  )
  console.log(`  events on the other accounts' streams during that: ${latency.otherEvents}`)
  console.log(
    `  server RSS: ${(rssBefore / 2 ** 20).toFixed(0)} MB → ${(rssWith / 2 ** 20).toFixed(0)} MB with the streams open: ${(perStream / 1024).toFixed(1)} KB per stream (heap and external: ${(heapPerStream / 1024).toFixed(1)} KB per stream)`,
  )
  console.log(
    `  inbound (${CONCURRENCY} connections, ${BLAST} messages): ${without.rate.toFixed(0)}/s without streams, ${withStreams.rate.toFixed(0)}/s with ${opened.open} open: ratio ${(withStreams.rate / without.rate).toFixed(2)}; server CPU ${withoutCpu.toFixed(2)} → ${withCpu.toFixed(2)} ms a message`,
  )
  await app.close()
  await services.close()
  await database.close()
  process.exit(0)
}

if (process.argv.includes('--clients')) {
  process.once('message', (message: { plan: Plan }) => void clients(message.plan))
  process.send?.({ ready: true })
} else {
  await server()
}
