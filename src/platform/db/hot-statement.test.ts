import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { sql } from 'drizzle-orm'
import { createScratchDatabase } from '../../../test/helpers/scratch-database.ts'
import { type Database, openDatabase } from './client.ts'
import { hotStatement } from './hot-statement.ts'

// the embedded database always; PostgreSQL as well when the tests have one
const targets: Array<{ name: string; open(): Promise<{ database: Database; drop(): Promise<void> }> }> = [
  {
    name: 'embedded',
    open: async () => ({ database: await openDatabase({ dataDir: 'memory://' }), drop: async () => {} }),
  },
]
const sharedUrl = process.env.HEROLD_TEST_DATABASE_URL
if (sharedUrl) {
  targets.push({
    name: 'PostgreSQL',
    open: async () => {
      const scratch = await createScratchDatabase(sharedUrl, 'herold_hot')
      return { database: await openDatabase({ databaseUrl: scratch.url, dataDir: '' }), drop: scratch.drop }
    },
  })
}

const sum = hotStatement('hot_statement_test_sum', (db) =>
  db
    .select({
      total: sql<number>`${sql.placeholder('a')}::int + ${sql.placeholder('b')}::int`,
      word: sql<string>`${sql.placeholder('word')}::text`,
    })
    .from(sql`generate_series(1, ${sql.placeholder('rows')}::int)`),
)

for (const target of targets) {
  let opened: Awaited<ReturnType<(typeof targets)[number]['open']>>
  before(async () => {
    opened = await target.open()
  })
  after(async () => {
    await opened.database.close()
    await opened.drop()
  })

  test(`${target.name}: values go to their placeholders by name, rows come back as arrays, again and again`, async () => {
    const { orm } = opened.database
    assert.deepEqual(await sum(orm, { a: 2, b: 3, word: 'eins', rows: 1 }), [[5, 'eins']])
    // the same statement with other values, many at once (each connection prepares it once)
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => sum(orm, { b: i, a: 1, word: `w${i}`, rows: 2 })),
    )
    for (const [i, rows] of results.entries()) {
      assert.deepEqual(rows, [
        [1 + i, `w${i}`],
        [1 + i, `w${i}`],
      ])
    }
    assert.deepEqual(await sum(orm, { a: 1, b: 1, word: 'x', rows: 0 }), [])
  })

  test(`${target.name}: inside a transaction it refuses rather than run outside it`, async () => {
    await assert.rejects(
      opened.database.orm.transaction((tx) => sum(tx, { a: 1, b: 1, word: 'x', rows: 1 })),
      /not in a transaction/,
    )
  })
}
