import type { SQL } from 'drizzle-orm'
import type { Config } from '../../config.ts'
import type { Clock } from '../clock.ts'
import type { Database, Db } from '../db/client.ts'
import { tableLooksAfterItself } from '../db/maintenance.ts'
import { asBulkWork } from '../db/work-priority.ts'
import { countJobRuns } from '../metrics/metrics.ts'
import { noteRunQueues } from '../metrics/scrape.ts'
import { span } from '../tracing/tracing.ts'
import {
  type ClaimedJob,
  claimJobs,
  completeJob,
  completeJobs,
  extendLeases,
  JOBS_CHANNEL,
  killJob,
  LeaseLostError,
  nextDueByQueue,
  PACE_LEAD_MS,
  PACE_WINDOW_MS,
  parseJobsNotice,
  retryJob,
} from './jobs.ts'

export interface JobContext {
  db: Db
  clock: Clock
  /**
   * Marks the job as handled inside the handler's own transaction (with completeJob or retryJob on `tx`), so the
   * runner does not complete it again.
   */
  settled(): void
}

export interface BatchContext {
  db: Db
  clock: Clock
  /** Marks one job of the batch as handled inside the handler's own transaction (see JobContext.settled). */
  settled(job: ClaimedJob): void
  /** how long a lease of this process lasts: a job written already claimed (claimedJobSql) holds one this long */
  leaseMs: number
  /**
   * Hands jobs this batch wrote already claimed (claimedJobSql, committed) to their queue's handler in this process,
   * in the slots the batch frees when it returns: no claim and no wake-up of other workers. At most as many jobs as
   * the batch has, so the process never runs more than its concurrency. A job handed off but never run (the process
   * died or stopped) is claimed again by any worker when its lease runs out.
   */
  handOff(jobs: ClaimedJob[]): void
}

export interface JobHandler {
  /** Runs one job. Returning without settling completes it; throwing retries it with backoff. */
  run(job: ClaimedJob, context: JobContext): Promise<void>
  /**
   * Runs the jobs of one claim together (instead of `run`): the runner claims up to `batchMax` due jobs of the queue
   * at once (default: half the process's concurrency, so one batch can be claimed while another runs) and each holds
   * one of the process's slots until the batch returns. Jobs the handler did not settle are completed after it;
   * when it throws, the unsettled ones are retried with backoff, one by one.
   */
  runBatch?(jobs: ClaimedJob[], context: BatchContext): Promise<void>
  batchMax?: number
  /** how many jobs with the same concurrency key may run at once (across all workers); default 1 */
  perKey?: number
  /**
   * The paced lane of the queue's jobs (job_paces, set with setPace): a claim takes an account's jobs only as far as
   * its pace allows in the next moment, the rest stays queued without holding a slot
   */
  lane?: string
  /** a thrown error is retried until this many claims, then the job is kept as dead; default 20 */
  maxAttempts?: number
  /** its jobs are bulk work whatever their priority (a newsletter's fan-out): see platform/db/work-priority.ts */
  bulk?: boolean
  /**
   * A read the claim makes beside each job, in its own statement (claimJobs' `also`): a SELECT of one column `also`
   * over the claimed job `c`. A job carries it as `also` when it came from a claim (not from BatchContext.handOff).
   */
  claimAlso?: SQL
}

/** Runs a claim's work as bulk work when its queue is bulk or every job of it is (priority 1), else as it comes. */
function asWorkOf<T>(handler: JobHandler, jobs: ClaimedJob[], run: () => Promise<T>): Promise<T> {
  return handler.bulk || jobs.every((job) => job.priority === 1) ? asBulkWork(run) : run()
}

export type JobHandlers = Record<string, JobHandler>

export interface JobRunnerOptions {
  database: Database
  clock: Clock
  handlers: JobHandlers
  /** jobs running at once in this process, over all queues */
  concurrency: number
  /** how long a claim holds a job before another worker may take it; renewed while the job runs */
  leaseMs: number
  /** a paced lane's burst after an idle spell, in milliseconds of its pace (HEROLD_PACE_BURST_MS; default 0) */
  paceBurstMs?: number
  /** the fallback poll, for a NOTIFY that never arrived */
  pollMs?: number
  /** how long work enqueued in a batch queue gathers while a batch of it runs (default BATCH_GATHER_MS) */
  gatherMs?: number
  /** finished jobs between two vacuums of the jobs table when the database does not vacuum it (JOBS_VACUUM_EVERY) */
  vacuumEvery?: number
  log?: (message: string, error?: unknown) => void
}

const BACKOFF_BASE_MS = 5_000
/**
 * The timer for future work is recomputed at most this often: under a burst every finished job ends a claim round,
 * and querying after each round added a statement per delivery on the single-connection PGlite. Work due now never
 * waits for it (NOTIFY and finishing jobs wake the runner); a job due in less than this may start up to this much
 * late.
 */
const SCHEDULE_MIN_INTERVAL_MS = 200
/**
 * Every finished job leaves a dead row and dead entries in the claim's indexes, which later claims walk past until
 * VACUUM removes them. PGlite has no autovacuum, and a server may run without it (for the jobs table or at all):
 * there the runner vacuums the table itself once this process has finished this many jobs since its last vacuum,
 * at most every JOBS_VACUUM_MIN_INTERVAL_MS, and analyzes it with the vacuum at most every
 * JOBS_ANALYZE_MIN_INTERVAL_MS (the claim's plan does not depend on statistics; other reads of the table do).
 */
const JOBS_VACUUM_EVERY = 5_000
/**
 * Work an account enqueues in a batch queue while a batch of its work in that queue runs waits up to this long (or
 * until a batch of the queue ends, whichever comes first) before it is claimed, so that what arrives in the meantime
 * is claimed together. Claimed at each NOTIFY instead, a steady stream of single sends (POST /v1/messages, 32 clients)
 * made a batch of a few sends per accepted group, each batch paying its own dozen round trips: sending with role
 * `all` fell to a fifth of its pace (issue 49). Work of an account with nothing of the queue running here is claimed
 * at once, so another account's message beside a newsletter does not wait. 100 ms: measured with bench/e2e.ts on
 * PostgreSQL (role `all`, 1,000 POSTs, 2026-11-29), 20 ms gave 2.8–3.1 statements and 2.3–3.0 ms of CPU a send,
 * 80–150 ms 1.7–2.2 statements and 1.5–1.8 ms; the end of the running batch usually comes first.
 */
export const BATCH_GATHER_MS = 100
/** see JobRunner #paceNext */
const PACE_WAKE_MARGIN_MS = 5
const JOBS_VACUUM_MIN_INTERVAL_MS = 10_000
const JOBS_ANALYZE_MIN_INTERVAL_MS = 60_000
const BACKOFF_MAX_MS = 60 * 60 * 1000

export function backoffAfter(attempts: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, attempts - 1))
}

/**
 * Runs the jobs of the given queues: woken by NOTIFY when a job is enqueued, by a timer when the next scheduled
 * job or an expired lease comes due, and by a slow poll as a safety net.
 */
export class JobRunner {
  readonly #options: Required<Omit<JobRunnerOptions, 'log'>> & Pick<JobRunnerOptions, 'log'>
  readonly #queues: string[]
  readonly #running = new Map<string, { job: ClaimedJob; done: Promise<void> }>()
  #pumping: Promise<void> | null = null
  #again = false
  #stopped = true
  #timer: NodeJS.Timeout | null = null
  /** a recomputation of the timer held back by SCHEDULE_MIN_INTERVAL_MS */
  #scheduleLater: NodeJS.Timeout | null = null
  #scheduledAt = Number.NEGATIVE_INFINITY
  /** a look at the schedule is running; another was asked for meanwhile */
  #looking = false
  #lookAgain = false
  #finishedSinceVacuum = 0
  /** does the database vacuum the jobs table itself? null until the runner's start has looked (once) */
  #tableLooksAfterItself: boolean | null = null
  #vacuuming = false
  #lastVacuumAt = Number.NEGATIVE_INFINITY
  #lastAnalyzeAt = Number.NEGATIVE_INFINITY
  #heartbeat: NodeJS.Timeout | null = null
  #unlisten: (() => Promise<void>) | null = null
  #idleWaiters: Array<() => void> = []
  /** queues that may have claimable work: notified, a job of theirs finished, or the timer fired */
  readonly #dirty = new Set<string>()
  /** queues with work enqueued (NOTIFY) since their last claim */
  readonly #enqueued = new Set<string>()
  /** queues whose last claim took as many jobs as it asked for: more may be due than the free slots */
  readonly #backlog = new Set<string>()
  /** queues where a lease may have run out since their last reap (the timer is due at the earliest expiry) */
  readonly #reapDue = new Set<string>()
  /** batch queues whose enqueued work gathers while a batch of theirs runs (BATCH_GATHER_MS): their timers */
  readonly #gathering = new Map<string, NodeJS.Timeout>()
  /** paced queues: the timer that claims again when their lane has room for its next step (#paceNext) */
  readonly #paceTimers = new Map<string, NodeJS.Timeout>()
  /** paced queues: per account with slots booked here, when its lane has room for its next step */
  readonly #paceWakes = new Map<string, Map<string, number>>()

  constructor(options: JobRunnerOptions) {
    this.#options = {
      pollMs: 10_000,
      paceBurstMs: 0,
      vacuumEvery: JOBS_VACUUM_EVERY,
      gatherMs: BATCH_GATHER_MS,
      ...options,
    }
    this.#queues = Object.keys(options.handlers)
  }

  get inFlight(): number {
    return this.#running.size
  }

  async start(): Promise<void> {
    if (!this.#stopped) return
    this.#stopped = false
    noteRunQueues(this.#queues)
    this.#tableLooksAfterItself = await tableLooksAfterItself(this.#options.database, 'jobs').catch(() => true)
    this.#unlisten = await this.#options.database.listen(JOBS_CHANNEL, (payload) => {
      if (payload === undefined) return this.wake(this.#queues)
      const { queue, accounts } = parseJobsNotice(payload)
      if (this.#queues.includes(queue)) {
        this.#enqueued.add(queue)
        this.#wakeEnqueued(queue, accounts)
      }
    })
    this.#heartbeat = setInterval(() => this.#renewLeases(), Math.max(50, Math.floor(this.#options.leaseMs / 3)))
    this.#heartbeat.unref()
    for (const queue of this.#queues) this.#reapDue.add(queue)
    this.wake(this.#queues)
  }

  /**
   * A NOTIFY of work enqueued in `queue` by `accounts` (undefined: not named): claimed at once, unless a batch of the
   * queue runs and every one of these accounts has work of the queue running here; then the work gathers until a
   * batch of the queue ends (its end wakes the queue) or gatherMs pass, and is claimed together. So an account's
   * stream of sends makes few large batches, and another account's message beside it is claimed at its NOTIFY.
   */
  #wakeEnqueued(queue: string, accounts: string[] | undefined): void {
    const streaming = accounts ? accounts.every((account) => this.#runningIn(queue, account)) : this.#runningIn(queue)
    if (!this.#options.handlers[queue].runBatch || !streaming) {
      this.wake([queue])
      return
    }
    if (this.#gathering.has(queue)) return
    const timer = setTimeout(() => {
      this.#gathering.delete(queue)
      this.wake([queue])
    }, this.#options.gatherMs)
    timer.unref()
    this.#gathering.set(queue, timer)
  }

  /** Stops claiming, waits for running jobs (up to graceMs), then stops listening. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.#stopped) return
    this.#stopped = true
    if (this.#timer) clearTimeout(this.#timer)
    if (this.#scheduleLater) clearTimeout(this.#scheduleLater)
    this.#scheduleLater = null
    for (const timer of this.#gathering.values()) clearTimeout(timer)
    this.#gathering.clear()
    for (const timer of this.#paceTimers.values()) clearTimeout(timer)
    this.#paceTimers.clear()
    this.#paceWakes.clear()
    await this.#pumping
    const running = Promise.allSettled([...this.#running.values()].map((r) => r.done))
    await Promise.race([running, new Promise((resolve) => setTimeout(resolve, graceMs).unref())])
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    await this.#unlisten?.().catch(() => {})
    this.#unlisten = null
  }

  /** Claims what is due now in these queues (default: all), as free slots allow. Calls coalesce. */
  wake(queues: string[] = this.#queues): void {
    for (const queue of queues) this.#dirty.add(queue)
    if (this.#stopped) return
    if (this.#pumping) {
      this.#again = true
      return
    }
    // started on the next turn of the event loop, so the wakes of jobs finished together (a group commit settles
    // many) make one claim round, not one claim for the first and an empty one for the rest
    this.#pumping = new Promise((resolve) => setImmediate(resolve))
      .then(() => this.#pump())
      .catch((error) => this.#options.log?.('job claim failed', error))
      .finally(() => {
        this.#pumping = null
        if (this.#again) {
          this.#again = false
          this.wake([])
        }
        // also while work keeps waking the runner (#again): otherwise, under a stream of sends, the timer for jobs
        // scheduled in other queues (a newsletter's progress check) was never set and they waited for the poll or for
        // the stream to end. #schedule queries at most every SCHEDULE_MIN_INTERVAL_MS.
        this.#schedule().catch((error) => this.#options.log?.('job schedule failed', error))
      })
  }

  /**
   * Runs until nothing is due and nothing runs (tests: after moving the clock). Jobs enqueued by running jobs
   * are included.
   */
  async drain(): Promise<void> {
    if (this.#stopped) throw new Error('drain() needs a started runner')
    for (;;) {
      for (const queue of this.#queues) this.#reapDue.add(queue)
      this.wake(this.#queues)
      while (this.#pumping) await this.#pumping
      if (this.#running.size === 0) return
      await new Promise<void>((resolve) => this.#idleWaiters.push(resolve))
    }
  }

  async #pump(): Promise<void> {
    while (this.#dirty.size > 0 && !this.#stopped) {
      for (const queue of [...this.#dirty]) {
        const free = this.#options.concurrency - this.#running.size
        if (free <= 0) return
        // cleared before the claim, so a NOTIFY arriving during it marks the queue again
        this.#dirty.delete(queue)
        const handler = this.#options.handlers[queue]
        const batchMax = handler.batchMax ?? Math.max(1, Math.ceil(this.#options.concurrency / 2))
        const limit = handler.runBatch ? Math.min(free, batchMax) : free
        // a batch queue with batches still running waits for half a batch of free slots while it has a backlog (its
        // last claim was full): claiming the few slots each finishing batch frees made ever smaller batches, and every
        // batch costs its round trips whatever its size (the running batches wake the queue again when they finish).
        // Without a backlog (everything due was taken, or the rest waits for its pace) new work is claimed at once: an
        // account's single message must not wait for another account's batches.
        // Work enqueued since the last claim (a NOTIFY) is claimed at once whatever the backlog: the fair claim hands
        // the free slots to the accounts with the fewest jobs in flight, so a single message goes now.
        const enqueued = this.#enqueued.delete(queue)
        if (handler.runBatch && limit < batchMax / 2 && this.#runningIn(queue) && this.#backlog.has(queue) && !enqueued)
          continue
        const reap = this.#reapDue.delete(queue)
        // this claim takes what gathered: its timer has nothing left to wake
        clearTimeout(this.#gathering.get(queue))
        this.#gathering.delete(queue)
        const claimed = await claimJobs(this.#options.database.orm, this.#options.clock, {
          queue,
          limit,
          perKey: handler.perKey ?? 1,
          leaseMs: this.#options.leaseMs,
          reap,
          held: reap ? [...this.#running.keys()] : undefined,
          exclusive: this.#options.database.kind === 'postgres',
          lane: handler.lane ?? null,
          burstMs: this.#options.paceBurstMs,
          leadMs: PACE_LEAD_MS,
          also: handler.claimAlso,
        })
        if (handler.runBatch && claimed.length > 0) this.#launchBatch(claimed, handler)
        else for (const job of claimed) this.#launch(job, handler)
        this.#paceNext(queue, claimed)
        if (claimed.length === limit) {
          this.#dirty.add(queue)
          this.#backlog.add(queue)
        } else this.#backlog.delete(queue)
      }
    }
  }

  /**
   * A claim of a paced lane booked its jobs' slots up to the last one's. The next claim of that lane is due when its
   * booked slots reach less than half of PACE_WINDOW_MS ahead (then it has room for a step, see the claim's `step` in
   * 0083_paced_slots): the next batch is claimed while the last one still sends, its checks made before its first
   * slot. Waiting for the running batch to end instead left the lane idle for the next batch's checks, a tenth of its
   * pace at 1,000/s. One timer per queue, at the earliest of its lanes' times; PACE_WAKE_MARGIN_MS late, as a claim a
   * hair early finds too little room.
   */
  #paceNext(queue: string, claimed: ClaimedJob[]): void {
    let wakes = this.#paceWakes.get(queue)
    for (const job of claimed) {
      if (!job.slotAt) continue
      wakes ??= new Map()
      const at = job.slotAt.getTime() - PACE_WINDOW_MS / 2 + PACE_WAKE_MARGIN_MS
      wakes.set(job.accountId, Math.max(at, wakes.get(job.accountId) ?? Number.NEGATIVE_INFINITY))
    }
    if (!wakes || wakes.size === 0) return
    this.#paceWakes.set(queue, wakes)
    clearTimeout(this.#paceTimers.get(queue))
    const now = this.#options.clock.now().getTime()
    // the lanes due first wake the queue; the claim then also finds the others that came due meanwhile
    const next = Math.min(...wakes.values())
    const timer = setTimeout(
      () => {
        this.#paceTimers.delete(queue)
        const at = this.#options.clock.now().getTime()
        for (const [account, wake] of wakes) if (wake <= at) wakes.delete(account)
        this.wake([queue])
        // lanes still ahead keep their timer (one per queue, at the earliest)
        if (wakes.size > 0) this.#paceNext(queue, [])
      },
      Math.max(0, next - now),
    )
    timer.unref()
    this.#paceTimers.set(queue, timer)
  }

  /** whether a job of `queue` (of `account`, when given) runs in this process */
  #runningIn(queue: string, account?: string): boolean {
    for (const { job } of this.#running.values())
      if (job.queue === queue && (account === undefined || job.accountId === account)) return true
    return false
  }

  #launch(job: ClaimedJob, handler: JobHandler): void {
    const run = () =>
      span(`job ${job.queue}`, { 'herold.job.queue': job.queue }, () => this.#execute(job, handler), job.traceparent)
    const done = asWorkOf(handler, [job], run).finally(() => {
      this.#running.delete(job.leaseToken)
      this.#vacuumSometimes()
      for (const resolve of this.#idleWaiters.splice(0)) resolve()
      this.wake([job.queue])
    })
    this.#running.set(job.leaseToken, { job, done })
  }

  #launchBatch(jobs: ClaimedJob[], handler: JobHandler): void {
    const handed: ClaimedJob[] = []
    const run = () =>
      span(
        `job ${jobs[0].queue}`,
        { 'herold.job.queue': jobs[0].queue, 'herold.job.batch': jobs.length },
        () => this.#executeBatch(jobs, handler, handed),
        jobs.find((job) => job.traceparent)?.traceparent,
      )
    const done = asWorkOf(handler, jobs, run)
      .catch((error) => this.#options.log?.(`job batch ${jobs[0].queue} failed`, error))
      .finally(() => {
        for (const job of jobs) this.#running.delete(job.leaseToken)
        // the jobs handed off take the slots this batch frees (never more of them)
        this.#adopt(handed.slice(0, jobs.length))
        this.#vacuumSometimes(jobs.length)
        for (const resolve of this.#idleWaiters.splice(0)) resolve()
        this.wake([jobs[0].queue])
      })
    for (const job of jobs) this.#running.set(job.leaseToken, { job, done })
  }

  /** Runs jobs written already claimed by a batch of this process (BatchContext.handOff), per queue as batches. */
  #adopt(jobs: ClaimedJob[]): void {
    // a stopping runner leaves them to be claimed again when their leases run out
    if (this.#stopped || jobs.length === 0) return
    const byQueue = new Map<string, ClaimedJob[]>()
    for (const job of jobs) byQueue.set(job.queue, [...(byQueue.get(job.queue) ?? []), job])
    for (const [queue, ofQueue] of byQueue) {
      const handler = this.#options.handlers[queue]
      if (!handler) continue
      if (handler.runBatch) this.#launchBatch(ofQueue, handler)
      else for (const job of ofQueue) this.#launch(job, handler)
    }
  }

  async #executeBatch(jobs: ClaimedJob[], handler: JobHandler, handed: ClaimedJob[] = []): Promise<void> {
    const { database, clock } = this.#options
    const settled = new Set<ClaimedJob>()
    try {
      await handler.runBatch?.(jobs, {
        db: database.orm,
        clock,
        settled: (job) => settled.add(job),
        leaseMs: this.#options.leaseMs,
        handOff: (next) => handed.push(...next),
      })
    } catch (error) {
      if (!(error instanceof LeaseLostError)) this.#options.log?.(`job batch ${jobs[0].queue} failed`, error)
      countJobRuns(jobs[0].queue, 'completed', settled.size)
      countJobRuns(jobs[0].queue, error instanceof LeaseLostError ? 'lost' : 'failed', jobs.length - settled.size)
      const message = error instanceof Error ? error.message : String(error)
      for (const job of jobs.filter((j) => !settled.has(j))) {
        await database.orm
          .transaction(async (tx) => {
            if (job.attempts >= (handler.maxAttempts ?? 20)) await killJob(tx, clock, job, message)
            else await retryJob(tx, clock, job, new Date(clock.now().getTime() + backoffAfter(job.attempts)), message)
          })
          .catch(() => {})
      }
      return
    }
    countJobRuns(jobs[0].queue, 'completed', jobs.length)
    const open = jobs.filter((job) => !settled.has(job))
    if (open.length === 0) return
    // one lost lease must not keep the others from completing
    await database.orm
      .transaction((tx) => completeJobs(tx, open))
      .catch(async (error) => {
        if (!(error instanceof LeaseLostError)) throw error
        for (const job of open) await database.orm.transaction((tx) => completeJob(tx, job)).catch(() => {})
      })
  }

  async #execute(job: ClaimedJob, handler: JobHandler): Promise<void> {
    const { database, clock } = this.#options
    let settled = false
    try {
      await handler.run(job, { db: database.orm, clock, settled: () => (settled = true) })
      if (!settled) await database.orm.transaction((tx) => completeJob(tx, job))
      countJobRuns(job.queue, 'completed')
    } catch (error) {
      countJobRuns(job.queue, error instanceof LeaseLostError ? 'lost' : 'failed')
      if (error instanceof LeaseLostError) return
      this.#options.log?.(`job ${job.queue}/${job.id} failed`, error)
      const message = error instanceof Error ? error.message : String(error)
      await database.orm
        .transaction(async (tx) => {
          if (job.attempts >= (handler.maxAttempts ?? 20)) await killJob(tx, clock, job, message)
          else await retryJob(tx, clock, job, new Date(clock.now().getTime() + backoffAfter(job.attempts)), message)
        })
        .catch(() => {})
    }
  }

  #vacuumSometimes(finished = 1): void {
    if (this.#tableLooksAfterItself !== false) return
    this.#finishedSinceVacuum += finished
    const now = performance.now()
    if (
      this.#vacuuming ||
      this.#finishedSinceVacuum < this.#options.vacuumEvery ||
      now - this.#lastVacuumAt < JOBS_VACUUM_MIN_INTERVAL_MS
    )
      return
    this.#finishedSinceVacuum = 0
    this.#lastVacuumAt = now
    const analyze = now - this.#lastAnalyzeAt >= JOBS_ANALYZE_MIN_INTERVAL_MS
    if (analyze) this.#lastAnalyzeAt = now
    this.#vacuuming = true
    // SKIP_LOCKED: while another worker process vacuums the table, this one does not wait for it
    this.#options.database
      .query(`VACUUM (SKIP_LOCKED${analyze ? ', ANALYZE' : ''}) jobs`)
      .catch((error) => this.#options.log?.('jobs vacuum failed', error))
      .finally(() => {
        this.#vacuuming = false
      })
  }

  async #renewLeases(): Promise<void> {
    const jobs = [...this.#running.values()].map((r) => r.job)
    await extendLeases(this.#options.database.orm, this.#options.clock, jobs, this.#options.leaseMs).catch(() => {})
  }

  async #schedule(): Promise<void> {
    if (this.#stopped || this.#scheduleLater) return
    const wait = this.#scheduledAt + SCHEDULE_MIN_INTERVAL_MS - performance.now()
    if (wait > 0) {
      this.#scheduleLater = setTimeout(() => {
        this.#scheduleLater = null
        this.#schedule().catch((error) => this.#options.log?.('job schedule failed', error))
      }, wait)
      this.#scheduleLater.unref()
      return
    }
    // one look at a time: a look asked for while one runs is made once it is done
    if (this.#looking) {
      this.#lookAgain = true
      return
    }
    this.#scheduledAt = performance.now()
    this.#looking = true
    let due: Awaited<ReturnType<typeof nextDueByQueue>>
    try {
      due = await nextDueByQueue(this.#options.database.orm, this.#options.clock, this.#queues)
    } finally {
      this.#looking = false
      if (this.#lookAgain) {
        this.#lookAgain = false
        setImmediate(() => this.#schedule().catch((error) => this.#options.log?.('job schedule failed', error)))
      }
    }
    if (this.#stopped) return
    // a job that came due between two looks is in no timer (the timer knows future times only): under a stream of
    // sends, which recomputes the timer every SCHEDULE_MIN_INTERVAL_MS, a newsletter's progress check due in 5 s was
    // passed over every time and never ran. Queues with due work are woken now (at most this often).
    const now = this.#options.clock.now().getTime()
    // Likewise a lease that ran out between two looks (a dead worker's jobs): the timer knew it only while it lay
    // ahead, so under a stream of looks it was passed over and the jobs stayed `running` for good. Queues holding an
    // expired lease are reaped now.
    const expired = due.filter((d) => d.leaseAt !== null && d.leaseAt.getTime() <= now).map((d) => d.queue)
    for (const queue of expired) this.#reapDue.add(queue)
    const dueNow = due
      // (a queue whose enqueued work gathers behind a running batch is woken by its own timer or that batch's end)
      .filter(
        (d) => (d.dueNow && !this.#dirty.has(d.queue) && !this.#gathering.has(d.queue)) || expired.includes(d.queue),
      )
      .map((d) => d.queue)
    if (dueNow.length > 0) this.wake(dueNow)
    if (this.#timer) clearTimeout(this.#timer)
    const times = due.flatMap((d) => [d.runAt, d.leaseAt]).filter((t): t is Date => t !== null && t.getTime() > now)
    const untilDue = times.length > 0 ? Math.min(...times.map((t) => t.getTime())) - now : Number.POSITIVE_INFINITY
    const delay = Math.max(1, Math.min(this.#options.pollMs, untilDue + 5))
    const polling = delay >= this.#options.pollMs
    this.#timer = setTimeout(() => {
      if (polling) {
        // The safety net, for a NOTIFY that never arrived: a look (one statement, an index probe per queue) wakes the
        // queues with due work or a lease run out. Claiming every queue instead cost an idle server a transaction per
        // queue every poll (2-5 % of a core on the embedded database, issue 35).
        this.#scheduledAt = Number.NEGATIVE_INFINITY
        this.#schedule().catch((error) => this.#options.log?.('job schedule failed', error))
        return
      }
      // only the queues whose work came due: under a stream of scheduled jobs (the sandbox's statuses) the others
      // are not claimed for nothing
      const at = this.#options.clock.now().getTime()
      const woken: string[] = []
      for (const d of due) {
        if (d.leaseAt && d.leaseAt.getTime() <= at) this.#reapDue.add(d.queue)
        if ((d.runAt && d.runAt.getTime() <= at) || this.#reapDue.has(d.queue)) woken.push(d.queue)
      }
      this.wake(woken)
    }, delay)
    this.#timer.unref()
  }
}

/** A module's durable job queues (HeroldModule.jobs in src/platform/module.ts). */
export interface ModuleJobs {
  handlers: JobHandlers
  /** frees what the handlers hold (HTTP connection pools), after the runner stopped */
  close?: () => Promise<void>
}

/** What the runner needs of the platform; the modules get the same. */
type RunnerDeps = { config: Config; database: Database; clock: Clock }

/** The one runner of a process: every module's queues, bounded by HEROLD_WORKER_CONCURRENCY in total. */
export function jobRunnerFor<D extends RunnerDeps>(
  deps: D,
  modules: Array<{ jobs?: (deps: D) => ModuleJobs }>,
  log?: JobRunnerOptions['log'],
): { runner: JobRunner; start(): Promise<() => Promise<void>> } {
  const parts = modules.flatMap((m) => (m.jobs ? [m.jobs(deps)] : []))
  const runner = new JobRunner({
    database: deps.database,
    clock: deps.clock,
    handlers: Object.assign({}, ...parts.map((p) => p.handlers)),
    concurrency: deps.config.workerConcurrency,
    leaseMs: deps.config.jobLeaseSeconds * 1000,
    paceBurstMs: deps.config.paceBurstMs,
    log,
  })
  return {
    runner,
    async start() {
      await runner.start()
      return async () => {
        await runner.stop()
        for (const part of parts) await part.close?.().catch(() => {})
      }
    },
  }
}
