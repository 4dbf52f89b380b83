import assert from 'node:assert/strict'
import { after, before } from 'node:test'
import { type ClaimedJob, claimJobs, enqueue } from '../../src/platform/jobs/jobs.ts'
import { type JobHandlers, JobRunner } from '../../src/platform/jobs/runner.ts'
import { createHarness, createTestAccount, type Harness } from './harness.ts'

/**
 * What the job tests share: a harness with one account (made before the file's tests, closed after them), jobs
 * enqueued at the harness's time, runners over it, and a look at a queue's rows.
 */
export function jobsKit() {
  const kit = {
    harness: undefined as unknown as Harness,
    accountId: '',

    /** Jobs enqueued in a transaction of their own, at the harness's time. */
    enqueueNow: (jobs: Parameters<typeof enqueue>[2]) =>
      kit.harness.database.orm.transaction((tx) => enqueue(tx, kit.harness.clock, jobs)),

    queueName: (label: string) => `test.${label}.${Math.random().toString(36).slice(2, 8)}`,

    /** `n` jobs enqueued in one transaction and claimed at once (a lease of 30 s). */
    async enqueueAndClaim(queue: string, n: number, perKey: number): Promise<ClaimedJob[]> {
      await kit.enqueueNow(Array.from({ length: n }, () => ({ accountId: kit.accountId, queue, payload: {} })))
      const claimed = await claimJobs(kit.harness.database.orm, kit.harness.clock, {
        queue,
        limit: n,
        perKey,
        leaseMs: 30_000,
      })
      assert.equal(claimed.length, n)
      return claimed
    },

    runner(
      handlers: JobHandlers,
      options: { concurrency?: number; leaseMs?: number; pollMs?: number; gatherMs?: number } = {},
    ) {
      return new JobRunner({
        database: kit.harness.database,
        clock: kit.harness.clock,
        handlers,
        concurrency: options.concurrency ?? 8,
        leaseMs: options.leaseMs ?? 30_000,
        pollMs: options.pollMs ?? 60_000,
        ...(options.gatherMs === undefined ? {} : { gatherMs: options.gatherMs }),
      })
    },

    jobRows: (queue: string) =>
      kit.harness.database.query<{ state: string; attempts: number; last_error: string | null }>(
        'SELECT state, attempts, last_error FROM jobs WHERE queue = $1',
        [queue],
      ),
  }
  before(async () => {
    kit.harness = await createHarness()
    kit.accountId = (await createTestAccount(kit.harness)).accountId
  })
  after(() => kit.harness.close())
  return kit
}

export function deferred<T = void>() {
  let resolve!: (value: T) => void
  const promise = new Promise<T>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

export const withinMs = <T>(promise: Promise<T>, ms: number, what: string) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref()),
  ])

/** the most of `times` (milliseconds, sorted) in any window [t, t + 1 s) */
export function busiestSecond(times: number[]): number {
  let most = 0
  for (let end = 0, start = 0; end < times.length; end++) {
    while (times[end] - times[start] >= 1000) start++
    most = Math.max(most, end - start + 1)
  }
  return most
}
