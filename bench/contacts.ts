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
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { buildApp } from '../src/app.ts'
import { loadConfig } from '../src/config.ts'
import { importConcurrency, importContacts } from '../src/modules/contacts/index.ts'
import { createAccount, createApiKey, setAccountPlan, setPlan } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { type Database, openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { timeOrderedId } from '../src/platform/ids.ts'
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

/** One line of the bench's import files: the CSV's cells, and the same contact as the import stores it. */
type BenchRow = { cells: string; name: string; email: string; phone: string; fields: Record<string, unknown> | null }

/** The rows of the import files; with fields, a cell for each of five custom fields (FIELDS), every cell filled. */
function benchRows(rows: number, withFields: boolean): BenchRow[] {
  return Array.from({ length: rows }, (_, i) => {
    const name = `Import ${i}`
    const email = `import${i}@bench.example`
    const digits = String(i).padStart(8, '0')
    let cells = `${name},${email},${i % 2 ? `+49 160 ${digits}` : ''},${i % 10 ? '' : 'messe'}`
    let fields: Record<string, unknown> | null = null
    if (withFields) {
      const birthday = `19${String(50 + (i % 50)).padStart(2, '0')}-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}`
      const level = ['gold', 'silver', 'bronze'][i % 3]
      cells += `,${100000 + i},${birthday},${level},${i % 2 ? 'ja' : 'nein'},Filiale ${i % 40}`
      fields = { customer_no: 100000 + i, birthday, level, vip: i % 2 === 1, branch: `Filiale ${i % 40}` }
    }
    return { cells, name, email, phone: i % 2 ? `+49160${digits}` : '', fields }
  })
}

function writeImportFile(rows: BenchRow[], withFields: boolean): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'herold-bench-'))
  const header = `name,email,phone,tags${withFields ? ',customer_no,birthday,level,vip,branch' : ''}`
  const file = path.join(dir, withFields ? 'contacts-fields.csv' : 'contacts.csv')
  writeFileSync(file, `${[header, ...rows.map((r) => r.cells)].join('\n')}\n`)
  return file
}

/** The five custom fields of benchRows, defined as the API defines them. */
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

/**
 * The baseline: the file's rows as the import stores them (name, e-mail, the phone in E.164, the custom fields, the
 * source, the account's language, time-ordered ids as the import makes them) inserted raw, one multi-row INSERT per 2,000: no reading of the
 * file, no validation, no tags, no events, no statistics.
 */
async function rawInsertRate(database: Database, accountId: string, rows: BenchRow[]): Promise<number> {
  const started = performance.now()
  for (let offset = 0; offset < rows.length; offset += 2000) {
    const batch = rows.slice(offset, offset + 2000).map((r) => ({
      id: timeOrderedId(),
      name: r.name,
      email: r.email,
      phone: r.phone,
      fields: r.fields ?? {},
    }))
    await database.query(
      `INSERT INTO contacts (account_id, id, name, email, phone, fields, source, language)
       SELECT $1::uuid, r.id, r.name, r.email, r.phone, r.fields, 'import', 'de'
       FROM jsonb_to_recordset($2::jsonb) AS r(id uuid, name text, email text, phone text, fields jsonb)`,
      [accountId, JSON.stringify(batch)],
    )
  }
  return rows.length / ((performance.now() - started) / 1000)
}

/** The baseline's row and the import's for the same line, compared: the baseline writes what the import writes. */
async function assertSameRow(database: Database, imported: string, raw: string, email: string): Promise<void> {
  const read = (accountId: string) =>
    database.query<{ row: unknown }>(
      `SELECT to_jsonb(c) - 'account_id' - 'id' - 'created_at' AS row FROM contacts c
       WHERE account_id = $1 AND email = $2`,
      [accountId, email],
    )
  const [[a], [b]] = await Promise.all([read(imported), read(raw)])
  if (JSON.stringify(a?.row) !== JSON.stringify(b?.row))
    throw new Error(
      `the baseline's row differs from the import's: ${JSON.stringify(a?.row)} / ${JSON.stringify(b?.row)}`,
    )
}

/** An import file and its rows, for the baseline. */
/**
 * An import file and its rows for the baseline, made again when needed: the bench does not hold 100,000 rows in
 * memory while the import runs (a larger heap made the import's garbage collection, on the embedded database's thread,
 * a visible share of its time).
 */
type BenchFile = { file: string; rows: () => BenchRow[] }

/**
 * One import against the raw insert of the same rows, measured right before and right after it (each into an account
 * of its own, the same table): the ratio is to their mean, as the import runs on a table between the two.
 */
async function measureImport(
  database: Database,
  label: string,
  input: BenchFile,
  afterImport?: (accountId: string) => Promise<void>,
  beforeImport?: (accountId: string) => Promise<void>,
): Promise<void> {
  const before = await rawInsertRate(
    database,
    (await createAccount(database.orm, { name: `raw ${label}` })).id,
    input.rows(),
  )
  const target = await createAccount(database.orm, { name: `import ${label}` })
  await beforeImport?.(target.id)
  const report = await importContacts(database.orm, systemClock, {
    accountId: target.id,
    file: input.file,
    ...importConcurrency(database.kind),
  })
  if (report.rejected > 0)
    throw new Error(`${label}: ${report.rejected} lines rejected: ${report.rejected_lines[0]?.reason}`)
  // before the baseline's own rows land in the same table and index
  await afterImport?.(target.id)
  const rawAfter = await createAccount(database.orm, { name: `raw after ${label}` })
  const after = await rawInsertRate(database, rawAfter.id, input.rows())
  for (const row of input.rows().slice(0, 2)) await assertSameRow(database, target.id, rawAfter.id, row.email)
  const baseline = (before + after) / 2
  console.log(
    `import ${IMPORT_ROWS.toLocaleString('en')} rows on ${label}: ${report.rows_per_second.toLocaleString('en')} rows/s ` +
      `(created ${report.created}) | raw INSERT of the same rows before / after ${Math.round(before).toLocaleString('en')} / ` +
      `${Math.round(after).toLocaleString('en')} rows/s | ratio ${(report.rows_per_second / baseline).toFixed(2)}`,
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

async function measureEmbeddedImport(file: BenchFile) {
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

const file: BenchFile = {
  file: writeImportFile(benchRows(IMPORT_ROWS, false), false),
  rows: () => benchRows(IMPORT_ROWS, false),
}
const fieldsFile: BenchFile = {
  file: writeImportFile(benchRows(IMPORT_ROWS, true), true),
  rows: () => benchRows(IMPORT_ROWS, true),
}
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
  rmSync(path.dirname(file.file), { recursive: true, force: true })
  rmSync(path.dirname(fieldsFile.file), { recursive: true, force: true })
}
