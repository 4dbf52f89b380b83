import { randomUUID } from 'node:crypto'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { EventFanOut } from '../../platform/events/events.ts'
import { groupCommit } from '../../platform/jobs/group-commit.ts'
import {
  type ClaimedJob,
  cancelQueuedJobs,
  completeJob,
  completeJobs,
  enqueue,
  LeaseLostError,
  retryJob,
} from '../../platform/jobs/jobs.ts'
import type { JobContext, JobHandler } from '../../platform/jobs/runner.ts'
import { countWebhookDelivery, observeWebhookLag } from '../../platform/metrics/metrics.ts'
import { OutboundError, type OutboundHttp } from '../../platform/outbound-http.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import * as repository from './webhooks.repository.ts'
import { deliveryBody, deliveryHeaders, isSuccess, MAX_CONSECUTIVE_FAILURES, nextAttemptAt } from './webhooks.rules.ts'
import { DELIVERY_QUEUE } from './webhooks.service.ts'

/** Requests to one subscription's receiver in flight at once from a worker process: a slow receiver holds only these. */
export const PER_SUBSCRIPTION_CONCURRENCY = 8
/**
 * Delivery jobs of one subscription a claim may hold at once, over all workers: several times its requests in flight,
 * so the next ones are claimed and read, and the last ones recorded, while requests run, and the receiver never waits
 * for the database (with 32 a drain waited for the claim and record round trips; 64 claims and records them in
 * batches twice as large). At most a quarter of a process's slots (HEROLD_WORKER_CONCURRENCY), so a subscription that
 * hangs holds only those.
 */
export function deliveriesInFlight(workerConcurrency: number): number {
  return Math.max(
    PER_SUBSCRIPTION_CONCURRENCY,
    Math.min(16 * PER_SUBSCRIPTION_CONCURRENCY, Math.floor(workerConcurrency / 4)),
  )
}

/** A count of requests in flight per subscription; a request past the limit waits for one to finish, first come first. */
function perSubscriptionLimit(limit: number) {
  const lanes = new Map<string, { active: number; waiting: Array<() => void> }>()
  return async function run<T>(key: string, work: () => Promise<T>): Promise<T> {
    let lane = lanes.get(key)
    if (!lane) {
      lane = { active: 0, waiting: [] }
      lanes.set(key, lane)
    }
    if (lane.active >= limit) await new Promise<void>((resolve) => lane.waiting.push(resolve))
    else lane.active++
    try {
      return await work()
    } finally {
      // the slot passes straight to the next waiting request
      const next = lane.waiting.shift()
      if (next) next()
      else if (--lane.active === 0) lanes.delete(key)
    }
  }
}

export interface WebhookWorkerDeps {
  clock: Clock
  secrets: SecretBox
  http: OutboundHttp
  /** the process's HEROLD_WORKER_CONCURRENCY (deliveriesInFlight); default 256 */
  workerConcurrency?: number
}

/** Writes the deliveries of recorded events, and their jobs, in the events' own transaction (one statement). */
export const webhookFanOut: EventFanOut = {
  fanOut: (tx, clock, recorded) => repository.fanOutDeliveries(tx, DELIVERY_QUEUE, clock.now(), recorded),
}

/** event.dispatch: turns recorded events (one, or a bulk batch) into one delivery job per subscription that wants each. */
export function dispatchHandler(deps: { clock: Clock }): JobHandler {
  // Dispatch jobs claimed together are dispatched in one transaction: under a burst of single-event commits
  // that is a handful of statements per batch instead of eight per event.
  const dispatch = groupCommit(async (batch: Array<{ job: ClaimedJob; db: Db }>) => {
    const db = batch[0].db
    const jobs = batch.map((b) => b.job)
    try {
      await db.transaction((tx) => dispatchJobs(tx, deps.clock, jobs))
      return jobs.map(() => null)
    } catch {
      // one bad job (or one lost lease) must not hold back the others: each on its own
      return Promise.all(
        jobs.map((job) =>
          db
            .transaction((tx) => dispatchJobs(tx, deps.clock, [job]))
            .then(
              () => null,
              (error) => error,
            ),
        ),
      )
    }
  })
  return {
    async run(job, context) {
      const error = await dispatch({ job, db: context.db })
      if (error) throw error
      context.settled()
    },
  }
}

async function dispatchJobs(tx: Db, clock: Clock, jobs: ClaimedJob[]): Promise<void> {
  const wanted = jobs.flatMap((job) =>
    (Array.isArray(job.payload.eventIds) ? job.payload.eventIds.map(String) : [String(job.payload.eventId)]).map(
      (eventId) => ({ accountId: job.accountId, eventId }),
    ),
  )
  const accountIds = [...new Set(jobs.map((job) => job.accountId))]
  const found = await repository.findEvents(
    tx,
    accountIds,
    wanted.map((w) => w.eventId),
  )
  const eventsByKey = new Map(found.map((event) => [`${event.accountId}:${event.id}`, event]))
  const subscriptions = await repository.enabledSubscriptions(tx, accountIds)
  const now = clock.now()
  const deliveries: Parameters<typeof repository.insertDeliveries>[1] = []
  for (const { accountId, eventId } of wanted) {
    const event = eventsByKey.get(`${accountId}:${eventId}`)
    if (!event) continue
    for (const subscription of subscriptions) {
      if (subscription.accountId !== accountId || !subscription.events.includes(event.name)) continue
      deliveries.push({
        accountId,
        id: randomUUID(),
        subscriptionId: subscription.id,
        eventId,
        eventName: event.name,
        nextAttemptAt: now,
        createdAt: now,
      })
    }
  }
  const created = await repository.insertDeliveries(tx, deliveries)
  await enqueue(
    tx,
    clock,
    created.map((delivery) => ({
      accountId: delivery.accountId,
      queue: DELIVERY_QUEUE,
      payload: { deliveryId: delivery.id },
      concurrencyKey: delivery.subscriptionId,
    })),
  )
  await completeJobs(tx, jobs)
}

interface AttemptOutcome {
  startedAt: Date
  durationMs: number
  statusCode: number | null
  error: OutboundError['code'] | null
}

/** webhook.deliver: one attempt of one delivery, then its record, the subscription's health and the next try. */
export function deliverHandler(deps: WebhookWorkerDeps): JobHandler {
  // A claim reads its deliveries itself (claimAlso below); jobs that did not come from a claim (a test's, a handler
  // called directly) are read together in one query. Successes are recorded together (group commit): a burst costs a
  // few statements per batch of deliveries on the one PGlite connection, not ten per delivery.
  const load = groupCommit(async (batch: Array<{ job: ClaimedJob; db: Db }>) => {
    const refs = batch.map(({ job }) => ({ accountId: job.accountId, deliveryId: String(job.payload.deliveryId) }))
    const found = await repository.loadDeliveries(batch[0].db, refs)
    return refs.map((ref) => found.get(`${ref.accountId}:${ref.deliveryId}`) ?? null)
  })
  const recordSuccess = groupCommit(async (batch: Array<{ attempt: repository.SucceededAttempt; db: Db }>) => {
    const attempts = batch.map((b) => b.attempt)
    const recorded = await repository.recordSuccesses(batch[0].db, attempts, deps.clock.now())
    return attempts.map((a) => recorded.has(a.jobId))
  })
  const limit = perSubscriptionLimit(PER_SUBSCRIPTION_CONCURRENCY)
  // When this process disables a subscription (a 410, 25 failures in a row), its deliveries read before and still
  // waiting for a request slot are dropped, not sent: the spec's "disabled at once". From a 410's answer until its
  // record commits the mark is `pending` (every waiting delivery is dropped); then it is the commit's time, and a
  // delivery read after it sees the stored status (one read enabled again clears the mark).
  const disabledAt = new Map<string, number | 'pending'>()
  const disabledSince = (id: string, loadedAt: number) => {
    const mark = disabledAt.get(id)
    return mark === 'pending' || (mark !== undefined && mark > loadedAt)
  }
  // a subscription's secret, opened once rather than for each delivery (keyed by its sealed form: a rotation is a new one)
  const opened = new Map<string, string>()
  const secretOf = (sealed: string) => {
    let secret = opened.get(sealed)
    if (secret === undefined) {
      if (opened.size >= 1_000) opened.clear()
      secret = deps.secrets.open(sealed)
      opened.set(sealed, secret)
    }
    return secret
  }

  return {
    perKey: deliveriesInFlight(deps.workerConcurrency ?? 256),
    // the claim reads each delivery with its subscription and event: one statement a claim instead of two
    claimAlso: repository.deliveryOfClaimedJob,
    async run(job, context) {
      const { accountId } = job
      // before the read: a read that began before a disable's commit may not see it (a claim's read began with it)
      const loadedAt = job.also ? job.also.since : performance.now()
      const loaded = job.also ? repository.deliveryToAttempt(job.also.value) : await load({ job, db: context.db })
      if (!loaded) return
      const { delivery, subscription, event } = loaded
      if (!subscription || !event || delivery.state !== 'pending') return
      const drop = () =>
        settle(context, async (tx) => {
          await repository.updateDelivery(tx, accountId, delivery.id, {
            state: 'dropped',
            nextAttemptAt: null,
            finishedAt: deps.clock.now(),
          })
          await completeJob(tx, job)
        }).then(() => countWebhookDelivery('dropped', accountId))
      if (subscription.status !== 'enabled') return drop()
      if (disabledSince(subscription.id, loadedAt)) return drop()
      if (disabledAt.has(subscription.id)) disabledAt.delete(subscription.id)
      const outcome = await limit(subscription.id, async () => {
        if (disabledSince(subscription.id, loadedAt)) return null
        if (delivery.attempts === 0) {
          observeWebhookLag((deps.clock.now().getTime() - event.createdAt.getTime()) / 1000)
        }
        const made = await attempt(deps, subscription.url, secretOf(subscription.secretSealed), {
          id: event.id,
          name: event.name,
          createdAt: event.createdAt,
          data: event.data,
        })
        if (made.statusCode === 410) disabledAt.set(subscription.id, 'pending')
        return made
      })
      if (outcome === null) return drop()
      if (outcome.statusCode !== null && isSuccess(outcome.statusCode)) {
        const recorded = await recordSuccess({
          db: context.db,
          attempt: {
            accountId,
            jobId: job.id,
            leaseToken: job.leaseToken,
            attemptId: randomUUID(),
            deliveryId: delivery.id,
            subscriptionId: delivery.subscriptionId,
            eventId: delivery.eventId,
            eventName: delivery.eventName,
            attempt: delivery.attempts + 1,
            attemptedAt: outcome.startedAt,
            durationMs: outcome.durationMs,
            statusCode: outcome.statusCode,
          },
        }).catch(() => null)
        if (recorded === false) throw new LeaseLostError(job)
        if (recorded) {
          countWebhookDelivery('delivered', accountId)
          return context.settled()
        }
        // the batch failed as a whole (a subscription deleted under it): this one is recorded on its own below
      }
      let recorded: { disabled: boolean; state: string }
      try {
        recorded = await context.db.transaction((tx) => recordAttempt(tx, deps.clock, job, delivery, outcome))
      } catch (error) {
        if (outcome.statusCode === 410 && disabledAt.get(subscription.id) === 'pending')
          disabledAt.delete(subscription.id)
        throw error
      }
      // the commit's time replaces a 410's pending mark in the same turn (a 410 that found the subscription disabled
      // already keeps a mark too: the stored status says the same)
      if (recorded.disabled || outcome.statusCode === 410) disabledAt.set(subscription.id, performance.now())
      context.settled()
      countWebhookDelivery(WEBHOOK_OUTCOME[recorded.state] ?? recorded.state, accountId)
    },
  }
}

/** A delivery attempt's state as the metrics' outcome. */
const WEBHOOK_OUTCOME: Record<string, string> = {
  succeeded: 'delivered',
  retrying: 'retried',
  exhausted: 'failed',
  dropped: 'dropped',
  gone: 'dropped',
}

async function settle(context: JobContext, write: (tx: Db) => Promise<void>): Promise<void> {
  await context.db.transaction(write)
  context.settled()
}

async function attempt(
  deps: WebhookWorkerDeps,
  url: string,
  secret: string,
  event: { id: string; name: string; createdAt: Date; data: Record<string, unknown> },
): Promise<AttemptOutcome> {
  const startedAt = deps.clock.now()
  const body = deliveryBody(event)
  const headers = deliveryHeaders({ secret, event, body, now: startedAt })
  const started = performance.now()
  try {
    const response = await deps.http.send(url, { method: 'POST', headers, body })
    return { startedAt, durationMs: response.durationMs, statusCode: response.status, error: null }
  } catch (error) {
    const code = error instanceof OutboundError ? error.code : 'connection_failed'
    return { startedAt, durationMs: Math.round(performance.now() - started), statusCode: null, error: code }
  }
}

/**
 * Records one attempt and its consequences in one transaction with the job's completion or rescheduling, so a
 * worker dying at any point leaves either nothing (the attempt is made again) or all of it. True when it disabled the
 * subscription.
 */
async function recordAttempt(
  tx: Db,
  clock: Clock,
  job: ClaimedJob,
  delivery: repository.DeliveryToAttempt['delivery'],
  outcome: AttemptOutcome,
): Promise<{ disabled: boolean; state: string }> {
  const { accountId, subscriptionId } = delivery
  const now = clock.now()
  const number = delivery.attempts + 1
  // Locked: attempts to one subscription finish one at a time, so the failure count and disabling are exact.
  const subscription = await repository.findSubscription(tx, accountId, subscriptionId, { lock: true })
  if (!subscription) {
    await completeJob(tx, job)
    return { disabled: false, state: 'gone' }
  }
  const succeeded = outcome.statusCode !== null && isSuccess(outcome.statusCode)

  let disabledReason: 'gone_410' | 'consecutive_failures' | null = null
  if (succeeded) {
    await repository.resetFailures(tx, accountId, subscriptionId)
  } else if (subscription.status === 'enabled') {
    const failures = await repository.countFailure(tx, accountId, subscriptionId)
    if (outcome.statusCode === 410) disabledReason = 'gone_410'
    else if (failures >= MAX_CONSECUTIVE_FAILURES) disabledReason = 'consecutive_failures'
  }
  const retryAt = succeeded || disabledReason || subscription.status !== 'enabled' ? null : nextAttemptAt(number, now)
  const state = succeeded
    ? 'succeeded'
    : retryAt
      ? 'retrying'
      : disabledReason || subscription.status !== 'enabled'
        ? 'dropped'
        : 'exhausted'

  await repository.insertAttempt(tx, {
    accountId,
    id: randomUUID(),
    subscriptionId,
    deliveryId: delivery.id,
    eventId: delivery.eventId,
    eventName: delivery.eventName,
    attempt: number,
    attemptedAt: outcome.startedAt,
    durationMs: outcome.durationMs,
    statusCode: outcome.statusCode,
    error: outcome.error,
    succeeded,
    deliveryState: state,
    nextAttemptAt: retryAt,
  })
  await repository.updateDelivery(tx, accountId, delivery.id, {
    attempts: number,
    state: state === 'retrying' ? 'pending' : state,
    nextAttemptAt: retryAt,
    finishedAt: retryAt ? null : now,
  })
  if (disabledReason) {
    await repository.updateSubscription(tx, accountId, subscriptionId, {
      status: 'disabled',
      disabledReason,
      disabledAt: now,
    })
    await repository.dropPendingDeliveries(tx, accountId, subscriptionId, now)
    await cancelQueuedJobs(tx, { accountId, queue: DELIVERY_QUEUE, concurrencyKey: subscriptionId })
  }
  if (retryAt) await retryJob(tx, clock, job, retryAt, outcome.error ?? `HTTP ${outcome.statusCode}`)
  else await completeJob(tx, job)
  return { disabled: disabledReason !== null, state }
}
