import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import { openOwnDatabase, rowsReadSoFar } from '../../../test/helpers/own-database.ts'
import type { Database, Db } from './client.ts'
import { recordsetSql, recordsJson, rows } from './rows.ts'

/**
 * A batch's rows joined to a table by its key read the batch's rows, whatever the table's statistics say (none yet,
 * or taken while the table was empty): counted by the database's own per-transaction counters of the table and its
 * indexes, not timed. A database of its own: the statistics are the test's subject.
 */

const ROWS = 20_000
const account = randomUUID()
let database: Database
let close: () => Promise<void>

before(async () => {
  ;({ database, close } = await openOwnDatabase('herold_recordset'))
  await database.query(`CREATE TABLE batch_target (account_id uuid NOT NULL, id uuid NOT NULL, status text NOT NULL,
    PRIMARY KEY (account_id, id))`)
})
after(() => close())

const readSoFar = (tx: Db) => rowsReadSoFar(tx, 'batch_target')

/** Sets the status of `ids` by a statement joining their batch, with the rows of the table it read. */
async function measuredUpdate(ids: string[], from: (json: string) => ReturnType<typeof sql>) {
  return database.orm.transaction(async (tx) => {
    const json = JSON.stringify(ids.map((id) => ({ id, status: 'delivered' })))
    const before = await readSoFar(tx)
    const result = await tx.execute(sql`UPDATE batch_target t SET status = r.status FROM ${from(json)}
      WHERE t.account_id = ${account}::uuid AND t.id = r.id RETURNING t.id`)
    return { updated: rows<{ id: string }>(result).length, read: (await readSoFar(tx)) - before }
  })
}

const batched = (json: string) => recordsetSql(json, 3, 'r', 'id uuid, status text')
const unsized = (json: string) => sql`jsonb_to_recordset(${json}::jsonb) AS r(id uuid, status text)`

async function threeIds(): Promise<string[]> {
  const found = await database.query<{ id: string }>(
    `SELECT id FROM batch_target WHERE account_id = $1 ORDER BY id LIMIT 3`,
    [account],
  )
  return found.map((r) => r.id)
}

describe('recordsetSql: a batch joined by its key', () => {
  test('statistics taken while the table was empty: the key, not the account’s rows', async () => {
    await database.query('ANALYZE batch_target')
    await database.query(
      `INSERT INTO batch_target (account_id, id, status) SELECT $1, gen_random_uuid(), 'sent' FROM generate_series(1, $2::int)`,
      [account, ROWS],
    )
    const ids = await threeIds()
    const sized = await measuredUpdate(ids, batched)
    assert.equal(sized.updated, 3)
    assert.ok(sized.read < 100, `the sized batch read ${sized.read} rows`)
    // the same statement with jsonb_to_recordset's own estimate of 100 rows reads the account's rows: what this guards
    const plain = await measuredUpdate(ids, unsized)
    assert.equal(plain.updated, 3)
    assert.ok(plain.read >= ROWS, `the unsized batch read ${plain.read} rows`)
  })

  test('fresh statistics: still the key', async () => {
    await database.query('ANALYZE batch_target')
    const { updated, read } = await measuredUpdate(await threeIds(), batched)
    assert.equal(updated, 3)
    assert.ok(read < 100, `read ${read} rows`)
  })

  test('an alias that is not a plain name is refused', () => {
    assert.throws(() => recordsetSql('[]', 0, 'r; DROP TABLE x', 'id uuid'), /not a plain alias/)
  })
})

describe('recordsJson: rows for jsonb_to_recordset', () => {
  test('snake_case columns, dates as ISO strings, a missing value as its default or null, nothing else', () => {
    const at = new Date('2026-01-02T03:04:05.678Z')
    const list = [
      { id: 'a', stepIndex: 2, waitUntil: at, data: undefined, extra: 'x' },
      { id: 'b', stepIndex: 0, waitUntil: null, data: { k: 1 }, extra: 'y' },
    ]
    assert.deepEqual(JSON.parse(recordsJson(list, ['id', 'stepIndex', 'waitUntil', 'data'], { data: {} })), [
      { id: 'a', step_index: 2, wait_until: '2026-01-02T03:04:05.678Z', data: {} },
      { id: 'b', step_index: 0, wait_until: null, data: { k: 1 } },
    ])
  })
})
