// Custom fields in audiences (issue 33): the newsletter recipients estimate at BENCH_CONTACTS contacts (default
// 1,000,000) in one account with 5 custom fields (text, number, date, boolean, choice), p50/p95 of typical segments
// against the same-run baseline of an estimate without field conditions (goal: p95 <= 300 ms), on a fresh PostgreSQL
// database; then the same with a GIN index on contacts.fields (jsonb_path_ops), and what that index costs an insert of
// BENCH_INSERT_ROWS contacts with fields (default 100,000).
// Usage: node bench/fields.ts   (BENCH_ADMIN_URL=postgres://postgres@127.0.0.1:5432/postgres, BENCH_CONTACTS, BENCH_RUNS)
//        BENCH_ESTIMATE_ONLY=1: the estimates without the GIN index only
//        BENCH_KEEP=herold_bench_fields_x node bench/fields.ts   (seeds that database once and keeps it: for EXPLAIN and
//        for running candidate and baseline code back to back on the same data)
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { loadConfig } from '../src/config.ts'
import { createAccount, getAccount } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { memoryRateLimiter } from '../src/platform/rate-limit/rate-limiter.ts'
import { buildServices } from '../src/services.ts'

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 30)
const INSERT_ROWS = Number(process.env.BENCH_INSERT_ROWS ?? 100_000)

const ms = (t: number) => `${t.toFixed(1)} ms`
function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  return { p50: at(0.5), p95: at(0.95) }
}

const KEEP = process.env.BENCH_KEEP
if (KEEP !== undefined && !/^[a-z_][a-z0-9_]*$/.test(KEEP)) throw new Error('BENCH_KEEP must be a plain database name')
const name = KEEP ?? `herold_bench_fields_${Date.now()}`
const admin = new pg.Client({ connectionString: ADMIN_URL })
await admin.connect()
const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount === 1
if (!exists) await admin.query(`CREATE DATABASE ${name}`)
await admin.end()
const url = ADMIN_URL.replace(/\/[^/]*$/, `/${name}`)
const database = await openDatabase({ databaseUrl: url, dataDir: 'memory://', poolSize: 4 })

try {
  await migrate(database)
  const [kept] = await database.query<{ id: string }>(`SELECT id FROM accounts WHERE name = 'Bench fields' LIMIT 1`)
  const account = kept
    ? await getAccount(database.orm, kept.id)
    : await createAccount(database.orm, { name: 'Bench fields' })
  if (!kept)
    await database.query(
      `INSERT INTO contact_fields (account_id, key, label, type, options, position) VALUES
       ($1, 'customer_no', 'Kundennummer', 'text', NULL, 0),
       ($1, 'visits', 'Besuche', 'number', NULL, 1),
       ($1, 'birthday', 'Geburtstag', 'date', NULL, 2),
       ($1, 'vip', 'VIP', 'boolean', NULL, 3),
       ($1, 'level', 'Stufe', 'choice', '["gold","silver","bronze"]', 4)`,
      [account.id],
    )

  // the fields of contact i: a customer number for 90 %, visits 0-199, a birthday for 70 % (spread over the year), vip
  // for 10 %, level gold 5 % / silver 19 % / bronze 19 % / none; four in five confirmed for chat
  const fieldsOf = (i: string) => `jsonb_strip_nulls(jsonb_build_object(
      'customer_no', CASE WHEN ${i} % 10 <> 0 THEN 'K-' || ${i} END,
      'visits', (${i}::bigint * 7919) % 200,
      'birthday', CASE WHEN ${i} % 10 < 7 THEN to_char(date '1950-01-01' + ((${i} * 2654435761::bigint) % 20000)::int, 'YYYY-MM-DD') END,
      'vip', CASE WHEN ${i} % 10 = 3 THEN true WHEN ${i} % 10 = 4 THEN false END,
      'level', CASE WHEN (${i} / 3) % 20 = 0 THEN 'gold' WHEN (${i} / 3) % 5 = 1 THEN 'silver'
        WHEN (${i} / 3) % 4 = 2 THEN 'bronze' END))`
  const insert = (from: number, to: number) =>
    database.query(
      `INSERT INTO contacts (account_id, id, name, phone, optin_chat, source, fields, created_at)
       SELECT $1::uuid, gen_random_uuid(), 'Kunde ' || i, '+49172' || lpad(i::text, 9, '0'),
         CASE WHEN i % 5 = 4 THEN 'none' ELSE 'confirmed' END, 'bench', ${fieldsOf('i')}, now()
       FROM generate_series($2::int, $3::int) AS i`,
      [account.id, from, to],
    )
  if (!kept) {
    const [{ indexdef }] = await database.query<{ indexdef: string }>(
      `SELECT indexdef FROM pg_indexes WHERE indexname = 'contacts_search_trgm_idx'`,
    )
    await database.query('DROP INDEX contacts_search_trgm_idx')
    const seeded = performance.now()
    for (let from = 1; from <= CONTACTS; from += 250_000) await insert(from, Math.min(CONTACTS, from + 249_999))
    await database.query(`SET maintenance_work_mem = '256MB'`)
    await database.query(indexdef)
    await database.query('VACUUM ANALYZE contacts')
    console.log(
      `seeded ${CONTACTS.toLocaleString('en')} contacts with 5 fields in ${((performance.now() - seeded) / 1000).toFixed(1)} s`,
    )
  } else {
    await database.query('DROP INDEX IF EXISTS contacts_fields_gin_bench')
    await database.query('ANALYZE contacts')
    console.log(`kept database ${name}: its ${CONTACTS.toLocaleString('en')} contacts seeded before`)
  }

  const config = loadConfig(
    {},
    { databaseUrl: url, publicUrl: 'http://bench.local', secretKey: randomBytes(32).toString('base64') },
  )
  const services = buildServices({ config, database, clock: systemClock, rateLimiter: memoryRateLimiter() })
  const tenant = { accountId: account.id, account }
  const segments: Array<[string, Record<string, unknown> | null]> = [
    ['baseline: no segment (every confirmed contact)', null],
    ['level equals gold (choice)', { fields: [{ field: 'level', op: 'equals', value: 'gold' }] }],
    ['visits greater_than 150 (number)', { fields: [{ field: 'visits', op: 'greater_than', value: 150 }] }],
    [
      'birthday within the next 7 days (ignore_year)',
      { fields: [{ field: 'birthday', op: 'within_next_days', days: 7, ignore_year: true }] },
    ],
    ['customer_no is_set (text)', { fields: [{ field: 'customer_no', op: 'is_set' }] }],
    [
      'vip equals true and level not_equals bronze',
      {
        fields: [
          { field: 'vip', op: 'equals', value: true },
          { field: 'level', op: 'not_equals', value: 'bronze' },
        ],
      },
    ],
  ]

  async function measure(label: string) {
    console.log(`\n${label}: POST /app/newsletters/estimate (the service), ${RUNS} runs each`)
    let baseline = 0
    for (const [what, segment] of segments) {
      const estimate = () => services.newsletters.estimate(tenant, segment as never)
      for (let i = 0; i < 3; i++) await estimate()
      const samples: number[] = []
      let recipients = 0
      for (let i = 0; i < RUNS; i++) {
        const started = performance.now()
        recipients = (await estimate()).recipients_estimate
        samples.push(performance.now() - started)
      }
      const s = stats(samples)
      if (segment === null) baseline = s.p95
      const ratio = segment === null ? '' : ` | p95 ${(s.p95 / baseline).toFixed(2)}x the baseline`
      console.log(
        `  ${what}: ${recipients.toLocaleString('en')} recipients, p50 ${ms(s.p50)}, p95 ${ms(s.p95)}${ratio}`,
      )
    }
  }

  async function insertRate(label: string) {
    const from = CONTACTS + 1
    const started = performance.now()
    await insert(from, from + INSERT_ROWS - 1)
    const seconds = (performance.now() - started) / 1000
    console.log(
      `  ${label}: ${INSERT_ROWS.toLocaleString('en')} contacts with fields inserted at ${Math.round(INSERT_ROWS / seconds).toLocaleString('en')} rows/s`,
    )
    await database.query(`DELETE FROM contacts WHERE account_id = $1 AND source = 'bench' AND phone >= $2`, [
      account.id,
      `+49172${String(from).padStart(9, '0')}`,
    ])
    await database.query('VACUUM ANALYZE contacts')
  }

  await measure('without an index on contacts.fields')
  if (process.env.BENCH_ESTIMATE_ONLY === '1') process.exitCode = 0
  else {
    console.log('\ninsert cost')
    await insertRate('without the GIN index')
    const built = performance.now()
    await database.query('CREATE INDEX contacts_fields_gin_bench ON contacts USING gin (fields jsonb_path_ops)')
    await database.query('ANALYZE contacts')
    const [{ size }] = await database.query<{ size: string }>(
      `SELECT pg_size_pretty(pg_relation_size('contacts_fields_gin_bench')) AS size`,
    )
    console.log(`  GIN index (jsonb_path_ops) built in ${((performance.now() - built) / 1000).toFixed(1)} s, ${size}`)
    await insertRate('with the GIN index')
    await measure('with a GIN index on contacts.fields (jsonb_path_ops)')
  }
  await services.close()
} finally {
  await database.close()
  if (!KEEP) {
    const again = new pg.Client({ connectionString: ADMIN_URL })
    await again.connect()
    await again.query(`DROP DATABASE IF EXISTS ${name}`)
    await again.end()
  }
}
