import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { messages } from '@electric-sql/pglite'
import { sql } from 'drizzle-orm'
import { type Database, openDatabase } from './client.ts'
import { hotStatement } from './hot-statement.ts'
import { PGliteThread } from './pglite-thread.ts'

// The embedded database on its worker thread, through the same Database the server uses (and the thread by itself).
let database: Database
before(async () => {
  database = await openDatabase({ dataDir: 'memory://', embeddedThread: true })
  await database.query(
    'CREATE TABLE thread_items (id int PRIMARY KEY, name text NOT NULL, at timestamptz, data bytea, doc jsonb)',
  )
})
after(async () => {
  await database.close()
})

test('the ORM runs on the thread: its handle is the thread, rows come back as the driver gives them', async () => {
  const client = (database.orm as { $client?: unknown }).$client
  assert.ok(client instanceof PGliteThread)
  const at = new Date('2026-11-26T10:00:00.123Z')
  const data = new Uint8Array([0, 1, 2, 254, 255])
  await database.query('INSERT INTO thread_items (id, name, at, data, doc) VALUES ($1, $2, $3, $4, $5)', [
    1,
    'one',
    at,
    data,
    JSON.stringify({ a: [1, 'zwei'] }),
  ])
  const [row] = await database.query<{ at: Date; data: Uint8Array; doc: unknown; n: bigint | number }>(
    'SELECT at, data, doc, 5::int8 AS n FROM thread_items WHERE id = 1',
  )
  assert.ok(row.at instanceof Date)
  assert.equal(row.at.toISOString(), at.toISOString())
  assert.ok(row.data instanceof Uint8Array)
  assert.deepEqual([...row.data], [...data])
  assert.deepEqual(row.doc, { a: [1, 'zwei'] })
  // the ORM keeps a timestamp's text (its parser on the thread is the one drizzle asked for)
  const viaOrm = (await database.orm.execute(sql`SELECT at FROM thread_items WHERE id = 1`)) as unknown as {
    rows: Array<{ at: unknown }>
  }
  assert.equal(typeof viaOrm.rows[0].at, 'string')
  const selected = await database.orm
    .select({ at: sql<string>`at`.mapWith(String), n: sql<number>`id` })
    .from(sql`thread_items`)
  assert.deepEqual(selected.length, 1)
  assert.equal(selected[0].n, 1)
  const hot = hotStatement('thread_hot', (db) =>
    db.select({ n: sql<number>`${sql.placeholder('n')}::int + 1` }).from(sql`generate_series(1, 1)`),
  )
  assert.deepEqual(await hot(database.orm, { n: 41 }), [[42]])
})

test('an error keeps PostgreSQL fields across the thread (SQLSTATE, constraint, detail)', async () => {
  await database.query("INSERT INTO thread_items (id, name) VALUES (2, 'two')")
  const error = await database.query("INSERT INTO thread_items (id, name) VALUES (2, 'again')").then(
    () => null,
    (e: unknown) => e,
  )
  assert.ok(error instanceof messages.DatabaseError)
  const fields = error as messages.DatabaseError
  assert.equal(fields.code, '23505')
  assert.equal(fields.constraint, 'thread_items_pkey')
  assert.match(String(fields.detail), /Key \(id\)=\(2\) already exists/)
  assert.match(fields.message, /duplicate key/)
  // through the ORM as well: drizzle wraps it, the cause is PostgreSQL's
  const wrapped = await database.orm.execute(sql`INSERT INTO thread_items (id, name) VALUES (2, 'orm')`).then(
    () => null,
    (e: unknown) => e as { cause?: { code?: string } },
  )
  assert.equal(wrapped?.cause?.code ?? (wrapped as { code?: string } | null)?.code, '23505')
  const syntax = await database.query('SELEC 1').then(
    () => null,
    (e: unknown) => e as { code?: string },
  )
  assert.equal(syntax?.code, '42601')
})

test('a transaction commits, and one whose callback throws is rolled back', async () => {
  await database.orm.transaction(async (tx) => {
    await tx.execute(sql`INSERT INTO thread_items (id, name) VALUES (10, 'kept')`)
  })
  const failure = await database.orm
    .transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO thread_items (id, name) VALUES (11, 'lost')`)
      await tx.execute(sql`INSERT INTO thread_items (id, name) VALUES (10, 'duplicate')`)
    })
    .then(
      () => null,
      (e: unknown) => e as { cause?: { code?: string } },
    )
  assert.equal(failure?.cause?.code, '23505')
  const afterThrow = await database.orm
    .transaction(async (tx) => {
      await tx.execute(sql`INSERT INTO thread_items (id, name) VALUES (12, 'lost too')`)
      throw new Error('changed my mind')
    })
    .then(
      () => null,
      (e: unknown) => e as Error,
    )
  assert.equal(afterThrow?.message, 'changed my mind')
  // a savepoint inside: its own failure rolls back only its part
  await database.orm.transaction(async (tx) => {
    await tx.execute(sql`INSERT INTO thread_items (id, name) VALUES (13, 'outer')`)
    await tx
      .transaction(async (inner) => {
        await inner.execute(sql`INSERT INTO thread_items (id, name) VALUES (14, 'inner')`)
        throw new Error('inner only')
      })
      .catch(() => {})
  })
  const ids = await database.query<{ id: number }>('SELECT id FROM thread_items WHERE id >= 10 ORDER BY id')
  assert.deepEqual(
    ids.map((r) => r.id),
    [10, 13],
  )
  // the connection is usable (not left inside a transaction)
  // (a SAVEPOINT outside a transaction block is refused: 25P01)
  await assert.rejects(database.query('SAVEPOINT probe'), (e: { code?: string }) => e.code === '25P01')
})

test('NOTIFY reaches a listener at commit; after unlisten it does not', async () => {
  const heard: Array<string | undefined> = []
  const stop = await database.listen('thread_channel', (payload) => heard.push(payload))
  await database.orm.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_notify('thread_channel', 'in the transaction')`)
    assert.deepEqual(heard, [])
  })
  await database.query("SELECT pg_notify('thread_channel', 'alone')")
  for (let i = 0; i < 50 && heard.length < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  assert.deepEqual(heard, ['in the transaction', 'alone'])
  await stop()
  await database.query("SELECT pg_notify('thread_channel', 'nobody')")
  await database.query('SELECT 1')
  assert.deepEqual(heard, ['in the transaction', 'alone'])
})

test('a parser that changes a value is refused at the call, not ignored', async () => {
  const client = (database.orm as { $client?: unknown }).$client as PGliteThread
  await assert.rejects(client.query('SELECT 1', [], { parsers: { 23: (text) => Number(text) * 2 } }), /keeps a type/)
})

test('the data directory on disk: dump, close, reopen, closed thread refuses', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'herold-thread-'))
  try {
    const onDisk = await openDatabase({ dataDir: dir, embeddedThread: true })
    await onDisk.query('CREATE TABLE kept (n int)')
    await onDisk.query('INSERT INTO kept VALUES (7)')
    const dump = await onDisk.dumpDataDir?.()
    assert.ok(dump instanceof Blob)
    const head = new Uint8Array(await dump.slice(0, 2).arrayBuffer())
    assert.deepEqual([...head], [0x1f, 0x8b]) // gzip
    await onDisk.close()
    await assert.rejects(onDisk.query('SELECT 1'), /closed/)
    const again = await openDatabase({ dataDir: dir, embeddedThread: true })
    assert.deepEqual(await again.query('SELECT n FROM kept'), [{ n: 7 }])
    await again.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
