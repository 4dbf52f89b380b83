import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createHarness, createTestAccount, type Harness } from '../../../test/helpers/harness.ts'
import { busiestSecond } from '../../../test/helpers/jobs.ts'
import { isBulkWork } from '../db/work-priority.ts'
import {
  bookSlot,
  type ClaimedJob,
  claimJobs,
  completeJobs,
  type EnqueueInput,
  enqueue,
  PACE_GUARD,
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

  /** Claims of a paced lane whose jobs finish at once (nothing stays in flight): the jobs each claim took. */
  async function claimFinishing(queue: string, lane: string, limit = 400, burstMs = 0): Promise<ClaimedJob[]> {
    const claimed = await claimJobs(harness.database.orm, harness.clock, {
      queue,
      limit,
      perKey: 1,
      leaseMs: 30_000,
      lane,
      burstMs,
    })
    await harness.database.orm.transaction((tx) => completeJobs(tx, claimed))
    return claimed
  }

  /** claimFinishing until a claim takes nothing: every job taken */
  async function claimAll(queue: string, lane: string, burstMs = 0): Promise<ClaimedJob[]> {
    const taken: ClaimedJob[] = []
    for (let got = await claimFinishing(queue, lane, 400, burstMs); got.length > 0; ) {
      taken.push(...got)
      got = await claimFinishing(queue, lane, 400, burstMs)
    }
    return taken
  }

  const now = () => harness.clock.now().getTime()
  /** the slots a lane at `rate` has within PACE_WINDOW_MS of now (JS dates hold milliseconds: a slot may be 1 ms early) */
  const interval = (rate: number) => (1000 * PACE_GUARD) / rate
  /** the jobs' slots in time order */
  const slotsOf = (jobs: ClaimedJob[]) => jobs.map((job) => job.slotAt?.getTime() ?? Number.NaN).sort((x, y) => x - y)
  const pace = (lane: string, perSecond: number | null, accountId = big) =>
    harness.database.orm.transaction((tx) => setPace(tx, { accountId, lane, perSecond }))

  test('each claimed job of a paced lane gets its own slot, one interval after the last; the rest stays queued', async () => {
    const queue = queueName('slots')
    const lane = `lane-${queue}`
    await pace(lane, 200)
    await add(many(big, queue, 400))
    await add(many(small, queue, 3))
    const start = now()
    const first = await claimFinishing(queue, lane)
    assert.equal(countBy(first).get(small), 3, 'an unpaced account beside it is not held back')
    assert.ok(
      first.filter((job) => job.accountId === small).every((job) => job.slotAt === undefined),
      'and its jobs have no slot',
    )
    const taken = [...first.filter((job) => job.accountId === big), ...(await claimAll(queue, lane))]
    const perWindow = Math.floor(PACE_WINDOW_MS / interval(200))
    assert.equal(taken.length, perWindow, 'the slots within the window ahead, then nothing until time passes')
    slotsOf(taken).forEach((slot, k) => {
      assert.ok(Math.abs(slot - (start + k * interval(200))) < 1, `slot ${k}: ${slot - start} ms after now`)
    })
    harness.clock.advance(50)
    assert.equal(
      (await claimFinishing(queue, lane)).length,
      0,
      'less room than a step (the slots of half the window, less one)',
    )
    harness.clock.advance(60)
    const next = await claimFinishing(queue, lane)
    const lastSlot = start + perWindow * interval(200)
    assert.equal(next.length, Math.floor((PACE_WINDOW_MS - (lastSlot - now())) / interval(200)))
    assert.ok(Math.abs(slotsOf(next)[0] - lastSlot) < 1, 'the next claim goes on where the last one ended')
    harness.clock.advance(5_000)
    const afterIdle = await claimFinishing(queue, lane)
    assert.ok(Math.abs(slotsOf(afterIdle)[0] - now()) < 1, 'after an idle spell: from now, no burst of the past')
    assert.equal(afterIdle.length, perWindow, 'one window ahead, not the pause')
    // the same queue claimed without its lane is not paced
    const unpaced = await claim(queue, 20, null)
    assert.equal(unpaced.length, 20)
    assert.ok(unpaced.every((job) => job.slotAt === undefined))
  })

  test("an account's jobs sent one at a time take the first slots of its claim, before its bulk jobs", async () => {
    const queue = queueName('slot-priority')
    const lane = `lane-${queue}`
    await pace(lane, 100)
    await add(many(big, queue, 30, { priority: 1, runAt: new Date(now() - 60_000) }))
    const singles = await add(many(big, queue, 2))
    const claimed = await claimFinishing(queue, lane)
    const bySlot = [...claimed].sort((x, y) => (x.slotAt?.getTime() ?? 0) - (y.slotAt?.getTime() ?? 0))
    assert.deepEqual(
      bySlot
        .slice(0, 2)
        .map((job) => job.id)
        .sort(),
      [...singles].sort(),
    )
  })

  test('a paced lane holds at most PACE_IN_FLIGHT_MS of its pace running; finished jobs free its place', async () => {
    const queue = queueName('inflight-cap')
    const lane = `lane-${queue}`
    await pace(lane, 1_000)
    await add(many(big, queue, 900))
    const cap = (1_000 * PACE_IN_FLIGHT_MS) / 1000
    const perWindow = Math.floor(PACE_WINDOW_MS / interval(1_000))
    const first = await claim(queue, 256, lane)
    assert.equal(first.length, perWindow, 'of 256 free slots it takes the slots of its window')
    harness.clock.advance(PACE_WINDOW_MS)
    const second = await claim(queue, 256, lane)
    assert.equal(second.length, perWindow, 'the next window, while the first is still running')
    harness.clock.advance(PACE_WINDOW_MS)
    assert.equal((await claim(queue, 256, lane)).length, cap - 2 * perWindow, 'up to its share of running jobs')
    assert.deepEqual(await claim(queue, 256, lane), [], 'its pace has room, its share of slots does not')
    await add(many(small, queue, 1))
    assert.deepEqual(
      [...countBy(await claim(queue, 256, lane))],
      [[small, 1]],
      "another account's message takes a free slot at once",
    )
    await harness.database.orm.transaction((tx) => completeJobs(tx, first.slice(0, 150)))
    assert.equal((await claim(queue, 256, lane)).length, 150, 'finished jobs free their place')
  })

  test("slots booked outside the claim and the claim's never meet: no 1-second window holds more than the pace", async () => {
    const queue = queueName('shared-lane')
    const lane = `lane-${queue}`
    const rate = 40
    await pace(lane, rate)
    await add(many(big, queue, 300))
    await add(many(big, queue, 20, { priority: 1 }))
    const slots: number[] = []
    let seed = 7
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
      return seed / 2 ** 31
    }
    for (let turn = 0; turn < 400 && slots.length < 400; turn++) {
      const at = now()
      if (random() < 0.3) {
        const slot = await bookSlot(harness.database.orm, harness.clock, { accountId: big, lane })
        assert.ok(slot && slot.getTime() >= at - 1, 'a booked slot is never in the past')
        slots.push(slot.getTime())
      }
      const claimed = await claimFinishing(queue, lane)
      for (const slot of slotsOf(claimed)) assert.ok(slot >= at - 1, 'a claimed slot is never in the past')
      slots.push(...slotsOf(claimed))
      harness.clock.advance(Math.floor(random() * 120))
    }
    slots.sort((x, y) => x - y)
    for (let k = 1; k < slots.length; k++) {
      assert.ok(
        slots[k] - slots[k - 1] >= interval(rate) - 1,
        `slots ${k - 1} and ${k} ${slots[k] - slots[k - 1]} ms apart`,
      )
    }
    assert.ok(busiestSecond(slots) <= rate, `busiest second: ${busiestSecond(slots)}`)
    assert.ok(slots.length >= 300, `${slots.length} slots`)
  })

  test("the operator's burst lets an idle lane start that much of its pace in the past; a busy one keeps its pace", async () => {
    const queue = queueName('burst')
    const lane = `lane-${queue}`
    await pace(lane, 40)
    await add(many(big, queue, 100))
    const start = now()
    const first = await claimFinishing(queue, lane, 400, 250)
    assert.ok(Math.abs(slotsOf(first)[0] - (start - 250)) < 1, 'the first slot a quarter second in the past')
    assert.equal(
      first.length,
      Math.min(Math.floor((PACE_WINDOW_MS + 250) / interval(40)), (40 * PACE_IN_FLIGHT_MS) / 1000),
      'the window and the burst, up to its share of running jobs',
    )
    assert.equal(slotsOf(first).filter((slot) => slot <= start).length, Math.ceil(250 / interval(40)), 'due at once')
    const booked = await bookSlot(harness.database.orm, harness.clock, { accountId: big, lane, burstMs: 250 })
    assert.ok(booked && Math.abs(booked.getTime() - (slotsOf(first).at(-1) ?? 0) - interval(40)) < 1, 'then the pace')
    const other = `lane-${queue}-other`
    await pace(other, 40)
    const idle = await bookSlot(harness.database.orm, harness.clock, { accountId: big, lane: other, burstMs: 250 })
    assert.equal(idle?.getTime(), start - 250, 'an idle lane books from the burst too')
  })

  test("the runner's lead puts an idle lane's first slot ahead of now; a lane with slots ahead goes on from them", async () => {
    const queue = queueName('lead')
    const lane = `lane-${queue}`
    await pace(lane, 100)
    await add(many(big, queue, 100))
    const start = now()
    const leading = (limit: number) =>
      claimJobs(harness.database.orm, harness.clock, { queue, limit, perKey: 1, leaseMs: 30_000, lane, leadMs: 50 })
    const first = await leading(5)
    assert.ok(Math.abs(slotsOf(first)[0] - (start + 50)) < 1, 'the first slot 50 ms from now')
    const next = await leading(5)
    assert.ok(Math.abs(slotsOf(next)[0] - (slotsOf(first)[4] + interval(100))) < 1, 'then right after the last slot')
  })

  test('a changed pace spaces the next slots; a removed pace frees the lane; no lane, no slot', async () => {
    const queue = queueName('repace')
    const lane = `lane-${queue}`
    await pace(lane, 2)
    await add(many(big, queue, 60))
    assert.equal((await claimAll(queue, lane)).length, 1, 'a lane slower than its window: one slot at least')
    await pace(lane, 20)
    harness.clock.advance(1_000)
    const faster = await claimAll(queue, lane)
    assert.equal(faster.length, Math.floor(PACE_WINDOW_MS / interval(20)))
    const [x, y] = slotsOf(faster)
    assert.ok(Math.abs(y - x - interval(20)) < 1, 'slots at the new pace')
    await pace(lane, null)
    const rest = await claim(queue, 60, lane)
    assert.equal(rest.length, 60 - 1 - faster.length, 'no pace: the rest at once')
    assert.ok(rest.every((job) => job.slotAt === undefined))
    assert.equal(await bookSlot(harness.database.orm, harness.clock, { accountId: big, lane }), null)
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
