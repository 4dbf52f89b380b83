/**
 * Statistics benchmark, two parts.
 *
 * 1. Read: BENCH_CONTACTS contacts and BENCH_MESSAGES messages (defaults 1,000,000 and 10,000,000 on PostgreSQL;
 *    100,000 and 1,000,000 on the embedded database, which holds everything in memory here) spread over 90 days,
 *    bulk-inserted in ascending id order (the counters' triggers run; ordered ids keep the load of ten million rows
 *    within minutes on a small machine, and what is measured reads none of these tables), rolled up, then GET /v1/stats?range=90d through the whole request
 *    pipeline BENCH_RUNS times: p50, p95, p99. Beside it, the same-run baseline of what the counters replace: one
 *    count of the messages per day and direction over 90 days, straight from the messages table.
 * 2. Write cost of the counters: the hot write paths' statements (a message insert, a template send's insert and
 *    two status updates, a contact insert and an opt-in update), one per transaction as the app does, BENCH_WRITES
 *    of each with the statistics triggers enabled and disabled, interleaved in blocks in one process so load on the
 *    machine hits both alike. Prints the time per write and the difference.
 *
 *   node bench/stats.ts                                embedded PGlite (in memory)
 *   DATABASE_URL=postgres://... node bench/stats.ts     a fresh database created beside it, dropped after
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { createStatsService } from '../src/modules/stats/index.ts'
import { createAccount, createApiKey } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { type Database, openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { memoryRateLimiter } from '../src/platform/rate-limit/rate-limiter.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'

const adminUrl = process.env.DATABASE_URL || undefined
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? (adminUrl ? 1_000_000 : 100_000))
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? (adminUrl ? 10_000_000 : 1_000_000))
const RUNS = Number(process.env.BENCH_RUNS ?? 300)
const WRITES = Number(process.env.BENCH_WRITES ?? 2_000)
const CHUNK = 500_000

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
const ms = (n: number) => `${n.toFixed(2)} ms`

async function bulkLoad(database: Database, accountId: string) {
  const started = performance.now()
  for (let from = 0; from < CONTACTS; from += CHUNK) {
    await database.query(
      `INSERT INTO contacts (account_id, id, name, phone, optin_chat, created_at)
       SELECT $1, lpad(to_hex(i), 32, '0')::uuid, 'Kunde ' || i, '+49151' || lpad(i::text, 8, '0'),
         (ARRAY['none','pending','confirmed','opted_out'])[1 + i % 4], now() - (i % 90) * interval '1 day'
       FROM generate_series($2::int, $3::int) i`,
      [accountId, from, Math.min(CONTACTS, from + CHUNK) - 1],
    )
  }
  for (let from = 0; from < MESSAGES; from += CHUNK) {
    await database.query(
      `INSERT INTO messages (account_id, id, conversation_id, contact_id, channel, direction, type, text, created_at)
       SELECT $1, lpad(to_hex(i), 32, '0')::uuid, lpad(to_hex(i / 20), 32, '0')::uuid,
         lpad(to_hex(i / 20), 32, '0')::uuid, 'chat',
         CASE WHEN i % 3 = 0 THEN 'inbound' ELSE 'outbound' END, 'text', 'Hallo',
         now() - (i % 88) * interval '1 day' - (i % 3600) * interval '1 second'
       FROM generate_series($2::int, $3::int) i`,
      [accountId, from, Math.min(MESSAGES, from + CHUNK) - 1],
    )
  }
  const loaded = performance.now() - started
  const rollupStarted = performance.now()
  const moved = await createStatsService({ config: loadConfig({}, {}), database, clock: systemClock }).rollupAll()
  await database.query('ANALYZE contacts, messages, stats_daily, stats_totals, stats_deltas')
  return { loaded, rolledUp: performance.now() - rollupStarted, moved }
}

async function readPart(database: Database, databaseUrl: string | undefined) {
  const account = await createAccount(database.orm, { name: 'bench' })
  const { key } = await createApiKey(database.orm, { accountId: account.id, name: 'bench', scopes: ['stats:read'] })
  const load = await bulkLoad(database, account.id)
  console.log(
    `  loaded ${CONTACTS.toLocaleString('en')} contacts and ${MESSAGES.toLocaleString('en')} messages in ${(load.loaded / 1000).toFixed(1)} s; rollup of ${load.moved} counter rows in ${ms(load.rolledUp)}`,
  )
  await database.query(
    "INSERT INTO plans (name, contacts_limit, messages_per_month, webhooks_limit, requests_per_minute) VALUES ('bench-stats', 10000000, 10000000, 10, 10000000) ON CONFLICT (name) DO NOTHING",
  )
  await database.query("UPDATE accounts SET plan = 'bench-stats' WHERE id = $1", [account.id])
  const config = loadConfig(
    {},
    { databaseUrl, dataDir: 'memory://', secretKey: randomBytes(32).toString('base64'), logLevel: 'silent' },
  )
  const app = await buildApp({ config, database, clock: systemClock, rateLimiter: memoryRateLimiter() })
  await app.ready()
  const headers = { authorization: `Bearer ${key}` }
  const times: number[] = []
  let body = ''
  for (let i = 0; i < RUNS + 20; i++) {
    const started = performance.now()
    const response = await app.inject({ method: 'GET', url: '/v1/stats?range=90d', headers })
    if (response.statusCode !== 200) throw new Error(`GET /v1/stats: ${response.statusCode} ${response.body}`)
    if (i >= 20) times.push(performance.now() - started)
    body = response.body
  }
  times.sort((a, b) => a - b)
  const stats = JSON.parse(body).stats
  const inRange = stats.totals.messages_in + stats.totals.messages_out
  if (stats.contacts.total !== CONTACTS || inRange !== MESSAGES) {
    throw new Error(`counters disagree: ${stats.contacts.total} contacts, ${inRange} messages`)
  }
  console.log(
    `  GET /v1/stats?range=90d (${RUNS} requests): p50 ${ms(quantile(times, 0.5))}, p95 ${ms(quantile(times, 0.95))}, p99 ${ms(quantile(times, 0.99))}; totals match the rows loaded`,
  )
  const countStarted = performance.now()
  await database.query(
    `SELECT (created_at AT TIME ZONE 'Europe/Berlin')::date AS day, direction, count(*) FROM messages
     WHERE account_id = $1 AND created_at > now() - interval '90 days' GROUP BY 1, 2`,
    [account.id],
  )
  console.log(`  baseline, counting the messages table per day once instead: ${ms(performance.now() - countStarted)}`)
  await app.close()
}

const TRIGGERS: Array<[string, string]> = [
  ['messages', 'messages_stats'],
  ['template_sends', 'template_sends_stats_insert'],
  ['template_sends', 'template_sends_stats_update'],
  ['contacts', 'contacts_stats_insert'],
  ['contacts', 'contacts_stats_update'],
]

async function setTriggers(database: Database, on: boolean) {
  for (const [table, trigger] of TRIGGERS) {
    await database.query(`ALTER TABLE ${table} ${on ? 'ENABLE' : 'DISABLE'} TRIGGER ${trigger}`)
  }
}

/** The hot paths' statements, each in its own transaction as the app commits them. */
async function writes(
  database: Database,
  accountId: string,
  n: number,
): Promise<{ message: number; send: number; contact: number }> {
  const took = { message: 0, send: 0, contact: 0 }
  for (let i = 0; i < n; i++) {
    let started = performance.now()
    await database.query(
      `INSERT INTO messages (account_id, id, conversation_id, contact_id, channel, direction, type, text, created_at)
       VALUES ($1, $2, $2, $2, 'chat', 'outbound', 'text', 'Hallo', now())`,
      [accountId, randomUUID()],
    )
    took.message += performance.now() - started
    const sendId = randomUUID()
    started = performance.now()
    await database.query(
      `INSERT INTO template_sends (account_id, id, contact_id, template_id, status, created_at, updated_at)
       VALUES ($1, $2, $2, $2, 'queued', now(), now())`,
      [accountId, sendId],
    )
    for (const status of ['sent', 'delivered']) {
      await database.query(
        'UPDATE template_sends SET status = $3, updated_at = now() WHERE account_id = $1 AND id = $2',
        [accountId, sendId, status],
      )
    }
    took.send += performance.now() - started
    const contactId = randomUUID()
    started = performance.now()
    await database.query(
      `INSERT INTO contacts (account_id, id, name, email, created_at) VALUES ($1, $2, 'Kunde', $3, now())`,
      [accountId, contactId, `${contactId}@x.example`],
    )
    await database.query("UPDATE contacts SET optin_chat = 'confirmed' WHERE account_id = $1 AND id = $2", [
      accountId,
      contactId,
    ])
    took.contact += performance.now() - started
  }
  return took
}

async function writePart(database: Database) {
  const account = await createAccount(database.orm, { name: 'bench writes' })
  await writes(database, account.id, 200) // warm-up
  const total = { on: { message: 0, send: 0, contact: 0 }, off: { message: 0, send: 0, contact: 0 } }
  const blocks = 10
  for (let b = 0; b < blocks; b++) {
    for (const on of b % 2 ? [true, false] : [false, true]) {
      await setTriggers(database, on)
      const took = await writes(database, account.id, WRITES / blocks)
      const into = on ? total.on : total.off
      for (const k of Object.keys(took) as Array<keyof typeof took>) into[k] += took[k]
    }
  }
  await setTriggers(database, true)
  const per = (t: number) => (t / WRITES) * 1000
  const rows: Array<[string, keyof typeof total.on]> = [
    ['message insert', 'message'],
    ['template send: insert + 2 status updates', 'send'],
    ['contact insert + opt-in update', 'contact'],
  ]
  console.log(`  write cost of the counters (${WRITES} of each, one statement per transaction, interleaved):`)
  for (const [label, k] of rows) {
    const off = per(total.off[k])
    const on = per(total.on[k])
    console.log(
      `    ${label.padEnd(42)} without ${off.toFixed(0)} µs, with ${on.toFixed(0)} µs (+${(on - off).toFixed(0)} µs, ${(((on - off) / off) * 100).toFixed(1)} %)`,
    )
  }
}

async function main() {
  const scratch = adminUrl ? await createScratchDatabase(adminUrl, 'herold_bench_stats') : null
  const databaseUrl = scratch?.url
  const database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: 4 })
  try {
    await migrate(database)
    console.log(`statistics (${database.kind})`)
    if (WRITES > 0) await writePart(database)
    await readPart(database, databaseUrl)
  } finally {
    await database.close()
    await scratch?.drop()
  }
}

await main()
