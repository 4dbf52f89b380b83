/**
 * Inbound benchmark: signed WhatsApp Cloud API webhooks (one text message each, from 1,000 customers) posted to
 * the running server over loopback.
 *
 *   node bench/inbound.ts                      embedded PGlite (in memory)
 *   DATABASE_URL=postgres://... node bench/inbound.ts
 *
 * Prints messages stored per second (signature checked, contact and conversation found or created, message,
 * message.received and conversation.created written in one transaction) beside the bare HTTP acceptance rate of
 * the same server: a route on it that reads the same raw body and answers 200 without any work. On PostgreSQL it
 * also prints the statements (round trips, BEGIN and COMMIT included) the server sent per stored message; the CPU
 * time of this process and of the database's backends (read from /proc) per request say what each costs.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { Pool } from 'undici'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { hubSignature } from '../src/modules/channels/whatsapp-cloud.provider.ts'
import { createAccount } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import type { HeroldModule } from '../src/platform/module.ts'
import { memoryRateLimiter } from '../src/platform/rate-limit/rate-limiter.ts'
import { buildServices } from '../src/services.ts'

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5_000)
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16)
const CUSTOMERS = 1_000
const APP_SECRET = 'bench-app-secret'
const PHONE_NUMBER_ID = '100200300'

/** The baseline: the same raw-body parsing, no verification, no database. */
const bareAcceptance: HeroldModule = {
  name: 'bench',
  publicRoutes: () => async (app: FastifyInstance) => {
    app.removeAllContentTypeParsers()
    app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
    app.post('/bench/accept', { config: { public: true }, schema: { hide: true } }, async () => ({ ok: true }))
  },
}

function webhook(i: number, run: string): string {
  const from = `4917${String(10_000_000 + (i % CUSTOMERS))}`
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: 'waba',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '4930123456', phone_number_id: PHONE_NUMBER_ID },
              contacts: [{ profile: { name: `Customer ${i % CUSTOMERS}` }, wa_id: from }],
              messages: [
                {
                  from,
                  id: `wamid.${run}.${i}`,
                  timestamp: '1700000000',
                  type: 'text',
                  text: { body: `Nachricht ${i}` },
                },
              ],
            },
          },
        ],
      },
    ],
  })
}

async function post(pool: Pool, path: string, count: number, run: string): Promise<number> {
  let next = 0
  let failed = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const body = webhook(next++, run)
        const response = await pool.request({
          path,
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json', 'x-hub-signature-256': hubSignature(APP_SECRET, body) },
        })
        await response.body.dump()
        if (response.statusCode !== 200) failed++
      }
    }),
  )
  if (failed > 0) throw new Error(`${failed} of ${count} requests to ${path} failed`)
  return count / ((performance.now() - started) / 1000)
}

/** Round trips to PostgreSQL from this process (every pg client query, BEGIN and COMMIT included). */
let roundTrips = 0
const query = pg.Client.prototype.query
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  roundTrips++
  return (query as (...a: unknown[]) => unknown).apply(this, args)
} as typeof query

const cpuMs = (usage: NodeJS.CpuUsage) => (usage.user + usage.system) / 1000

/** CPU time of the given server processes (Linux /proc, on this machine; 0 for a remote server). */
function postgresCpuMs(pids: number[]): number {
  let ticks = 0
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {}
  }
  return ticks * 10
}

async function main() {
  const databaseUrl = process.env.DATABASE_URL || undefined
  const database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: CONCURRENCY + 2 })
  await migrate(database)
  const config = loadConfig(
    {},
    { databaseUrl, dataDir: 'memory://', secretKey: randomBytes(32).toString('base64'), logLevel: 'silent' },
  )
  const app = await buildApp({
    config,
    database,
    clock: systemClock,
    rateLimiter: memoryRateLimiter(),
    extraModules: [bareAcceptance],
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const account = await createAccount(database.orm, { name: 'bench' })
  const services = buildServices({ config, database, clock: systemClock })
  await services.channels.connect(account.id, {
    channel: 'chat',
    provider: 'whatsapp-cloud',
    phoneNumberId: PHONE_NUMBER_ID,
    wabaId: 'waba',
    accessToken: 'unused',
    appSecret: APP_SECRET,
    verifyToken: 'unused',
  })
  const pool = new Pool(url, { connections: CONCURRENCY })
  const inboundPath = `/hooks/whatsapp-cloud/${account.id}`
  // warm-up: JIT, connections, the first contacts
  await post(pool, '/bench/accept', 500, 'warm')
  await post(pool, inboundPath, CUSTOMERS, 'warm')
  // the statistics autovacuum would gather by now (off on some machines; PGlite has none): without them the
  // planner takes the just-filled tables for empty and scans them
  await database.query('ANALYZE contacts, conversations, messages, events, jobs')

  let cpu = process.cpuUsage()
  const bare = await post(pool, '/bench/accept', MESSAGES, 'bare')
  const bareCpu = cpuMs(process.cpuUsage(cpu)) / MESSAGES
  const tripsBefore = roundTrips
  cpu = process.cpuUsage()
  // the backends of this database's connections, before and after the run: a connection the pool opened during the run
  // counts whole (one that closed during it is missed, so the figure is a lower bound)
  const backendPids = async () =>
    database.kind === 'postgres'
      ? (
          await database.query<{ pid: number }>(
            // every connection of the pool, the one asking included (it stores messages too)
            'SELECT pid FROM pg_stat_activity WHERE datname = current_database()',
          )
        ).map((r) => Number(r.pid))
      : []
  const cpuBefore = new Map((await backendPids()).map((pid) => [pid, postgresCpuMs([pid])]))
  const stored = await post(pool, inboundPath, MESSAGES, 'run')
  const storedCpu = cpuMs(process.cpuUsage(cpu)) / MESSAGES
  let databaseCpuMs = 0
  for (const pid of await backendPids()) databaseCpuMs += postgresCpuMs([pid]) - (cpuBefore.get(pid) ?? 0)
  const storedDatabaseCpu = databaseCpuMs / MESSAGES
  const tripsPerMessage = (roundTrips - tripsBefore) / MESSAGES
  const [count] = await database.query<{ n: string }>(
    "SELECT count(*) AS n FROM messages WHERE account_id = $1 AND provider_message_id LIKE 'wamid.run.%'",
    [account.id],
  )
  if (Number(count.n) !== MESSAGES) throw new Error(`stored ${count.n} of ${MESSAGES} messages`)

  console.log(
    `inbound webhooks (${database.kind}, ${MESSAGES} messages from ${CUSTOMERS} customers, ${CONCURRENCY} connections)`,
  )
  console.log(`  bare HTTP acceptance of the same server (raw body, 200):  ${bare.toFixed(0)} req/s`)
  console.log(`  signed webhooks verified and stored:                      ${stored.toFixed(0)} messages/s`)
  console.log(`  ratio stored / bare:                                      ${((stored / bare) * 100).toFixed(1)} %`)
  console.log(
    `  CPU of this process (server and load generator) per request: bare ${bareCpu.toFixed(2)} ms, stored ${storedCpu.toFixed(2)} ms`,
  )
  if (database.kind === 'postgres') {
    console.log(`  round trips to the database per stored message:           ${tripsPerMessage.toFixed(1)}`)
    if (storedDatabaseCpu > 0) {
      console.log(`  CPU of the database's backends per stored message:         ${storedDatabaseCpu.toFixed(2)} ms`)
    }
  }
  await pool.close()
  await app.close()
  await services.close()
  await database.close()
}

await main()
