import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createHarness, createTestAccount, type Harness } from '../../../test/helpers/harness.ts'
import { isBulkWork } from '../db/work-priority.ts'
import {
  type ClaimedJob,
  claimJobs,
  completeJobs,
  type EnqueueInput,
  enqueue,
  PACE_IN_FLIGHT_MS,
  PACE_WINDOW_MS,
  setPace,
} from './jobs.ts'
import { JobRunner } from './runner.ts'

let harness: Harness
let big: string
let small: string
let other: string

before(async () => {
  harness = await createHarness()
  big = (await createTestAccount(harness, { name: 'Groß' })).accountId
  small = (await createTestAccount(harness, { name: 'Klein' })).accountId
  other = (await createTestAccount(harness, { name: 'Mittel' })).accountId
})
after(() => harness.close())

const queueName = (label: string) => `test.fair.${label}.${Math.random().toString(36).slice(2, 8)}`

async function add(jobs: EnqueueInput[]): Promise<string[]> {
  return harness.database.orm.transaction((tx) => enqueue(tx, harness.clock, jobs))
}

const many = (accountId: string, queue: string, n: number, extra: Partial<EnqueueInput> = {}): EnqueueInput[] =>
  Array.from({ length: n }, (_, i) => ({ accountId, queue, payload: { i }, ...extra }))

const claim = (queue: string, limit: number, lane: string | null = null) =>
  claimJobs(harness.database.orm, harness.clock, { queue, limit, perKey: 1, leaseMs: 30_000, lane })

const countBy = (jobs: Array<{ accountId: string }>) => {
  const counts = new Map<string, number>()
  for (const job of jobs) counts.set(job.accountId, (counts.get(job.accountId) ?? 0) + 1)
  return counts
}

describe('fair claims', () => {
  test("one account's backlog does not delay another account's due job", async () => {
    const queue = queueName('backlog')
    // the big account's jobs are all due earlier than the small account's one
    await add(many(big, queue, 500, { runAt: new Date(harness.clock.now().getTime() - 60_000) }))
    const [mine] = await add([{ accountId: small, queue, payload: {} }])
    const claimed = await claim(queue, 10)
    assert.equal(claimed.length, 10)
    assert.ok(
      claimed.some((job) => job.id === mine),
      'the small account got its job in the first claim',
    )
  })

  test('the account with the fewest jobs in flight goes first', async () => {
    const queue = queueName('inflight')
    await add(many(big, queue, 20))
    const first = await claim(queue, 5)
    assert.deepEqual([...countBy(first)], [[big, 5]], 'alone, the big account takes every slot')
    await add(many(small, queue, 3))
    await add(many(other, queue, 3))
    const next = await claim(queue, 6)
    const counts = countBy(next)
    assert.equal(counts.get(small), 3, 'the small account, with nothing in flight, gets its three')
    assert.equal(counts.get(other), 3, 'so does the other one')
    assert.equal(counts.get(big) ?? 0, 0, 'the big account, with five in flight, waits for them')
    const last = await claim(queue, 4)
    assert.deepEqual([...countBy(last)], [[big, 4]], 'with nobody else waiting, the big account takes the rest')
  })

  test('within an account, jobs sent one at a time go before its bulk jobs', async () => {
    const queue = queueName('priority')
    const earlier = new Date(harness.clock.now().getTime() - 60_000)
    await add(many(big, queue, 50, { priority: 1, runAt: earlier }))
    const [single] = await add([{ accountId: big, queue, payload: { single: true } }])
    const [claimed] = await claim(queue, 1)
    assert.equal(claimed.id, single)
    const rest = await claim(queue, 100)
    assert.equal(rest.length, 50, 'the bulk jobs follow, every one of them')
  })

  /** Claims of a paced lane whose jobs finish at once (nothing stays in flight): how many each claim took. */
  async function claimFinishing(queue: string, lane: string, limit = 400): Promise<number> {
    const claimed = await claim(queue, limit, lane)
    await harness.database.orm.transaction((tx) => completeJobs(tx, claimed))
    return claimed.length
  }

  test('a paced lane is claimed only as far as its pace allows; the rest stays queued, not holding a slot', async () => {
    const queue = queueName('paced')
    const lane = `lane-${queue}`
    await harness.database.orm.transaction((tx) => setPace(tx, { accountId: big, lane, perSecond: 10 }))
    await add(many(big, queue, 100))
    await add(many(small, queue, 3))
    const first = await claim(queue, 50, lane)
    assert.equal(countBy(first).get(big), 2, '200 ms of the pace in flight at most')
    assert.equal(countBy(first).get(small), 3, 'an unpaced account beside it is not held back')
    await harness.database.orm.transaction((tx) => completeJobs(tx, first))
    const perWindow = (10 * PACE_WINDOW_MS) / 1000
    let taken = countBy(first).get(big) ?? 0
    for (let n = await claimFinishing(queue, lane); n > 0; n = await claimFinishing(queue, lane)) taken += n
    assert.equal(taken, perWindow, 'one window of the pace, then nothing until time passes')
    harness.clock.advance(150)
    assert.equal(await claimFinishing(queue, lane), 1, 'a tenth of a second of the pace')
    harness.clock.advance(1_000)
    taken = 0
    for (let n = await claimFinishing(queue, lane); n > 0; n = await claimFinishing(queue, lane)) taken += n
    assert.equal(taken, perWindow, 'after a pause: one window, not the pause')
    const [row] = await harness.database.query<{ queued: number }>(
      `SELECT count(*)::int AS queued FROM jobs WHERE queue = $1 AND account_id = $2 AND state = 'queued'`,
      [queue, big],
    )
    assert.equal(row.queued, 100 - 2 * perWindow - 1)
    // the same queue claimed without its lane is not paced
    assert.equal((await claim(queue, 20, null)).length, 20)
  })

  test('a paced lane holds at most 200 ms of its pace in flight; finished jobs free its place', async () => {
    const queue = queueName('inflight-cap')
    const lane = `lane-${queue}`
    await harness.database.orm.transaction((tx) => setPace(tx, { accountId: big, lane, perSecond: 1_000 }))
    await add(many(big, queue, 600))
    const cap = (1_000 * PACE_IN_FLIGHT_MS) / 1000
    const first = await claim(queue, 256, lane)
    assert.equal(first.length, cap, 'of 256 free slots it takes its 200')
    assert.deepEqual(await claim(queue, 256, lane), [], 'its pace has room, its share of slots does not')
    await add(many(small, queue, 1))
    assert.deepEqual(
      [...countBy(await claim(queue, 256, lane))],
      [[small, 1]],
      "another account's message takes a free slot at once",
    )
    await harness.database.orm.transaction((tx) => completeJobs(tx, first.slice(0, 50)))
    assert.equal((await claim(queue, 256, lane)).length, 50, 'finished jobs free their place')
  })

  test('a busy lane is claimed in steps of at least a tenth of a second of its pace, an idle one at once', async () => {
    const queue = queueName('steps')
    const lane = `lane-${queue}`
    await harness.database.orm.transaction((tx) => setPace(tx, { accountId: big, lane, perSecond: 200 }))
    await add(many(big, queue, 400))
    let taken = 0
    for (let n = await claimFinishing(queue, lane); n > 0; n = await claimFinishing(queue, lane)) taken += n
    assert.equal(taken, (200 * PACE_WINDOW_MS) / 1000, 'idle: the whole window')
    harness.clock.advance(50)
    assert.equal(await claimFinishing(queue, lane), 0, '10 messages of room: less than a step of 20')
    harness.clock.advance(60)
    assert.equal(await claimFinishing(queue, lane), 22, '110 ms of the pace')
  })

  test('a changed pace applies to the next claim; a removed pace frees the lane', async () => {
    const queue = queueName('repace')
    const lane = `lane-${queue}`
    await harness.database.orm.transaction((tx) => setPace(tx, { accountId: big, lane, perSecond: 2 }))
    await add(many(big, queue, 30))
    assert.equal((await claimFinishing(queue, lane)) + (await claimFinishing(queue, lane)), 2, 'a second of 2/s')
    assert.equal(await claimFinishing(queue, lane), 0)
    await harness.database.orm.transaction((tx) => setPace(tx, { accountId: big, lane, perSecond: 20 }))
    harness.clock.advance(1_000)
    // the lane's place in time is kept (1 s of the old pace booked ahead), the new pace fills the next second
    let taken = 0
    for (let n = await claimFinishing(queue, lane); n > 0; n = await claimFinishing(queue, lane)) taken += n
    assert.equal(taken, 20)
    await harness.database.orm.transaction((tx) => setPace(tx, { accountId: big, lane, perSecond: null }))
    assert.equal((await claim(queue, 30, lane)).length, 8, 'no pace: the rest at once')
  })

  test('keyed jobs keep their per-key limit among accounts', async () => {
    const queue = queueName('keyed')
    await add(many(big, queue, 10, { concurrencyKey: 'sub-big' }))
    await add(many(small, queue, 2, { concurrencyKey: 'sub-small' }))
    const claimed = await claim(queue, 10)
    assert.deepEqual(
      claimed.map((job) => job.concurrencyKey).sort(),
      ['sub-big', 'sub-small'],
      'one of each key at a time',
    )
  })

  test("a slot freed by one account's long jobs goes to another account's waiting job, not to its own next one", async () => {
    const queue = queueName('slots')
    const started: string[] = []
    const releases: Array<() => void> = []
    const runner = new JobRunner({
      database: harness.database,
      clock: harness.clock,
      concurrency: 2,
      leaseMs: 30_000,
      pollMs: 60_000,
      handlers: {
        [queue]: {
          run: async (job: ClaimedJob) => {
            started.push(job.accountId)
            // the big account's jobs hold their slot until the test lets one go (a slow receiver, a long send)
            if (job.accountId === big) await new Promise<void>((resolve) => releases.push(resolve))
          },
        },
      },
    })
    const until = async (what: () => boolean) => {
      const giveUp = Date.now() + 60_000
      while (!what()) {
        assert.ok(Date.now() < giveUp, `stuck: ${started.length} started`)
        await new Promise((r) => setTimeout(r, 5))
      }
    }
    await add(many(big, queue, 10))
    await runner.start()
    try {
      await until(() => started.length >= 2)
      await add(many(small, queue, 1))
      releases.shift()?.()
      // the small job ends at once and its slot takes the next big one: the first three starts tell
      await until(() => started.length >= 3)
      assert.deepEqual(
        started.slice(0, 3),
        [big, big, small],
        'the freed slot went to the account with nothing in flight',
      )
      const giveUp = Date.now() + 60_000
      while (started.length < 11 || releases.length > 0) {
        assert.ok(Date.now() < giveUp, `stuck: ${started.length} started`)
        releases.shift()?.()
        await new Promise((r) => setTimeout(r, 5))
      }
      await runner.drain()
      assert.equal(started.filter((a) => a === big).length, 10)
    } finally {
      await runner.stop()
    }
  })
})

describe('bulk work', () => {
  test("a campaign's jobs (priority 1) and a bulk queue's run as bulk work, the rest as interactive", async () => {
    const single = queueName('bulk-single')
    const batch = queueName('bulk-batch')
    const feed = queueName('bulk-feed')
    const seen = new Map<string, boolean>()
    const runner = new JobRunner({
      database: harness.database,
      clock: harness.clock,
      concurrency: 4,
      leaseMs: 30_000,
      pollMs: 60_000,
      handlers: {
        [single]: { run: async (job) => void seen.set(`single ${job.payload.name}`, isBulkWork()) },
        [batch]: {
          run: async () => assert.fail('a batch queue runs its jobs together'),
          runBatch: async (jobs) => void seen.set(`batch ${jobs.map((j) => j.payload.name).join('+')}`, isBulkWork()),
          batchMax: 10,
        },
        [feed]: { run: async () => void seen.set('feed', isBulkWork()), bulk: true },
      },
    })
    await add([
      { accountId: big, queue: single, payload: { name: 'campaign' }, priority: 1 },
      { accountId: small, queue: single, payload: { name: 'message' } },
      { accountId: big, queue: feed, payload: {} },
    ])
    await runner.start()
    try {
      await runner.drain()
      // a batch is bulk work only when every job of it is
      await add([{ accountId: big, queue: batch, payload: { name: 'c1' }, priority: 1 }])
      await runner.drain()
      await add([
        { accountId: big, queue: batch, payload: { name: 'c2' }, priority: 1 },
        { accountId: small, queue: batch, payload: { name: 'm' } },
      ])
      await runner.drain()
    } finally {
      await runner.stop()
    }
    const batches = [...seen].filter(([name]) => name.startsWith('batch'))
    assert.deepEqual(Object.fromEntries([...seen].filter(([name]) => !name.startsWith('batch'))), {
      'single campaign': true,
      'single message': false,
      feed: true,
    })
    assert.deepEqual(batches[0], ['batch c1', true])
    assert.equal(batches.at(-1)?.[1], false, `a mixed batch: ${JSON.stringify(batches)}`)
  })
})
