import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { openOwnDatabase, rowsReadSoFar } from '../../../test/helpers/own-database.ts'
import { createAccount } from '../auth/accounts.service.ts'
import { TestClock } from '../clock.ts'
import type { Database, Db } from '../db/client.ts'
import { tableLooksAfterItself } from '../db/maintenance.ts'
import { migrate } from '../db/migrate.ts'
import { type ClaimedJob, claimJobs, enqueue } from './jobs.ts'
import { JobRunner } from './runner.ts'

/**
 * What a claim reads must not grow with the depth of a key's or an account's queue, whatever the statistics say (none
 * yet, taken before the queue filled, fresh). The claim's statements run inside the database function
 * herold_claim_fair, whose plans EXPLAIN of the calling statement does not show; the rows they read are counted
 * instead, by the database's own per-transaction counters of the jobs table and its indexes (index entries returned,
 * table rows fetched, rows read by sequential scans). A database of its own: the statistics are the test's subject.
 */

const DEEP = 20_000
/** a claim of a dozen jobs reads a few dozen index entries and rows; the deep queue would be tens of thousands */
const BOUND = 1_000

let database: Database
let close: () => Promise<void>
let big: string
let small: string
const clock = new TestClock()

before(async () => {
  ;({ database, close } = await openOwnDatabase('herold_claimplan'))
  await migrate(database)
  big = (await createAccount(database.orm, { name: 'Groß' })).id
  small = (await createAccount(database.orm, { name: 'Klein' })).id
})
after(() => close())

const readSoFar = (tx: Db) => rowsReadSoFar(tx, 'jobs')

/** One claim in a transaction of its own, with the rows it read from the jobs table and its indexes. */
async function measuredClaim(queue: string, options: { reap: boolean }): Promise<{ jobs: ClaimedJob[]; read: number }> {
  return database.orm.transaction(async (tx) => {
    const before = await readSoFar(tx)
    const jobs = await claimJobs(tx, clock, { queue, limit: 12, perKey: 6, leaseMs: 30_000, reap: options.reap })
    const read = (await readSoFar(tx)) - before
    return { jobs, read }
  })
}

const at = (msAgo: number) => new Date(clock.now().getTime() - msAgo).toISOString()

/** `n` due jobs of one key (or unkeyed: null), the oldest first; one statement, as an import's fan-out writes them. */
async function fill(queue: string, accountId: string, key: string | null, n: number): Promise<void> {
  await database.query(
    `INSERT INTO jobs (account_id, id, queue, payload, concurrency_key, run_at, created_at)
     SELECT $1, gen_random_uuid(), $2, '{}'::jsonb, $3, $4::timestamptz + g * interval '1 ms', $4::timestamptz
     FROM generate_series(1, $5::int) g`,
    [accountId, queue, key, at(600_000), n],
  )
}

/** Statistics taken while the table held no queued job (a fresh install analyzed, a queue drained) */
async function analyzeWithoutQueuedJobs(): Promise<void> {
  await database.query(`DELETE FROM jobs`)
  await database.query(
    `INSERT INTO jobs (account_id, id, queue, payload, state, run_at)
     SELECT $1, gen_random_uuid(), 'test.finished', '{}'::jsonb, 'dead', $2::timestamptz FROM generate_series(1, 500)`,
    [big, at(0)],
  )
  await database.query('ANALYZE jobs')
}

describe('the claim reads what it takes, not the queue', () => {
  // the first test runs on a table never analyzed
  test('unkeyed: one account with 20,000 due jobs, another with one, no statistics', async () => {
    const queue = 'test.plan.unkeyed'
    await fill(queue, big, null, DEEP)
    await fill(queue, small, null, 1)
    for (const reap of [false, true]) {
      const { jobs, read } = await measuredClaim(queue, { reap })
      assert.equal(jobs.length, 12)
      if (!reap)
        assert.ok(
          jobs.some((job) => job.accountId === small),
          'the small account is served in the first claim',
        )
      assert.ok(read < BOUND, `a claim (reap: ${reap}) read ${read} rows of jobs`)
    }
  })

  test('keyed: one key with 20,000 due jobs, another with one, statistics from before the queue filled', async () => {
    await analyzeWithoutQueuedJobs()
    const queue = 'test.plan.keyed'
    await fill(queue, big, 'subscription-a', DEEP)
    await fill(queue, small, 'subscription-b', 1)
    const first = await measuredClaim(queue, { reap: false })
    assert.deepEqual(
      first.jobs.map((job) => job.concurrencyKey).sort(),
      [...Array(6).fill('subscription-a'), 'subscription-b'],
      'each key up to its free slots',
    )
    assert.ok(first.read < BOUND, `the claim read ${first.read} rows of jobs`)
    // the slots come free, the next claim takes the deep key's next six
    await database.query(`DELETE FROM jobs WHERE queue = $1 AND state = 'running'`, [queue])
    const next = await measuredClaim(queue, { reap: true })
    assert.equal(next.jobs.length, 6)
    assert.ok(next.read < BOUND, `the next claim read ${next.read} rows of jobs`)
  })

  test('unkeyed, statistics from before the queue filled', async () => {
    await analyzeWithoutQueuedJobs()
    const queue = 'test.plan.unkeyed-stale'
    await fill(queue, big, null, DEEP)
    await fill(queue, small, null, 1)
    const { jobs, read } = await measuredClaim(queue, { reap: false })
    assert.equal(jobs.length, 12)
    assert.ok(jobs.some((job) => job.accountId === small))
    assert.ok(read < BOUND, `the claim read ${read} rows of jobs`)
  })

  test('keyed and unkeyed, fresh statistics', async () => {
    await database.query(`DELETE FROM jobs`)
    const queue = 'test.plan.fresh'
    await fill(queue, big, 'subscription-a', DEEP)
    await fill(queue, small, 'subscription-b', 1)
    await fill(queue, big, null, DEEP)
    await database.query('ANALYZE jobs')
    const { jobs, read } = await measuredClaim(queue, { reap: false })
    assert.equal(jobs.length, 12)
    assert.ok(jobs.some((job) => job.concurrencyKey === 'subscription-b'))
    assert.ok(read < BOUND, `the claim read ${read} rows of jobs`)
  })
})

describe('the runner vacuums the jobs table the database does not', () => {
  const counts = async () => {
    const [row] = await database.query<{ vacuums: number | string; analyzes: number | string }>(
      `SELECT vacuum_count AS vacuums, analyze_count AS analyzes FROM pg_stat_user_tables WHERE relname = 'jobs'`,
    )
    return { vacuums: Number(row?.vacuums ?? 0), analyzes: Number(row?.analyzes ?? 0) }
  }

  test('whether the database vacuums it: never embedded; on a server as autovacuum says, and never for a table that opts out', async () => {
    if (database.kind === 'postgres') {
      const [server] = await database.query<{ autovacuum: string }>('SHOW autovacuum')
      assert.equal(await tableLooksAfterItself(database, 'jobs'), server?.autovacuum === 'on')
      await database.query('ALTER TABLE jobs SET (autovacuum_enabled = false)')
    }
    assert.equal(await tableLooksAfterItself(database, 'jobs'), false)
  })

  test('after its count of finished jobs, with statistics', async () => {
    await database.query('DELETE FROM jobs')
    const queue = 'test.plan.vacuum'
    const start = await counts()
    const runner = new JobRunner({
      database,
      clock,
      handlers: { [queue]: { run: async () => {} } },
      concurrency: 8,
      leaseMs: 30_000,
      pollMs: 60_000,
      vacuumEvery: 40,
    })
    await runner.start()
    try {
      const list = Array.from({ length: 30 }, (_, i) => ({ accountId: big, queue, payload: { i } }))
      await database.orm.transaction((tx) => enqueue(tx, clock, list))
      await runner.drain()
      assert.deepEqual(await counts(), start, 'not before its count of finished jobs')
      await database.orm.transaction((tx) => enqueue(tx, clock, list))
      await runner.drain()
      let now = await counts()
      for (let i = 0; i < 100 && now.vacuums === start.vacuums; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        now = await counts()
      }
      assert.equal(now.vacuums, start.vacuums + 1, 'vacuumed once')
      assert.equal(now.analyzes, start.analyzes + 1, 'and analyzed')
    } finally {
      await runner.stop()
    }
  })
})
