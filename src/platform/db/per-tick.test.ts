import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { sql } from 'drizzle-orm'
import { type Database, openDatabase } from './client.ts'
import { perTick } from './per-tick.ts'
import { rows } from './rows.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL || undefined

/** A lookup that doubles numbers in the database, records each batch, and waits for `gate` before it reads. */
function doubling(gate: { open: Promise<void> }) {
  const batches: number[][] = []
  const lookup = (grouped: boolean) =>
    perTick(
      async (db, keys: readonly number[]) => {
        batches.push([...keys])
        await gate.open
        const result = await db.execute(sql`SELECT k * 2 AS v FROM unnest(${sql.param([...keys])}::int[])
          WITH ORDINALITY AS t(k, at) ORDER BY at`)
        return rows<{ v: number }>(result).map((row) => Number(row.v))
      },
      { grouped },
    )
  return { batches, lookup }
}

describe('perTick', () => {
  let database: Database
  before(async () => {
    database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: 4 })
  })
  after(() => database.close())

  test('the calls of one turn are one batch; calls of later turns are batches of their own', async () => {
    const gate = { open: Promise.resolve() }
    const { batches, lookup } = doubling(gate)
    const double = lookup(false)
    const first = [double(database.orm, 1), double(database.orm, 2)]
    await nextTurn()
    await nextTurn()
    const later = [double(database.orm, 3)]
    assert.deepEqual(await Promise.all([...first, ...later]), [2, 4, 6])
    assert.deepEqual(batches, [[1, 2], [3]])
  })

  test('grouped: an idle lookup goes at once; the calls of the turns while it loads go together as the next batch', async () => {
    let release = () => {}
    const gate = { open: new Promise<void>((resolve) => (release = resolve)) }
    const { batches, lookup } = doubling(gate)
    const double = lookup(true)
    const first = double(database.orm, 1)
    await nextTurn()
    await nextTurn()
    assert.deepEqual(batches, [[1]], 'the first call went alone, without waiting for others')
    const meanwhile: Promise<number>[] = []
    for (const key of [2, 3, 4]) {
      meanwhile.push(double(database.orm, key))
      await nextTurn()
      await nextTurn()
    }
    assert.deepEqual(batches, [[1]], 'nothing else went while the first was loading')
    release()
    assert.deepEqual(await Promise.all([first, ...meanwhile]), [2, 4, 6, 8])
    assert.deepEqual(batches, [[1], [2, 3, 4]])
    // idle again: the next call goes at once
    assert.equal(await double(database.orm, 5), 10)
    assert.deepEqual(batches, [[1], [2, 3, 4], [5]])
  })

  test('grouped: a failed batch answers its calls with the error and the batch waiting behind it still goes', async () => {
    let release = () => {}
    const gate = new Promise<void>((resolve) => (release = resolve))
    const batches: number[][] = []
    const lookup = perTick(
      async (db, keys: readonly number[]) => {
        batches.push([...keys])
        if (batches.length === 1) {
          await gate
          await db.execute(sql`SELECT 1 / 0`)
        }
        return keys.map((k) => k + 1)
      },
      { grouped: true },
    )
    const failed = lookup(database.orm, 1)
    const rejected = assert.rejects(failed, /Failed query: SELECT 1 \/ 0/)
    await nextTurn()
    await nextTurn()
    const next = lookup(database.orm, 2)
    await nextTurn()
    await nextTurn()
    assert.deepEqual(batches, [[1]], 'the second waits behind the first')
    release()
    await rejected
    assert.equal(await next, 3)
    assert.deepEqual(batches, [[1], [2]])
  })
})
