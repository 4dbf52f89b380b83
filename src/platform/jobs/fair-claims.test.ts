import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createHarness, createTestAccount, type Harness } from '../../../test/helpers/harness.ts'
import { busiestSecond } from '../../../test/helpers/jobs.ts'
import { isBulkWork } from '../db/work-priority.ts'
import {
  bookSlots,
  type ClaimedJob,
  claimJobs,
  completeJobs,
  type EnqueueInput,
  enqueue,
  PACE_GUARD,
  PACE_IN_FLIGHT_MS,
  PACE_LEAD_MS,
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

  const now = () => harness.clock.now().getTime()
  /** the interval of a lane's slots at `rate` */
  const interval = (rate: number) => (1000 * PACE_GUARD) / rate
  const pace = (lane: string, perSecond: number | null, accountId = big) =>
    harness.database.orm.transaction((tx) => setPace(tx, { accountId, lane, perSecond }))
  const book = async (lane: string, count: number, burstMs = 0) => {
    const slots = await bookSlots(harness.database.orm, harness.clock, { accountId: big, lane, count, burstMs })
    return slots === null ? null : slots.map((slot) => slot.getTime())
  }

  test('booked slots follow one another one interval apart, from now on an idle lane, for every caller together', async () => {
    const lane = `lane-${queueName('book')}`
    await pace(lane, 200)
    const start = now()
    const first = (await book(lane, 5)) ?? []
    const second = (await book(lane, 1)) ?? []
    const slots = [...first, ...second]
    slots.forEach((slot, k) => {
      // whole milliseconds, rounded up: never before the booked time, at most a millisecond after
      const booked = start + PACE_LEAD_MS + k * interval(200)
      assert.ok(slot >= booked && slot < booked + 1, `slot ${k}: ${slot - start} ms after now`)
    })
    harness.clock.advance(5_000)
    const [afterIdle] = (await book(lane, 1)) ?? []
    assert.ok(afterIdle - now() - PACE_LEAD_MS <= 1, 'after an idle spell: from now, not from the past (no burst)')
    assert.equal(await book(`lane-${queueName('none')}`, 1), null, 'no lane, no slot')
  })

  test("the operator's burst lets an idle lane book that much of its pace in the past; then the pace", async () => {
    const lane = `lane-${queueName('burst')}`
    await pace(lane, 40)
    const start = now()
    const slots = (await book(lane, 20, 250)) ?? []
    assert.ok(Math.abs(slots[0] - (start + PACE_LEAD_MS - 250)) <= 1, 'the first slot a quarter second earlier')
    const due = slots.filter((slot) => slot <= start).length
    assert.equal(due, Math.ceil((250 - PACE_LEAD_MS) / interval(40)), 'due at once')
    const [next] = (await book(lane, 1, 250)) ?? []
    assert.ok(Math.abs(next - slots[19] - interval(40)) <= 1, 'then one interval after the last')
  })

  test('no 1-second window of a lane holds more slots than its pace, however its bookings interleave', async () => {
    const lane = `lane-${queueName('window')}`
    const rate = 40
    await pace(lane, rate)
    const slots: number[] = []
    let seed = 7
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (let turn = 0; turn < 150; turn++) {
      const at = now()
      // a batch of the claim's messages or a single free-text message, as they come
      const booked = (await book(lane, random() < 0.5 ? 1 : 1 + Math.floor(random() * 10))) ?? []
      for (const slot of booked) assert.ok(slot >= at, 'a booked slot is never in the past')
      slots.push(...booked)
      harness.clock.advance(Math.floor(random() * 150))
    }
    slots.sort((x, y) => x - y)
    for (let k = 1; k < slots.length; k++) {
      assert.ok(slots[k] - slots[k - 1] >= interval(rate) - 1, `slots ${k - 1} and ${k} too close`)
    }
    assert.ok(busiestSecond(slots) <= rate, `busiest second: ${busiestSecond(slots)}`)
  })

  test('a paced lane is claimed only while its booked slots leave room; the rest stays queued, not holding a slot', async () => {
    const queue = queueName('paced')
    const lane = `lane-${queue}`
    await pace(lane, 200)
    await add(many(big, queue, 400))
    await add(many(small, queue, 3))
    const first = await claim(queue, 200, lane)
    const perWindow = Math.floor(PACE_WINDOW_MS / interval(200))
    assert.equal(countBy(first).get(big), perWindow, 'the slots within the window ahead')
    assert.equal(countBy(first).get(small), 3, 'an unpaced account beside it is not held back')
    await harness.database.orm.transaction((tx) => completeJobs(tx, first))
    // the claimed messages left: their slots are booked
    await book(lane, perWindow)
    assert.equal(await claimFinishing(queue, lane), 0, 'its window is booked: nothing until time passes')
    harness.clock.advance(50)
    assert.equal(await claimFinishing(queue, lane), 0, 'less room than a step of a tenth of a second')
    harness.clock.advance(100)
    const booked = PACE_LEAD_MS + perWindow * interval(200) - 150
    assert.equal(await claimFinishing(queue, lane), Math.floor((PACE_WINDOW_MS - booked) / interval(200)))
    // the same queue claimed without its lane is not paced
    assert.equal((await claim(queue, 20, null)).length, 20)
  })

  test('a paced lane holds at most PACE_IN_FLIGHT_MS of its pace running; finished jobs free its place', async () => {
    const queue = queueName('inflight-cap')
    const lane = `lane-${queue}`
    await pace(lane, 1_000)
    await add(many(big, queue, 1_200))
    const cap = (1_000 * PACE_IN_FLIGHT_MS) / 1000
    let running = 0
    for (let n = (await claim(queue, 256, lane)).length; n > 0; n = (await claim(queue, 256, lane)).length) {
      running += n
    }
    assert.equal(running, cap, 'claims take its jobs up to its share of running jobs')
    await add(many(small, queue, 1))
    assert.deepEqual(
      [...countBy(await claim(queue, 256, lane))],
      [[small, 1]],
      "another account's message takes a free slot at once",
    )
  })

  test('a changed pace applies to the next claim and booking; a removed pace frees the lane', async () => {
    const queue = queueName('repace')
    const lane = `lane-${queue}`
    await pace(lane, 2)
    await add(many(big, queue, 30))
    assert.equal(await claimFinishing(queue, lane), 1, 'a lane slower than its window: one at least')
    await pace(lane, 20)
    const [x, y] = (await book(lane, 2)) ?? []
    assert.ok(Math.abs(y - x - interval(20)) <= 1, 'slots at the new pace')
    await pace(lane, null)
    assert.equal((await claim(queue, 30, lane)).length, 29, 'no pace: the rest at once')
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
