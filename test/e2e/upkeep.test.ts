import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { after, describe, test } from 'node:test'
import { openDatabase } from '../../src/platform/db/client.ts'
import { childEnv, runCli, tempDataDir } from '../helpers/process.ts'
import { createScratchDatabase } from '../helpers/scratch-database.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL
const CONTACTS = 50_000

function contactsCsv(dir: string): string {
  const file = path.join(dir, 'contacts.csv')
  const lines = ['name,email,phone,tags']
  const first = ['Anna', 'Ben', 'Clara', 'David', 'Emma', 'Felix', 'Greta', 'Hannes', 'Ida', 'Jonas', 'Lena', 'Max']
  const last = ['Becker', 'Fischer', 'Hoffmann', 'Klein', 'Koch', 'Meyer', 'Richter', 'Wagner', 'Weber', 'Wolf']
  for (let i = 0; i < CONTACTS - 1; i++) {
    const hash = createHash('md5').update(String(i)).digest('hex').slice(0, 10)
    const name = `${first[i % first.length]} ${last[(i * 7) % last.length]}`
    lines.push(`${name},${hash}@example.com,+4917${String(20_000_000 + i)},kunde-${i % 7}`)
  }
  lines.push('Olga Schulz,olga.schulz77@example.com,+4916099999977,')
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}

/**
 * The account's search as GET /v1/contacts?q= runs it (contacts.repository.ts listContacts), explained, and how many
 * pages the trigram index still kept in its pending list (each search would read them all, unsorted).
 */
async function searchPlan(
  options: { dataDir?: string; databaseUrl?: string },
  accountId: string,
): Promise<{ plan: string; pendingPages: number }> {
  const database = await openDatabase({ dataDir: options.dataDir ?? 'memory://', databaseUrl: options.databaseUrl })
  try {
    const rows = await database.query<Record<string, string>>(
      `EXPLAIN SELECT * FROM contacts
       WHERE account_id = $1 AND (name || E'\\n' || email || E'\\n' || phone) ILIKE $2
       ORDER BY created_at DESC, id DESC LIMIT 51`,
      [accountId, '%olga.schulz77%'],
    )
    const [pending] = await database.query<{ pages: number }>(
      `SELECT gin_clean_pending_list('contacts_search_trgm_idx'::regclass)::int AS pages`,
    )
    return { plan: rows.map((row) => Object.values(row)[0]).join('\n'), pendingPages: Number(pending?.pages) }
  } finally {
    await database.close()
  }
}

async function importThroughCli(env: NodeJS.ProcessEnv, dir: string): Promise<string> {
  const created = await runCli(['accounts', 'create', '--name', 'Import', '--json'], env)
  assert.equal(created.code, 0, created.stderr)
  const accountId = String(JSON.parse(created.stdout).id)
  const imported = await runCli(['import', 'contacts', '--account', accountId, contactsCsv(dir), '--json'], env)
  assert.equal(imported.code, 0, imported.stderr)
  assert.equal(JSON.parse(imported.stdout).created, CONTACTS)
  return accountId
}

describe('statistics after a bulk import: the search uses its trigram index from the first query', () => {
  test('embedded database (PGlite, which never analyzes by itself)', async () => {
    const dataDir = tempDataDir()
    const accountId = await importThroughCli(childEnv({ HEROLD_DATA_DIR: dataDir }), dataDir)
    const { plan, pendingPages } = await searchPlan({ dataDir }, accountId)
    assert.match(plan, /contacts_search_trgm_idx/, plan)
    assert.equal(pendingPages, 0, 'the import moved the index entries out of the pending list')
  })

  describe('PostgreSQL', { skip: databaseUrl ? false : 'set HEROLD_TEST_DATABASE_URL' }, () => {
    let scratch: Awaited<ReturnType<typeof createScratchDatabase>> | null = null
    after(async () => scratch?.drop())

    test('a fresh database that no autovacuum has analyzed', async () => {
      scratch = await createScratchDatabase(databaseUrl!, 'herold_upkeep')
      const env = childEnv({
        DATABASE_URL: scratch.url,
        HEROLD_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      })
      const migrated = await runCli(['migrate', '--json'], env)
      assert.equal(migrated.code, 0, migrated.stderr)
      const accountId = await importThroughCli(env, tempDataDir())
      const { plan, pendingPages } = await searchPlan({ databaseUrl: scratch.url }, accountId)
      assert.match(plan, /contacts_search_trgm_idx/, plan)
      assert.equal(pendingPages, 0, 'the import moved the index entries out of the pending list')
    })
  })
})
