/**
 * Webhook delivery benchmark: contact.created events against one receiver on loopback, in a process of its own
 * (bench/webhook-receiver.ts), as a real receiver runs on another machine.
 *
 *   node bench/webhooks.ts                      embedded PGlite (in memory)
 *   DATABASE_URL=postgres://... node bench/webhooks.ts
 *
 * Prints deliveries per second and the commit-to-receipt latency (p50/p99), beside the receiver's own capacity
 * measured in the same run with the same per-subscription concurrency: signed POSTs from this process as fast as
 * that concurrency allows, after a warm-up round, once before the phases and once after the drain; the ratios are to
 * the mean of the two (both printed). Until 2026-11-27 the receiver ran in this process, so each delivery also paid
 * for its own receipt on Herold's event loop, and the baseline was a client and a receiver sharing one thread.
 *
 * A burst is BENCH_EVENTS events committed by BENCH_WRITERS (default 32) writers at once, one event a transaction, as
 * concurrent API requests and workers make them (on PostgreSQL the writers have their own pool, as an API process
 * beside the worker process would; embedded they share the one connection), delivered while the writing goes on; then
 * the same number recorded in one transaction, as a contact import writes its contact.created events. A backlog
 * (BENCH_BACKLOG events, default BENCH_EVENTS, committed while the workers are stopped) is then drained to show the
 * delivery path's own rate, with the process's CPU time per delivery (on PGlite the database's included) and, on
 * PostgreSQL, statements per delivery (by kind with BENCH_STATEMENTS=1). Last, events committed at BENCH_RATE a second
 * (default 1,000; several writers at once) for BENCH_RATE_SECONDS (default 3): the commit-to-first-attempt latency
 * p50/p99 (the goal: p99 under 1 s at 1,000 events/s on PostgreSQL).
 */

import { fork } from 'node:child_process'
import { createHmac, randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import pg from 'pg'
import { Pool } from 'undici'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { PER_SUBSCRIPTION_CONCURRENCY } from '../src/modules/webhooks/webhooks.worker.ts'
import { createAccount, createApiKey, setPlan } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { recordEvent, recordEvents } from '../src/platform/events/events.ts'
import { jobRunnerFor } from '../src/platform/jobs/runner.ts'
import { memoryRateLimiter } from '../src/platform/rate-limit/rate-limiter.ts'
import { buildServices, moduleJobs, mountedModules } from '../src/services.ts'

const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000)
const PACED_EVENTS = 300
const PACED_PER_SECOND = 50
const BACKLOG_EVENTS = Number(process.env.BENCH_BACKLOG ?? EVENTS)
const RATE = Number(process.env.BENCH_RATE ?? 1_000)
const RATE_SECONDS = Number(process.env.BENCH_RATE_SECONDS ?? 3)
const WRITERS = Number(process.env.BENCH_WRITERS ?? 32)
const STATEMENT_KINDS = process.env.BENCH_STATEMENTS === '1'
/** BENCH_DRAIN_ONLY=1: only the backlog drain (the delivery path's own cost, for profiling and before/after runs) */
const DRAIN_ONLY = process.env.BENCH_DRAIN_ONLY === '1'
/** BENCH_PROFILE=FILE: a CPU profile of the drain alone written to FILE (open it in Chrome's DevTools) */
const PROFILE = process.env.BENCH_PROFILE

/** statements sent to PostgreSQL by this process (BEGIN and COMMIT included) */
let statements = 0
/** statements by their first words (BENCH_STATEMENTS=1), counted while `countKinds` is set */
const kinds = new Map<string, number>()
let countKinds = false
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  statements++
  if (STATEMENT_KINDS && countKinds) {
    const first = args[0] as string | { text?: string }
    const text = (typeof first === 'string' ? first : (first?.text ?? '')).replace(/\s+/g, ' ').trim().slice(0, 70)
    kinds.set(text, (kinds.get(text) ?? 0) + 1)
  }
  return query.apply(this, args)
} as typeof pg.Client.prototype.query

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

/**
 * The receiver, in a process of its own (bench/webhook-receiver.ts): it verifies the signature, deduplicates and
 * answers 204. `receivedAt` holds when each delivery arrived, in this process's performance.now() time.
 */
async function startReceiver() {
  const child = fork(new URL('./webhook-receiver.ts', import.meta.url), { execArgv: process.execArgv })
  let epoch = 0
  const state = { receivedAt: new Map<string, number>(), bad: 0, onReceive: () => {} }
  const url = await new Promise<string>((resolve, reject) => {
    child.once('error', reject)
    child.on(
      'message',
      (message: { url?: string; received?: Array<[string, number]>; bad?: number; epoch?: number }) => {
        if (message.url) resolve(message.url)
        if (!message.received || message.epoch !== epoch) return
        state.bad = message.bad ?? 0
        for (const [id, at] of message.received)
          if (!state.receivedAt.has(id)) state.receivedAt.set(id, at - performance.timeOrigin)
        state.onReceive()
      },
    )
  })
  return {
    state,
    url,
    setSecret: (secret: string) => child.send({ secret }),
    /** forgets what was received; a late report of before is dropped */
    clear: () => {
      state.receivedAt.clear()
      child.send({ clear: ++epoch })
    },
    close: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve())
        child.send({ close: true })
      }),
  }
}

/** The receiver's own capacity: signed POSTs as fast as the same concurrency allows. */
async function receiverCapacity(receiver: Awaited<ReturnType<typeof startReceiver>>, count: number, secret: string) {
  receiver.setSecret(secret)
  const pool = new Pool(receiver.url, { connections: PER_SUBSCRIPTION_CONCURRENCY })
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: PER_SUBSCRIPTION_CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++
        const body = JSON.stringify({
          id: `contact.created:baseline-${i}`,
          event: 'contact.created',
          created_at: new Date().toISOString(),
          data: { i },
        })
        const timestamp = Math.floor(Date.now() / 1000)
        const signature = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')
        const response = await pool.request({
          path: '/hooks',
          method: 'POST',
          body,
          headers: {
            'content-type': 'application/json',
            'x-service-delivery': `contact.created:baseline-${i}`,
            'x-service-timestamp': String(timestamp),
            'x-service-signature': `v1=${signature}`,
          },
        })
        await response.body.dump()
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  await pool.close()
  receiver.clear()
  return count / seconds
}

async function main() {
  const receiver = await startReceiver()
  // warmed first (both processes' code optimized, connections open), then measured before the phases and again after
  // the drain; the ratios are to the mean of the two
  await receiverCapacity(receiver, EVENTS, 'whsec_baseline')
  const capacityBefore = await receiverCapacity(receiver, EVENTS, 'whsec_baseline')

  const databaseUrl = process.env.DATABASE_URL || undefined
  const database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: 10 })
  await migrate(database)
  const config = loadConfig(
    {},
    {
      databaseUrl,
      allowPrivateTargets: true,
      workerConcurrency: Number(process.env.HEROLD_WORKER_CONCURRENCY ?? 256),
      secretKey: randomBytes(32).toString('base64'),
    },
  )
  const app = await buildApp({ config, database, clock: systemClock, rateLimiter: memoryRateLimiter() })
  const plan = `bench-${Date.now()}`
  await setPlan(database.orm, { name: plan, contactsLimit: 1000, messagesPerMonth: 1000, webhooksLimit: 5 })
  const account = await createAccount(database.orm, { name: 'Bench', plan })
  const { key } = await createApiKey(database.orm, { accountId: account.id, name: 'bench', scopes: ['webhooks:write'] })
  const created = await app.inject({
    method: 'POST',
    url: '/v1/webhook-subscriptions',
    headers: { authorization: `Bearer ${key}` },
    payload: { url: `${receiver.url}/hooks`, events: ['contact.created'] },
  })
  const secret = (created.json() as { secret: string }).secret
  receiver.setSecret(secret)
  // the writers' own pool on PostgreSQL (an API process beside the worker process); embedded, the one connection
  const writerDatabase = databaseUrl
    ? await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: WRITERS })
    : database
  // A PostgreSQL without autovacuum (the shared development server runs with it off) never analyzes nor vacuums the
  // jobs table: every claim then plans with the statistics of an empty queue over a table of dead rows. Each phase
  // starts from tables vacuumed and analyzed, as autovacuum would leave them.
  const autovacuumOff =
    databaseUrl !== undefined &&
    (await database.query<{ autovacuum: string }>('SHOW autovacuum'))[0]?.autovacuum === 'off'
  const tidy = async () => {
    if (autovacuumOff)
      await database.query('VACUUM ANALYZE jobs, webhook_deliveries, webhook_delivery_attempts, events')
  }
  await tidy()
  const services = buildServices({ config, database, clock: systemClock })
  let workers = jobRunnerFor({ config, database, clock: systemClock }, moduleJobs(mountedModules, services))
  let stopWorkers = await workers.start()

  const emit = async () => {
    const event = await writerDatabase.orm.transaction((tx) =>
      recordEvent(tx, systemClock, {
        accountId: account.id,
        name: 'contact.created',
        data: {
          id: crypto.randomUUID(),
          name: 'Bench',
          email: 'bench@example.com',
          created_at: new Date().toISOString(),
        },
      }),
    )
    return { id: event.wireId, committedAt: performance.now() }
  }
  const allReceived = (count: number) =>
    new Promise<void>((resolve) => {
      const check = () => receiver.state.receivedAt.size >= count && resolve()
      receiver.state.onReceive = check
      check()
    })
  const latencies = (commits: Array<{ id: string; committedAt: number }>) =>
    commits.map((c) => (receiver.state.receivedAt.get(c.id) ?? Number.NaN) - c.committedAt)

  let throughput = 0,
    committedIn = 0,
    burstSeconds = 0,
    bulkThroughput = 0,
    bulkSeconds = 0,
    bulkStart = 0,
    bulkCommitted = 0
  let burstLatency: number[] = [],
    pacedLatency: number[] = []
  if (!DRAIN_ONLY) {
    // Burst: EVENTS events committed by WRITERS writers at once, one a transaction, delivered while the writing goes on.
    const burstStart = performance.now()
    const burst: Array<{ id: string; committedAt: number }> = []
    let written = 0
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (written < EVENTS) {
          written++
          burst.push(await emit())
        }
      }),
    )
    committedIn = (performance.now() - burstStart) / 1000
    await allReceived(EVENTS)
    burstSeconds = (Math.max(...receiver.state.receivedAt.values()) - burstStart) / 1000
    burstLatency = latencies(burst)
    throughput = EVENTS / burstSeconds

    await tidy()
    // Bulk: EVENTS events recorded in one transaction (a contact import's contact.created events).
    receiver.clear()
    bulkStart = performance.now()
    await writerDatabase.orm.transaction((tx) =>
      recordEvents(
        tx,
        systemClock,
        Array.from({ length: EVENTS }, (_, i) => ({
          accountId: account.id,
          name: 'contact.created' as const,
          contactId: null,
          data: { id: crypto.randomUUID(), name: `Bulk ${i}`, created_at: new Date().toISOString() },
        })),
      ),
    )
    bulkCommitted = performance.now()
    await allReceived(EVENTS)
    bulkSeconds = (Math.max(...receiver.state.receivedAt.values()) - bulkCommitted) / 1000
    bulkThroughput = EVENTS / bulkSeconds
    while ((await database.query('SELECT 1 FROM jobs WHERE account_id = $1 LIMIT 1', [account.id])).length > 0)
      await new Promise((r) => setTimeout(r, 20))

    await tidy()
    // Paced: events spaced out, as in normal traffic: the latency the 1-second promise is about.
    receiver.clear()
    const paced: Array<{ id: string; committedAt: number }> = []
    for (let i = 0; i < PACED_EVENTS; i++) {
      paced.push(await emit())
      await new Promise((r) => setTimeout(r, 1000 / PACED_PER_SECOND))
    }
    await allReceived(PACED_EVENTS)
    pacedLatency = latencies(paced)
  }
  // Backlog: events committed while no worker runs, then drained: the delivery path alone, not the writer.
  await stopWorkers()
  receiver.clear()
  for (let i = 0; i < BACKLOG_EVENTS; i++) await emit()
  await tidy()
  const profiler = PROFILE ? new Session() : null
  if (profiler) {
    profiler.connect()
    await profiler.post('Profiler.enable')
    await profiler.post('Profiler.start')
  }
  const backlogStart = performance.now()
  const backlogCpu = process.cpuUsage()
  const backlogStatements = statements
  countKinds = true
  workers = jobRunnerFor({ config, database, clock: systemClock }, moduleJobs(mountedModules, services))
  stopWorkers = await workers.start()
  await allReceived(BACKLOG_EVENTS)
  const backlogSeconds = (Math.max(...receiver.state.receivedAt.values()) - backlogStart) / 1000
  // the last attempts' records: wait until no delivery job is left
  while ((await database.query('SELECT 1 FROM jobs WHERE account_id = $1 LIMIT 1', [account.id])).length > 0)
    await new Promise((r) => setTimeout(r, 20))
  const cpu = process.cpuUsage(backlogCpu)
  if (profiler && PROFILE) {
    const { profile } = await profiler.post('Profiler.stop')
    writeFileSync(PROFILE, JSON.stringify(profile))
    profiler.disconnect()
  }
  const backlogCpuMs = (cpu.user + cpu.system) / 1000 / BACKLOG_EVENTS
  const backlogStatementsEach = (statements - backlogStatements) / BACKLOG_EVENTS
  countKinds = false
  const capacityAfter = await receiverCapacity(receiver, EVENTS, secret)
  const capacity = (capacityBefore + capacityAfter) / 2

  let rateCount = 0,
    rateCommitted = 0
  let rateLatency: number[] = []
  if (!DRAIN_ONLY) {
    await tidy()
    // At a steady rate: events committed by several writers at once, RATE a second, as a busy shop's traffic.
    receiver.clear()
    const rated: Array<{ id: string; committedAt: number }> = []
    rateCount = Math.round(RATE * RATE_SECONDS)
    const rateStart = performance.now()
    const writing: Array<Promise<void>> = []
    for (let i = 0; i < rateCount; i++) {
      const due = rateStart + (i * 1000) / RATE
      const wait = due - performance.now()
      if (wait > 1) await new Promise((r) => setTimeout(r, wait))
      writing.push(emit().then((c) => void rated.push(c)))
    }
    await Promise.all(writing)
    rateCommitted = rateCount / ((performance.now() - rateStart) / 1000)
    await allReceived(rateCount)
    rateLatency = latencies(rated)
  }
  const failed = await database.query<{ error: string | null; status_code: number | null; n: number }>(
    `SELECT error, status_code, count(*)::int AS n FROM webhook_delivery_attempts
     WHERE account_id = $1 AND NOT succeeded GROUP BY 1, 2 ORDER BY 3 DESC`,
    [account.id],
  )

  await stopWorkers()
  await app.close()
  await services.close()
  if (writerDatabase !== database) await writerDatabase.close()
  await database.close()
  await receiver.close()

  const ms = (v: number) => `${v.toFixed(1)} ms`
  console.log(
    `webhook delivery, ${database.kind}, one subscription, per-subscription concurrency ${PER_SUBSCRIPTION_CONCURRENCY}`,
  )
  if (autovacuumOff)
    console.log('  (autovacuum is off: each phase starts after VACUUM ANALYZE of the tables it writes)')
  console.log(
    `  receiver capacity (same concurrency, signed POSTs; its own process):  ${capacity.toFixed(0)} req/s (before ${capacityBefore.toFixed(0)}, after the drain ${capacityAfter.toFixed(0)})`,
  )
  if (!DRAIN_ONLY) {
    console.log(
      `  burst of ${EVENTS} events by ${WRITERS} writers: committed in ${committedIn.toFixed(1)} s (${(EVENTS / committedIn).toFixed(0)}/s), all delivered in ${burstSeconds.toFixed(1)} s`,
    )
    console.log(
      `    deliveries/s:                                      ${throughput.toFixed(0)}  (ratio to receiver capacity ${(throughput / capacity).toFixed(3)})`,
    )
    console.log(
      `    commit-to-receipt latency p50 / p99:               ${ms(percentile(burstLatency, 50))} / ${ms(percentile(burstLatency, 99))}`,
    )
    console.log(
      `  ${EVENTS} events in one transaction (an import, committed in ${((bulkCommitted - bulkStart) / 1000).toFixed(1)} s), delivered in ${bulkSeconds.toFixed(1)} s after the commit: ${bulkThroughput.toFixed(0)}/s  (ratio ${(bulkThroughput / capacity).toFixed(3)})`,
    )
    console.log(`  paced ${PACED_EVENTS} events at ${PACED_PER_SECOND}/s:`)
    console.log(
      `    commit-to-receipt latency p50 / p99:               ${ms(percentile(pacedLatency, 50))} / ${ms(percentile(pacedLatency, 99))}`,
    )
  }
  console.log(
    `  backlog of ${BACKLOG_EVENTS} events drained in ${backlogSeconds.toFixed(1)} s: ${(BACKLOG_EVENTS / backlogSeconds).toFixed(0)} deliveries/s  (ratio ${(BACKLOG_EVENTS / backlogSeconds / capacity).toFixed(3)})`,
  )
  console.log(
    `    CPU of Herold's process per delivery:              ${backlogCpuMs.toFixed(3)} ms${database.kind === 'postgres' ? `, statements per delivery ${backlogStatementsEach.toFixed(2)}` : ''}`,
  )
  if (!DRAIN_ONLY) {
    console.log(`  ${rateCount} events at ${RATE}/s (committed at ${rateCommitted.toFixed(0)}/s):`)
    console.log(
      `    commit-to-first-attempt latency p50 / p99:         ${ms(percentile(rateLatency, 50))} / ${ms(percentile(rateLatency, 99))}`,
    )
  }
  if (STATEMENT_KINDS)
    for (const [text, n] of [...kinds].sort((a, b) => b[1] - a[1]).slice(0, 12))
      console.log(`    ${(n / BACKLOG_EVENTS).toFixed(3)} a delivery: ${text}`)
  console.log(`  signatures that failed verification:                 ${receiver.state.bad}`)
  console.log(
    `  failed attempts (retried later):                     ${failed.map((f) => `${f.error ?? `HTTP ${f.status_code}`} x${f.n}`).join(', ') || 'none'}`,
  )
}

await main()
