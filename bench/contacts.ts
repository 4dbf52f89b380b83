// Contacts at scale: seeds 1,000,000 contacts into a fresh PostgreSQL database and measures
//   - GET /v1/contacts?q=… and plain GET /v1/contacts (median, p95) against the same SQL run raw (baseline)
//   - herold import contacts on PostgreSQL and on embedded PGlite against a raw multi-row INSERT (baseline)
//   - the same import with 5 custom fields (number, date, choice, boolean, text) against the same baseline (goal ≥ 0.5)
// Usage: node bench/contacts.ts   (BENCH_ADMIN_URL=postgres://postgres@127.0.0.1:5432/postgres, BENCH_CONTACTS=1000000)
//        BENCH_EMBEDDED_ONLY=1 node bench/contacts.ts   (only the import on embedded PGlite and its baseline)
//        BENCH_FIELDS_IMPORT_ONLY=1 node bench/contacts.ts   (only the import with 5 custom fields on a fresh PostgreSQL
//        database, BENCH_ROUNDS times (default 3), each round also with the contact statistics' triggers enabled as
//        before migration 0066, which sends the import down its per-row checked path: the same run's comparison;
//        with BENCH_EMBEDDED_ONLY=1 the same on embedded PGlite; BENCH_CHECKED=0 leaves that second import out)
// On PGlite, right after the import and without an ANALYZE of its own, the search is measured against a lookup by id
// (p95 of q= ÷ p95 of GET /v1/contacts/{id}; the goal is ≤ 3): the import must leave the planner its statistics.
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { importContacts } from '../src/modules/contacts/index.ts'
import { createAccount, createApiKey, setAccountPlan, setPlan } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { type Database, openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { memoryRateLimiter } from '../src/platform/rate-limit/rate-limiter.ts'

const ADMIN_URL = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? 1_000_000)
const RUNS = Number(process.env.BENCH_RUNS ?? 200)
const IMPORT_ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 100_000)
const EMBEDDED_ONLY = process.env.BENCH_EMBEDDED_ONLY === '1'
const FIELDS_IMPORT_ONLY = process.env.BENCH_FIELDS_IMPORT_ONLY === '1'
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
/** BENCH_CHECKED=0: the import with fields only as it is, without the round with the triggers as before 0066 */
const CHECKED = process.env.BENCH_CHECKED !== '0'

const ms = (t: number) => `${t.toFixed(2)} ms`
function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]
  return { median: at(0.5), p95: at(0.95) }
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await fn()
  return performance.now() - started
}

async function freshDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `herold_bench_${Date.now()}`
  const admin = new pg.Client({ connectionString: ADMIN_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = ADMIN_URL.replace(/\/[^/]*$/, `/${name}`)
  return {
    url,
    async drop() {
      const again = new pg.Client({ connectionString: ADMIN_URL })
      await again.connect()
      await again.query(`DROP DATABASE IF EXISTS ${name}`)
      await again.end()
    },
  }
}

/** generate_series straight into the table; the trigram index is rebuilt once afterwards (as a restore would). */
async function seed(database: Database, accountId: string): Promise<void> {
  const [{ indexdef }] = await database.query<{ indexdef: string }>(
    `SELECT indexdef FROM pg_indexes WHERE indexname = 'contacts_search_trgm_idx'`,
  )
  await database.query('DROP INDEX contacts_search_trgm_idx')
  await database.query(
    `INSERT INTO contacts (account_id, id, name, email, phone, language, source, created_at)
     SELECT $1::uuid, gen_random_uuid(),
       (ARRAY['Anna','Ben','Clara','David','Emma','Felix','Greta','Hannes','Ida','Jonas'])[1 + i % 10] || ' ' ||
       (ARRAY['Schmidt','Mueller','Meyer','Schulz','Wagner','Becker','Hoffmann','Koch','Richter','Klein'])[1 + (i / 10) % 10],
       CASE WHEN i % 5 = 0 THEN '' ELSE 'kunde' || i || '@' || (ARRAY['gmail.com','web.de','gmx.de','firma.de'])[1 + i % 4] END,
       CASE WHEN i % 3 = 0 THEN '' ELSE '+49151' || lpad(i::text, 8, '0') END,
       'de', 'api', now() - make_interval(secs => i)
     FROM generate_series(1, $2::int) AS i`,
    [accountId, CONTACTS],
  )
  await database.query(
    `INSERT INTO contact_counts (account_id, count) VALUES ($1, $2) ON CONFLICT (account_id) DO UPDATE SET count = EXCLUDED.count`,
    [accountId, CONTACTS],
  )
  await database.query(indexdef)
  await database.query('ANALYZE contacts')
}

async function measureApi(database: Database, accountId: string, key: string) {
  const config = loadConfig({}, { databaseUrl: 'postgres://bench', publicUrl: 'http://bench.local' })
  const rateLimiter = memoryRateLimiter(1_000_000_000)
  const app = await buildApp({ config, database, clock: systemClock, rateLimiter })
  await app.ready()
  const cases: Array<[string, string, string, unknown[]]> = [
    [
      'GET /v1/contacts (plain, limit 50)',
      '/v1/contacts',
      `SELECT * FROM contacts WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT 51`,
      [accountId],
    ],
    [
      'GET /v1/contacts?q=kunde4711 (rare email part)',
      '/v1/contacts?q=kunde4711',
      `SELECT * FROM contacts WHERE account_id = $1 AND (name || E'\\n' || email || E'\\n' || phone) ILIKE $2 ORDER BY created_at DESC, id DESC LIMIT 51`,
      [accountId, '%kunde4711%'],
    ],
    [
      'GET /v1/contacts?q=Hoffmann (common name, 10%)',
      '/v1/contacts?q=Hoffmann',
      `SELECT * FROM contacts WHERE account_id = $1 AND (name || E'\\n' || email || E'\\n' || phone) ILIKE $2 ORDER BY created_at DESC, id DESC LIMIT 51`,
      [accountId, '%Hoffmann%'],
    ],
    [
      'GET /v1/contacts?q=151 0042-17 (phone with separators)',
      `/v1/contacts?q=${encodeURIComponent('151 0042-17')}`,
      `SELECT * FROM contacts WHERE account_id = $1 AND (name || E'\\n' || email || E'\\n' || phone) LIKE $2 ORDER BY created_at DESC, id DESC LIMIT 51`,
      [accountId, '%151004217%'],
    ],
  ]
  for (const [label, url, rawSql, params] of cases) {
    for (let i = 0; i < 10; i++) {
      await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } })
      await database.query(rawSql, params)
    }
    const api: number[] = []
    const raw: number[] = []
    let status = 0
    for (let i = 0; i < RUNS; i++) {
      api.push(
        await time(async () => {
          status = (await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } })).statusCode
        }),
      )
      raw.push(await time(() => database.query(rawSql, params)))
    }
    if (status !== 200) throw new Error(`${url} answered ${status}`)
    const a = stats(api)
    const r = stats(raw)
    console.log(
      `${label}\n  API median ${ms(a.median)}, p95 ${ms(a.p95)} | raw SQL median ${ms(r.median)}, p95 ${ms(r.p95)} | ratio (median) ${(a.median / r.median).toFixed(1)}x`,
    )
  }
  await app.close()
}

function importFile(rows: number): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'herold-bench-'))
  const lines = ['name,email,phone,tags']
  for (let i = 0; i < rows; i++) {
    lines.push(
      `Import ${i},import${i}@bench.example,${i % 2 ? `+49 160 ${String(i).padStart(8, '0')}` : ''},${i % 10 ? '' : 'messe'}`,
    )
  }
  const file = path.join(dir, 'contacts.csv')
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}

/** The import file with a column for each of five custom fields (FIELDS), every cell filled. */
function fieldsImportFile(rows: number): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'herold-bench-'))
  const lines = ['name,email,phone,tags,customer_no,birthday,level,vip,branch']
  for (let i = 0; i < rows; i++) {
    const birthday = `19${String(50 + (i % 50)).padStart(2, '0')}-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`
    lines.push(
      `Import ${i},import${i}@bench.example,${i % 2 ? `+49 160 ${String(i).padStart(8, '0')}` : ''},${i % 10 ? '' : 'messe'},` +
        `${100000 + i},${birthday},${['gold', 'silver', 'bronze'][i % 3]},${i % 2 ? 'ja' : 'nein'},Filiale ${i % 40}`,
    )
  }
  const file = path.join(dir, 'contacts-fields.csv')
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}

/** The five custom fields of fieldsImportFile, defined as the API defines them. */
async function defineBenchFields(database: Database, accountId: string): Promise<void> {
  const fields = [
    ['customer_no', 'Kundennummer', 'number', null, null],
    ['birthday', 'Geburtstag', 'date', null, null],
    ['level', 'Stufe', 'choice', JSON.stringify(['gold', 'silver', 'bronze']), null],
    ['vip', 'VIP', 'boolean', null, null],
    ['branch', 'Filiale', 'text', null, 255],
  ]
  for (const [position, [key, label, type, options, maxLength]] of fields.entries()) {
    await database.query(
      `INSERT INTO contact_fields (account_id, key, label, type, options, max_length, position)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)`,
      [accountId, key, label, type, options, maxLength, position + 1],
    )
  }
}

/** The baseline: the same rows inserted raw, one multi-row INSERT per 2,000 (no validation, events or tags). */
async function rawInsertRate(database: Database, accountId: string, rows: number): Promise<number> {
  const started = performance.now()
  for (let offset = 0; offset < rows; offset += 2000) {
    const batch = Array.from({ length: Math.min(2000, rows - offset) }, (_, j) => ({
      id: randomUUID(),
      name: `Raw ${offset + j}`,
      email: `raw${offset + j}@bench.example`,
    }))
    await database.query(
      `INSERT INTO contacts (account_id, id, name, email) SELECT $1::uuid, r.id, r.name, r.email
       FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, name text, email text)`,
      [accountId, JSON.stringify(batch)],
    )
  }
  return rows / ((performance.now() - started) / 1000)
}

async function measureImport(
  database: Database,
  label: string,
  file: string,
  afterImport?: (accountId: string) => Promise<void>,
  beforeImport?: (accountId: string) => Promise<void>,
): Promise<void> {
  const target = await createAccount(database.orm, { name: `import ${label}` })
  await beforeImport?.(target.id)
  const report = await importContacts(database.orm, systemClock, { accountId: target.id, file })
  if (report.rejected > 0)
    throw new Error(`${label}: ${report.rejected} lines rejected: ${report.rejected_lines[0]?.reason}`)
  // before the baseline's own rows land in the same table and index
  await afterImport?.(target.id)
  const baselineAccount = await createAccount(database.orm, { name: `raw ${label}` })
  const baseline = await rawInsertRate(database, baselineAccount.id, IMPORT_ROWS)
  console.log(
    `import ${IMPORT_ROWS.toLocaleString('en')} rows on ${label}: ${report.rows_per_second.toLocaleString('en')} rows/s ` +
      `(created ${report.created}) | raw INSERT baseline ${Math.round(baseline).toLocaleString('en')} rows/s | ratio ${(report.rows_per_second / baseline).toFixed(2)}`,
  )
}

/** the number of one imported contact whose e-mail address no other contains */
const RARE = String(Math.floor(IMPORT_ROWS * 0.47113))

/** Right after the import (no ANALYZE here): search by a rare e-mail part and a name against a lookup by id. */
async function measureSearchAfterImport(database: Database, accountId: string) {
  // the requests of the measurement are not to meet the per-key rate limit of the default plan (120 a minute)
  await setPlan(database.orm, {
    name: 'bench-unlimited',
    contactsLimit: 100_000_000,
    messagesPerMonth: 1_000_000,
    webhooksLimit: 10,
    requestsPerMinute: 1_000_000,
  })
  await setAccountPlan(database.orm, accountId, 'bench-unlimited')
  const { key } = await createApiKey(database.orm, { accountId, name: 'bench', scopes: ['contacts:read'] })
  const dataDir = mkdtempSync(path.join(tmpdir(), 'herold-bench-data-'))
  const config = loadConfig({}, { dataDir, publicUrl: 'http://bench.local' })
  const app = await buildApp({ config, database, clock: systemClock, rateLimiter: memoryRateLimiter(1_000_000_000) })
  await app.ready()
  const headers = { authorization: `Bearer ${key}` }
  const [{ id }] = await database.query<{ id: string }>(
    'SELECT id FROM contacts WHERE account_id = $1 AND email = $2',
    [accountId, `import${RARE}@bench.example`],
  )
  const sample = async (url: string) => {
    const samples: number[] = []
    for (let i = 0; i < RUNS; i++) {
      let status = 0
      samples.push(await time(async () => (status = (await app.inject({ method: 'GET', url, headers })).statusCode)))
      if (status !== 200) throw new Error(`${url} answered ${status}`)
    }
    return stats(samples)
  }
  const byId = await sample(`/v1/contacts/${id}`)
  console.log(`after the import on embedded PGlite, no ANALYZE of the bench's own (${RUNS} runs each):`)
  console.log(`  GET /v1/contacts/{id} (baseline) median ${ms(byId.median)}, p95 ${ms(byId.p95)}`)
  // a term one contact matches, and a name a few share (import47113 and Import 4711 at 100,000 rows)
  for (const q of [`import${RARE}`, `Import ${RARE.slice(0, -1)}`]) {
    const search = await sample(`/v1/contacts?q=${encodeURIComponent(q)}`)
    console.log(
      `  GET /v1/contacts?q=${q} median ${ms(search.median)}, p95 ${ms(search.p95)} | p95 ratio ${(search.p95 / byId.p95).toFixed(2)} (goal ≤ 3)`,
    )
  }
  await app.close()
  rmSync(dataDir, { recursive: true, force: true })
}

async function measureEmbeddedImport(file: string) {
  const embedded = await openDatabase({ dataDir: 'memory://' })
  try {
    await migrate(embedded)
    await measureImport(embedded, 'embedded PGlite', file, (accountId) => measureSearchAfterImport(embedded, accountId))
    await measureImport(embedded, 'embedded PGlite with 5 custom fields', fieldsFile, undefined, (accountId) =>
      defineBenchFields(embedded, accountId),
    )
  } finally {
    await embedded.close()
  }
}

const file = importFile(IMPORT_ROWS)
const fieldsFile = fieldsImportFile(IMPORT_ROWS)
/** The import with fields, as it is and with the statistics' triggers as before 0066, round after round. */
async function measureFieldsImportOnly(embedded: boolean) {
  const fresh = embedded ? null : await freshDatabase()
  const database = fresh
    ? await openDatabase({ databaseUrl: fresh.url, dataDir: 'memory://', poolSize: 4 })
    : await openDatabase({ dataDir: 'memory://' })
  const where = embedded ? 'embedded PGlite' : 'PostgreSQL'
  const triggers = ['contacts_stats_insert', 'contacts_stats_update', 'contacts_stats_delete']
  const enable = async (how: 'ALWAYS' | '') => {
    for (const t of triggers) await database.query(`ALTER TABLE contacts ENABLE ${how} TRIGGER ${t}`)
  }
  try {
    await migrate(database)
    for (let round = 1; round <= ROUNDS; round++) {
      console.log(
        `round ${round} (load average ${loadavg()
          .map((l) => l.toFixed(1))
          .join(' ')})`,
      )
      await measureImport(database, `${where} with 5 custom fields`, fieldsFile, undefined, (accountId) =>
        defineBenchFields(database, accountId),
      )
      if (!CHECKED) continue
      await enable('')
      await measureImport(
        database,
        `${where} with 5 custom fields, statistics triggers as before 0066 (rows checked)`,
        fieldsFile,
        undefined,
        (accountId) => defineBenchFields(database, accountId),
      )
      await enable('ALWAYS')
    }
  } finally {
    await database.close()
    await fresh?.drop()
  }
}

try {
  if (FIELDS_IMPORT_ONLY) await measureFieldsImportOnly(EMBEDDED_ONLY)
  else if (EMBEDDED_ONLY) await measureEmbeddedImport(file)
  else {
    const fresh = await freshDatabase()
    const database = await openDatabase({ databaseUrl: fresh.url, dataDir: 'memory://', poolSize: 4 })
    try {
      await migrate(database)
      const account = await createAccount(database.orm, { name: 'bench' })
      const { key } = await createApiKey(database.orm, {
        accountId: account.id,
        name: 'bench',
        scopes: ['contacts:read'],
      })
      const seedMs = await time(() => seed(database, account.id))
      console.log(
        `seeded ${CONTACTS.toLocaleString('en')} contacts in ${(seedMs / 1000).toFixed(1)} s (PostgreSQL, generate_series)`,
      )
      await measureApi(database, account.id, key)
      await measureImport(database, 'PostgreSQL', file)
      await measureImport(database, 'PostgreSQL with 5 custom fields', fieldsFile, undefined, (accountId) =>
        defineBenchFields(database, accountId),
      )
    } finally {
      await database.close()
      await fresh.drop()
    }
    await measureEmbeddedImport(file)
  }
} finally {
  rmSync(path.dirname(file), { recursive: true, force: true })
  rmSync(path.dirname(fieldsFile), { recursive: true, force: true })
}
