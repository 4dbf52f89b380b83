import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import { createTestAccount } from '../../../test/helpers/harness.ts'
import { deferred, jobsKit, withinMs } from '../../../test/helpers/jobs.ts'
import type { Db } from '../db/client.ts'
import {
  type ClaimedJob,
  claimJobs,
  completeJob,
  completeJobs,
  JOBS_CHANNEL,
  type JobRow,
  NOTIFY_ACCOUNTS_MAX,
  notifyJobsSql,
  parseJobsNotice,
  toClaimed,
} from './jobs.ts'
import type { JobRunner } from './runner.ts'

const kit = jobsKit()
const { enqueueNow, queueName, runner, jobRows } = kit

/** A runner of one batch queue whose first batch runs until `release`; `batches` holds each batch's job numbers. */
function firstBatchHeld(queue: string, options: { concurrency: number; gatherMs: number }) {
  const batches: number[][] = []
  const release = deferred()
  const firstStarted = deferred()
  const laterRan = deferred()
  const jobs = runner(
    {
      [queue]: {
        run: async () => assert.fail('runs as a batch'),
        runBatch: async (claimed) => {
          batches.push(claimed.map((job) => Number(job.payload.n)))
          if (batches.length === 1) {
            firstStarted.resolve()
            await release.promise
          } else laterRan.resolve()
        },
      },
    },
    options,
  )
  return { jobs, batches, release, firstStarted, laterRan }
}

/**
 * Lets the round after a claim pass: its look for due work (the safety net for a NOTIFY that never came) would wake a
 * queue whose job was committed but whose NOTIFY had not arrived yet, on a loaded machine, and claim it at once.
 */
const settled = () => new Promise((resolve) => setTimeout(resolve, 300))

// batches of a queue: handlers that take a claim's jobs together, work gathered behind a running batch, jobs a
// batch hands off to this process, and what a stopped or starved process leaves to the others
describe('durable jobs in batches', () => {
  test('a batch handler gets the due jobs of a claim together, never more than the concurrency allows', async () => {
    const queue = queueName('batch')
    const batches: number[][] = []
    const jobs = runner(
      {
        [queue]: {
          run: async () => assert.fail('a batch queue runs its jobs through runBatch'),
          runBatch: async (claimed, context) => {
            batches.push(claimed.map((job) => Number(job.payload.n)))
            // the first one is settled in the handler's own transaction, the rest are completed by the runner
            await context.db.transaction((tx: Db) => completeJob(tx, claimed[0]))
            context.settled(claimed[0])
          },
        },
      },
      { concurrency: 6 },
    )
    await enqueueNow(Array.from({ length: 10 }, (_, n) => ({ accountId: kit.accountId, queue, payload: { n } })))
    await jobs.start()
    try {
      await jobs.drain()
      assert.deepEqual(
        batches.flat().sort((a, b) => a - b),
        [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      )
      assert.ok(
        batches.every((b) => b.length >= 1 && b.length <= 3),
        `half the concurrency: ${JSON.stringify(batches)}`,
      )
      assert.ok(
        batches.some((b) => b.length > 1),
        'jobs claimed together run together',
      )
      assert.deepEqual(await jobRows(queue), [])
    } finally {
      await jobs.stop()
    }
  })

  test('work enqueued one job at a time while a batch of its queue runs is claimed together when the batch ends', async () => {
    const queue = queueName('gather')
    // the gathering's time limit out of the way: here the end of the running batch wakes the queue
    const { jobs, batches, release, firstStarted } = firstBatchHeld(queue, { concurrency: 16, gatherMs: 60_000 })
    await jobs.start()
    try {
      await enqueueNow({ accountId: kit.accountId, queue, payload: { n: 0 } })
      await withinMs(firstStarted.promise, 5_000, 'nothing runs: the first job is claimed at its NOTIFY')
      await settled()
      // five sends accepted one after another, each its own commit and NOTIFY
      for (let n = 1; n <= 5; n++) await enqueueNow({ accountId: kit.accountId, queue, payload: { n } })
      await new Promise((resolve) => setTimeout(resolve, 300))
      assert.deepEqual(batches, [[0]], 'while the batch runs, what was enqueued waits for it')
      release.resolve()
      await jobs.drain()
      // (in any order: jobs due at the same instant have no order among them but their random ids)
      assert.deepEqual(
        batches.slice(1).map((batch) => [...batch].sort()),
        [[1, 2, 3, 4, 5]],
        'claimed together when the running batch ended',
      )
      assert.deepEqual(await jobRows(queue), [])
    } finally {
      release.resolve()
      await jobs.stop()
    }
  })

  test('another account’s work enqueued while a batch runs is claimed at its NOTIFY; the running account’s gathers', async () => {
    const queue = queueName('gather-other')
    const { jobs, batches, release, firstStarted, laterRan } = firstBatchHeld(queue, {
      concurrency: 16,
      gatherMs: 60_000,
    })
    const other = (await createTestAccount(kit.harness)).accountId
    await jobs.start()
    try {
      await enqueueNow({ accountId: kit.accountId, queue, payload: { n: 0 } })
      await withinMs(firstStarted.promise, 5_000, 'the first job is claimed at its NOTIFY')
      await settled()
      // a small account's single message beside the big account's running batch: not held for the batch
      await enqueueNow({ accountId: other, queue, payload: { n: 1 } })
      await withinMs(laterRan.promise, 5_000, 'the other account’s job runs beside the held batch')
      // and is finished: the end of a batch wakes the queue, and that claim (done a moment later) would take what gathers
      await withinMs(
        (async () => {
          while (jobs.inFlight > 1) await new Promise((resolve) => setTimeout(resolve, 10))
        })(),
        5_000,
        'the other account’s batch finished',
      )
      await settled()
      // the big account's next send gathers behind its own running batch
      await enqueueNow({ accountId: kit.accountId, queue, payload: { n: 2 } })
      await new Promise((resolve) => setTimeout(resolve, 300))
      assert.deepEqual(batches, [[0], [1]], 'the running account’s work waits for its batch')
      release.resolve()
      await jobs.drain()
      assert.deepEqual(batches, [[0], [1], [2]])
      assert.deepEqual(await jobRows(queue), [])
    } finally {
      release.resolve()
      await jobs.stop()
    }
  })

  test('a NOTIFY of enqueued work names its queue and accounts, and only the queue past NOTIFY_ACCOUNTS_MAX', async () => {
    // on a shared PostgreSQL other test processes' enqueues are heard too: only this test's queues count
    const [fake, queue] = [queueName('notice'), queueName('notice')]
    const heard: string[] = []
    const unlisten = await kit.harness.database.listen(JOBS_CHANNEL, (payload = '') => {
      if (payload.startsWith(`${fake} `) || payload === fake || payload.startsWith(`${queue} `)) heard.push(payload)
    })
    try {
      const notify = (accounts: number) =>
        kit.harness.database.orm.execute(sql`WITH fake AS (
            SELECT ${fake}::text AS queue, ('00000000-0000-4000-8000-' || lpad(n::text, 12, '0'))::uuid AS account_id
            FROM generate_series(1, ${accounts}::int) n, generate_series(1, 2) twice)
          SELECT ${notifyJobsSql('fake')} AS notified`)
      await notify(2)
      await notify(NOTIFY_ACCOUNTS_MAX + 1)
      await enqueueNow([
        { accountId: kit.accountId, queue, payload: {} },
        { accountId: kit.accountId, queue, payload: {} },
      ])
      await withinMs(
        (async () => {
          while (heard.length < 3) await new Promise((resolve) => setTimeout(resolve, 10))
        })(),
        5_000,
        'three notices',
      )
      assert.deepEqual(heard, [
        `${fake} 00000000-0000-4000-8000-000000000001 00000000-0000-4000-8000-000000000002`,
        fake,
        `${queue} ${kit.accountId}`,
      ])
      assert.deepEqual(parseJobsNotice(heard[0]), {
        queue: fake,
        accounts: ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'],
      })
      assert.deepEqual(parseJobsNotice(heard[1]), { queue: fake })
    } finally {
      await unlisten()
    }
  })

  test('work gathering behind a long batch of its queue is claimed after the gathering time, not after the batch', async () => {
    const queue = queueName('gather-limit')
    const { jobs, batches, release, firstStarted, laterRan } = firstBatchHeld(queue, { concurrency: 16, gatherMs: 50 })
    await jobs.start()
    try {
      await enqueueNow({ accountId: kit.accountId, queue, payload: { n: 0 } })
      await withinMs(firstStarted.promise, 5_000, 'the first job is claimed at its NOTIFY')
      await enqueueNow({ accountId: kit.accountId, queue, payload: { n: 1 } })
      await withinMs(laterRan.promise, 5_000, 'the next job runs beside the long batch')
      assert.deepEqual(batches, [[0], [1]])
    } finally {
      release.resolve()
      await jobs.stop()
    }
  })

  /** Writes one job of `queue` per given job, already claimed by the writer (running, its own lease), as followups do. */
  async function writeClaimed(db: Db, queue: string, from: ClaimedJob[], leaseMs: number): Promise<ClaimedJob[]> {
    // the harness's clock stands still while the real one runs on: the job's times are read from it, as the claim's are
    const now = kit.harness.clock.now()
    const until = new Date(now.getTime() + leaseMs).toISOString()
    const result = await db.execute(sql`INSERT INTO jobs (account_id, id, queue, payload, run_at, created_at, state,
        lease_token, locked_until, attempts)
      SELECT ${kit.accountId}::uuid, gen_random_uuid(), ${queue}, jsonb_build_object('n', n), ${now.toISOString()}::timestamptz,
        ${now.toISOString()}::timestamptz, 'running',
        gen_random_uuid(), ${until}::timestamptz, 1
      FROM unnest(${`{${from.map((j) => Number(j.payload.n)).join(',')}}`}::int[]) AS n
      RETURNING account_id, id, queue, payload, concurrency_key, attempts, run_at, created_at, lease_token`)
    return (result as unknown as { rows: JobRow[] }).rows.map(toClaimed)
  }

  test('jobs a batch writes already claimed and hands off run in this process, in the slots it frees', async () => {
    const first = queueName('handoff-first')
    const second = queueName('handoff-second')
    const ranSecond: ClaimedJob[] = []
    let most = 0
    const jobs: JobRunner = runner(
      {
        [first]: {
          run: async () => assert.fail('runs as a batch'),
          runBatch: async (claimed, context) => {
            const next = await context.db.transaction(async (tx: Db) => {
              await completeJobs(tx, claimed)
              return writeClaimed(tx, second, claimed, context.leaseMs)
            })
            for (const job of claimed) context.settled(job)
            context.handOff(next)
          },
        },
        [second]: {
          run: async () => assert.fail('runs as a batch'),
          runBatch: async (claimed) => {
            most = Math.max(most, jobs.inFlight)
            ranSecond.push(...claimed)
          },
        },
      },
      { concurrency: 4 },
    )
    await enqueueNow(Array.from({ length: 12 }, (_, n) => ({ accountId: kit.accountId, queue: first, payload: { n } })))
    await jobs.start()
    try {
      await jobs.drain()
      assert.deepEqual(
        ranSecond.map((job) => Number(job.payload.n)).sort((a, b) => a - b),
        Array.from({ length: 12 }, (_, n) => n),
      )
      // never claimed: the attempt and the lease are the ones written with them
      assert.ok(ranSecond.every((job) => job.attempts === 1))
      assert.ok(most <= 4, `never more than the concurrency in flight: ${most}`)
      assert.deepEqual(await jobRows(first), [])
      assert.deepEqual(await jobRows(second), [], 'the handed-off jobs were completed')
    } finally {
      await jobs.stop()
    }
  })

  test('a job handed off but never run (its runner stopped) is claimed again when its lease runs out', async () => {
    const queue = queueName('handoff-orphan')
    const [written] = await kit.harness.database.orm.transaction((tx) =>
      writeClaimed(tx, queue, [{ payload: { n: 7 } } as unknown as ClaimedJob], 5_000),
    )
    assert.equal(written.attempts, 1)
    assert.deepEqual(
      await claimJobs(kit.harness.database.orm, kit.harness.clock, {
        queue,
        limit: 5,
        perKey: 1,
        leaseMs: 30_000,
        reap: true,
      }),
      [],
    )
    kit.harness.clock.advance(6_000)
    const again = await claimJobs(kit.harness.database.orm, kit.harness.clock, {
      queue,
      limit: 5,
      perKey: 1,
      leaseMs: 30_000,
      reap: true,
    })
    assert.deepEqual(
      again.map((job) => [job.id, job.attempts]),
      [[written.id, 2]],
    )
    assert.notEqual(again[0].leaseToken, written.leaseToken)
    await kit.harness.database.orm.transaction((tx) => completeJob(tx, again[0]))
  })

  test('a starved process does not reap the jobs it still runs; another process does', async () => {
    const queue = queueName('held-reap')
    const [written] = await kit.harness.database.orm.transaction((tx) =>
      writeClaimed(tx, queue, [{ payload: { n: 8 } } as unknown as ClaimedJob], 5_000),
    )
    kit.harness.clock.advance(6_000)
    const options = { queue, limit: 5, perKey: 1, leaseMs: 30_000, reap: true }
    // the process that holds the lease (its renewal late) claims again: its own job stays running under its lease
    assert.deepEqual(
      await claimJobs(kit.harness.database.orm, kit.harness.clock, { ...options, held: [written.leaseToken] }),
      [],
    )
    await kit.harness.database.orm.transaction((tx) => completeJob(tx, written))
    const [second] = await kit.harness.database.orm.transaction((tx) =>
      writeClaimed(tx, queue, [{ payload: { n: 9 } } as unknown as ClaimedJob], 5_000),
    )
    kit.harness.clock.advance(6_000)
    // a process that holds other leases only puts it back and takes it
    const taken = await claimJobs(kit.harness.database.orm, kit.harness.clock, {
      ...options,
      held: [written.leaseToken],
    })
    assert.deepEqual(
      taken.map((job) => [job.id, job.attempts]),
      [[second.id, 2]],
    )
    await kit.harness.database.orm.transaction((tx) => completeJob(tx, taken[0]))
  })

  test('a batch handler that throws leaves its unsettled jobs to be retried, its settled ones done', async () => {
    const queue = queueName('batch-throw')
    const jobs = runner({
      [queue]: {
        run: async () => {},
        batchMax: 4,
        runBatch: async (claimed, context) => {
          const first = claimed.find((job) => job.payload.n === 0)
          if (first) {
            await context.db.transaction((tx: Db) => completeJob(tx, first))
            context.settled(first)
          }
          throw new Error('provider down')
        },
      },
    })
    await enqueueNow(Array.from({ length: 3 }, (_, n) => ({ accountId: kit.accountId, queue, payload: { n } })))
    await jobs.start()
    try {
      await jobs.drain()
      const left = await jobRows(queue)
      assert.equal(left.length, 2)
      for (const row of left) {
        assert.equal(row.state, 'queued')
        assert.equal(row.last_error, 'provider down')
      }
    } finally {
      await jobs.stop()
    }
  })
})
