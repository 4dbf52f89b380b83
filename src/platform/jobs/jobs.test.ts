import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import { deferred, jobsKit, withinMs } from '../../../test/helpers/jobs.ts'
import type { Db } from '../db/client.ts'
import { type ClaimedJob, claimJobs, completeJob, completeJobs, enqueue, extendLeases, LeaseLostError } from './jobs.ts'

const kit = jobsKit()
const { enqueueNow, queueName, enqueueAndClaim, runner, jobRows } = kit

describe('durable jobs', () => {
  test("the safety net finds what no NOTIFY announced: a job written without one and a dead worker's lease, by its look", async () => {
    const queue = queueName('safety')
    const ran: string[] = []
    const both = deferred()
    const jobs = runner(
      {
        [queue]: {
          run: async (job) => {
            ran.push(String(job.payload.name))
            if (ran.length === 2) both.resolve()
          },
        },
      },
      { pollMs: 100 },
    )
    await jobs.start()
    try {
      const past = new Date(kit.harness.clock.now().getTime() - 1000).toISOString()
      // written by plain SQL: no pg_notify, so only the safety net's look can find them
      await kit.harness.database.query(
        `INSERT INTO jobs (account_id, id, queue, payload, run_at, created_at, state, lease_token, locked_until)
         VALUES ($1, gen_random_uuid(), $2, '{"name":"unannounced"}', $3, $3, 'queued', NULL, NULL),
                ($1, gen_random_uuid(), $2, '{"name":"orphaned"}', $3, $3, 'running', gen_random_uuid(), $3)`,
        [kit.accountId, queue, past],
      )
      await withinMs(both.promise, 30_000, 'both jobs run')
      assert.deepEqual(ran.sort(), ['orphaned', 'unannounced'])
    } finally {
      await jobs.stop()
    }
  })

  // The fallback poll runs every 60 s here: a start well before that can only come from NOTIFY. The latency itself
  // (within 1 s, p99) is measured by bench/webhooks.ts, not asserted.
  test('a job enqueued in a transaction is started by the NOTIFY of its commit, not by the poll', async () => {
    const queue = queueName('notify')
    const ran = deferred<number>()
    const jobs = runner({ [queue]: { run: async () => ran.resolve(Date.now()) } })
    await jobs.start()
    try {
      await new Promise((r) => setTimeout(r, 50))
      await enqueueNow({ accountId: kit.accountId, queue, payload: {} })
      const committedAt = Date.now()
      const startedAt = await withinMs(ran.promise, 30_000, 'job start')
      assert.ok(startedAt >= committedAt)
    } finally {
      await jobs.stop()
    }
  })

  test('a job enqueued in a rolled-back transaction never exists', async () => {
    const queue = queueName('rollback')
    await assert.rejects(
      kit.harness.database.orm.transaction(async (tx) => {
        await enqueue(tx, kit.harness.clock, { accountId: kit.accountId, queue, payload: {} })
        throw new Error('the change failed')
      }),
    )
    assert.deepEqual(await jobRows(queue), [])
  })

  test('a fan-out of more jobs than a statement has bound parameters is enqueued at once', async () => {
    const queue = queueName('fanout')
    const count = 12_000
    await enqueueNow(
      Array.from({ length: count }, (_, i) => ({
        accountId: kit.accountId,
        queue,
        payload: { i },
        concurrencyKey: `k${i % 3}`,
      })),
    )
    const [row] = await kit.harness.database.query<{ n: number; keys: number }>(
      "SELECT count(*)::int AS n, count(DISTINCT concurrency_key)::int AS keys FROM jobs WHERE queue = $1 AND state = 'queued'",
      [queue],
    )
    assert.deepEqual(row, { n: count, keys: 3 })
    await kit.harness.database.query('DELETE FROM jobs WHERE queue = $1', [queue])
  })

  test('completeJobs finishes a batch, or nothing of it when one lease was lost', async () => {
    const queue = queueName('batch')
    const claimed = await enqueueAndClaim(queue, 3, 1)
    const stale = { ...claimed[0], leaseToken: crypto.randomUUID() }
    await assert.rejects(
      kit.harness.database.orm.transaction((tx) => completeJobs(tx, [stale, claimed[1], claimed[2]])),
      LeaseLostError,
    )
    assert.equal((await jobRows(queue)).length, 3, 'the failed batch finished none')
    await kit.harness.database.orm.transaction((tx) => completeJobs(tx, claimed))
    assert.deepEqual(await jobRows(queue), [])
  })

  test('a finished job is removed', async () => {
    const queue = queueName('finish')
    const seen: unknown[] = []
    const jobs = runner({ [queue]: { run: async (job) => void seen.push(job.payload) } })
    await jobs.start()
    try {
      await enqueueNow({ accountId: kit.accountId, queue, payload: { n: 1 } })
      await jobs.drain()
      assert.deepEqual(seen, [{ n: 1 }])
      assert.deepEqual(await jobRows(queue), [])
    } finally {
      await jobs.stop()
    }
  })

  test("a handler's claimAlso is read in the claim's statement and handed to each job as `also`", async () => {
    const queue = queueName('also')
    const seen: Array<{ n: unknown; also: unknown }> = []
    const jobs = runner({
      [queue]: {
        claimAlso: sql`SELECT (c.payload->>'n')::int * 10 AS also`,
        run: async (job) => void seen.push({ n: job.payload.n, also: job.also?.value }),
      },
    })
    await jobs.start()
    try {
      for (const n of [1, 2]) {
        await enqueueNow({ accountId: kit.accountId, queue, payload: { n } })
        await jobs.drain()
      }
      assert.deepEqual(seen, [
        { n: 1, also: 10 },
        { n: 2, also: 20 },
      ])
    } finally {
      await jobs.stop()
    }
  })

  test('a job whose worker died is claimed again once its lease expires', async () => {
    const queue = queueName('lease')
    await enqueueNow({ accountId: kit.accountId, queue, payload: {} })
    const [dead] = await claimJobs(kit.harness.database.orm, kit.harness.clock, {
      queue,
      limit: 1,
      perKey: 1,
      leaseMs: 30_000,
    })
    assert.ok(dead, 'the first worker claimed the job')
    const runs: ClaimedJob[] = []
    const jobs = runner({ [queue]: { run: async (job) => void runs.push(job) } })
    await jobs.start()
    try {
      await jobs.drain()
      assert.equal(runs.length, 0, 'not while the lease holds')
      kit.harness.clock.advance(30_001)
      await jobs.drain()
      assert.equal(runs.length, 1)
      assert.equal(runs[0].attempts, 2)
      await assert.rejects(
        kit.harness.database.orm.transaction((tx) => completeJob(tx, dead)),
        LeaseLostError,
        'the dead worker can no longer finish the job',
      )
    } finally {
      await jobs.stop()
    }
  })

  test("claims without a reap made at once (one statement each on PostgreSQL) never exceed a key's limit nor take a job twice", async () => {
    const queue = queueName('claim-at-once')
    await enqueueNow(
      Array.from({ length: 40 }, (_, i) => ({
        accountId: kit.accountId,
        queue,
        payload: { i },
        concurrencyKey: i % 2 ? 'a' : 'b',
      })),
    )
    const claims = await Promise.all(
      Array.from({ length: 8 }, () =>
        claimJobs(kit.harness.database.orm, kit.harness.clock, {
          queue,
          limit: 10,
          perKey: 3,
          leaseMs: 30_000,
          reap: false,
          exclusive: kit.harness.database.kind === 'postgres',
        }),
      ),
    )
    const claimed = claims.flat()
    assert.equal(new Set(claimed.map((job) => job.id)).size, claimed.length, 'no job twice')
    assert.equal(claimed.filter((job) => job.concurrencyKey === 'a').length, 3)
    assert.equal(claimed.filter((job) => job.concurrencyKey === 'b').length, 3)
    const running = await kit.harness.database.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM jobs WHERE queue = $1 AND state = 'running'",
      [queue],
    )
    assert.equal(Number(running[0].n), 6)
  })

  test("a claim without a reap (one statement on PostgreSQL) waits for the queue's claim lock", {
    skip: !process.env.HEROLD_TEST_DATABASE_URL && 'PostgreSQL only: the embedded database has one connection',
  }, async () => {
    const queue = queueName('claim-lock')
    await enqueueNow({ accountId: kit.accountId, queue, payload: {} })
    let claimed = false
    let claim: Promise<ClaimedJob[]> | null = null
    await kit.harness.database.orm.transaction(async (tx) => {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(727002, hashtext(${queue}))`)
      claim = claimJobs(kit.harness.database.orm, kit.harness.clock, {
        queue,
        limit: 1,
        perKey: 1,
        leaseMs: 30_000,
        reap: false,
      }).then((jobs) => {
        claimed = true
        return jobs
      })
      // until the claim is seen waiting for the lock this transaction holds
      for (;;) {
        const waiting = await tx.execute(
          sql`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND classid = 727002 AND NOT granted`,
        )
        assert.equal(claimed, false, 'the claim ran while another held the lock')
        if ((waiting as unknown as { rows: unknown[] }).rows.length > 0) break
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
    })
    const jobs = await (claim as unknown as Promise<ClaimedJob[]>)
    assert.equal(jobs.length, 1, 'claimed once the lock was released')
  })

  test('a lease renewal leaves alone a job another transaction holds, and renews the others without waiting', {
    skip: !process.env.HEROLD_TEST_DATABASE_URL && 'PostgreSQL only: the embedded database has one connection',
  }, async () => {
    const queue = queueName('renew-held')
    const claimed = await enqueueAndClaim(queue, 2, 2)
    const [held, free] = claimed
    const leaseOf = async (job: ClaimedJob) =>
      (
        await kit.harness.database.query<{ until: Date }>(
          'SELECT locked_until AS until FROM jobs WHERE account_id = $1 AND id = $2',
          [job.accountId, job.id],
        )
      )[0].until.getTime()
    const before = { held: await leaseOf(held), free: await leaseOf(free) }
    kit.harness.clock.advance(5_000)
    // a handler finishing the first job: its row is locked until the transaction ends
    await kit.harness.database.orm.transaction(async (tx) => {
      await completeJobs(tx, [held])
      let renewed = false
      const renewal = extendLeases(kit.harness.database.orm, kit.harness.clock, claimed, 30_000).then(() => {
        renewed = true
      })
      while (!renewed) {
        const waiting = await tx.execute(sql`SELECT 1 FROM pg_locks WHERE locktype = 'transactionid' AND NOT granted`)
        assert.equal((waiting as unknown as { rows: unknown[] }).rows.length, 0, 'the renewal waited for the held row')
        await new Promise((resolve) => setTimeout(resolve, 10))
      }
      await renewal
    })
    assert.equal(await leaseOf(free), before.free + 5_000, 'the other lease was renewed')
    const rows = await kit.harness.database.query('SELECT 1 FROM jobs WHERE account_id = $1 AND id = $2', [
      held.accountId,
      held.id,
    ])
    assert.equal(rows.length, 0, 'the held job was completed')
    assert.ok(before.held > 0)
  })

  test('a failing job is retried after a backoff read from the clock, then kept as dead', async () => {
    const queue = queueName('retry')
    let calls = 0
    const jobs = runner({
      [queue]: {
        maxAttempts: 3,
        run: async () => {
          calls++
          throw new Error(`boom ${calls}`)
        },
      },
    })
    await jobs.start()
    try {
      await enqueueNow({ accountId: kit.accountId, queue, payload: {} })
      await jobs.drain()
      assert.equal(calls, 1)
      await jobs.drain()
      assert.equal(calls, 1, 'not before the backoff')
      kit.harness.clock.advance(5_000)
      await jobs.drain()
      assert.equal(calls, 2)
      kit.harness.clock.advance(10_000)
      await jobs.drain()
      assert.equal(calls, 3)
      kit.harness.clock.advance(24 * 3600_000)
      await jobs.drain()
      assert.equal(calls, 3)
      assert.deepEqual(await jobRows(queue), [{ state: 'dead', attempts: 3, last_error: 'boom 3' }])
    } finally {
      await jobs.stop()
    }
  })

  test('jobs sharing a key run at most perKey at once, and a busy key does not delay another key', async () => {
    const queue = queueName('perkey')
    const release = deferred()
    let slowRunning = 0
    let slowPeak = 0
    const fastDone = deferred<number>()
    const jobs = runner(
      {
        [queue]: {
          perKey: 2,
          run: async (job) => {
            if (job.concurrencyKey === 'fast') return fastDone.resolve(Date.now())
            slowRunning++
            slowPeak = Math.max(slowPeak, slowRunning)
            await release.promise
            slowRunning--
          },
        },
      },
      { concurrency: 8 },
    )
    await jobs.start()
    try {
      await enqueueNow(
        Array.from({ length: 40 }, () => ({ accountId: kit.accountId, queue, payload: {}, concurrencyKey: 'slow' })),
      )
      await new Promise((r) => setTimeout(r, 100))
      await enqueueNow({ accountId: kit.accountId, queue, payload: {}, concurrencyKey: 'fast' })
      const enqueuedAt = Date.now()
      const fastAt = await withinMs(fastDone.promise, 30_000, 'the other key')
      assert.ok(fastAt >= enqueuedAt)
      assert.equal(slowPeak, 2)
    } finally {
      release.resolve()
      await jobs.drain()
      await jobs.stop()
    }
    assert.equal(slowPeak, 2)
  })

  test('no more than the runner concurrency of jobs run at once', async () => {
    const queue = queueName('total')
    let running = 0
    let peak = 0
    const jobs = runner(
      {
        [queue]: {
          run: async () => {
            running++
            peak = Math.max(peak, running)
            await new Promise((r) => setTimeout(r, 5))
            running--
          },
        },
      },
      { concurrency: 3 },
    )
    await jobs.start()
    try {
      await enqueueNow(Array.from({ length: 20 }, (_, i) => ({ accountId: kit.accountId, queue, payload: { i } })))
      await jobs.drain()
      assert.equal(peak, 3)
      assert.deepEqual(await jobRows(queue), [])
    } finally {
      await jobs.stop()
    }
  })

  test('a job whose handler settles it in its own transaction is not completed twice', async () => {
    const queue = queueName('settle')
    const jobs = runner({
      [queue]: {
        run: async (job, context) => {
          await context.db.transaction(async (tx: Db) => {
            await tx.execute(sql`SELECT 1`)
            await completeJob(tx, job)
          })
          context.settled()
        },
      },
    })
    await jobs.start()
    try {
      await enqueueNow({ accountId: kit.accountId, queue, payload: {} })
      await jobs.drain()
      assert.deepEqual(await jobRows(queue), [])
    } finally {
      await jobs.stop()
    }
  })
})
