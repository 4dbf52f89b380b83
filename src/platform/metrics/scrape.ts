import { sql } from 'drizzle-orm'
import type { Clock } from '../clock.ts'
import type { Database } from '../db/client.ts'
import { rows } from '../db/rows.ts'
import { loweredPaces } from '../jobs/adaptive-pace.ts'
import { addScrapeSource, gauge, metricsPerAccount } from './metrics.ts'

/** Queue depths are counted up to this many jobs per queue and state: an index probe, never a count of a million. */
export const QUEUE_COUNT_CAP = 10_000

const queueJobs = () =>
  gauge(
    'herold_job_queue_jobs',
    `Jobs per queue and state (queued, running), counted up to herold_job_queue_count_cap (${QUEUE_COUNT_CAP}): at the cap read "at least"`,
    ['queue', 'state'],
  )
const queueCap = () =>
  gauge('herold_job_queue_count_cap', 'The cap of herold_job_queue_jobs: a count at it means at least this many', [])
const oldestDue = () =>
  gauge(
    'herold_job_queue_oldest_due_seconds',
    'How long the oldest due job of the queue has waited since it came due (0: none waiting)',
    ['queue'],
  )
const poolConnections = () =>
  gauge(
    'herold_database_pool_connections',
    'Database connections of this process by state (total, idle, max) and callers waiting for one (waiting)',
    ['state'],
  )

const pacesLowered = () =>
  gauge(
    'herold_paces_lowered',
    'Paced lanes (a chat number: lane chat) sending below their set pace, by reason (throughput_refused: the provider answered 130429)',
    ['lane', 'reason'],
  )
const paceRate = () =>
  gauge(
    'herold_pace_messages_per_second',
    'With HEROLD_METRICS_PER_ACCOUNT: the pace of each lowered lane, current and full (what it recovers to)',
    ['lane', 'account_id', 'pace'],
  )

/** How many lanes run below their pace by lane and reason; per account (at most 100 lanes) when asked for. */
async function watchPaces(database: Database): Promise<void> {
  const counted = rows<{ lane: string; reason: string | null; n: number }>(
    await database.orm.execute(sql`SELECT lane, reduced_reason AS reason, count(*)::int AS n FROM job_paces
      WHERE full_per_second IS NOT NULL GROUP BY 1, 2`),
  )
  const lowered = pacesLowered()
  lowered.reset()
  lowered.set({ lane: 'chat', reason: 'throughput_refused' }, 0)
  for (const c of counted) lowered.set({ lane: c.lane, reason: c.reason ?? 'unknown' }, Number(c.n))
  const rate = paceRate()
  rate.reset()
  if (!metricsPerAccount()) return
  for (const p of await loweredPaces(database.orm, 100)) {
    rate.set({ lane: p.lane, account_id: p.accountId, pace: 'current' }, p.perSecond)
    rate.set({ lane: p.lane, account_id: p.accountId, pace: 'full' }, p.fullPerSecond)
  }
}

/**
 * Queues with queued or running jobs, read by a skip scan over the claim's indexes (one probe per queue), plus the
 * queues this process runs.
 */
const QUEUES_SQL = `
  WITH RECURSIVE queued AS (
    SELECT min(queue) AS queue FROM jobs WHERE state = 'queued'
    UNION ALL
    SELECT (SELECT min(queue) FROM jobs WHERE state = 'queued' AND queue > queued.queue) FROM queued
    WHERE queued.queue IS NOT NULL
  ), running AS (
    SELECT min(queue) AS queue FROM jobs WHERE state = 'running'
    UNION ALL
    SELECT (SELECT min(queue) FROM jobs WHERE state = 'running' AND queue > running.queue) FROM running
    WHERE running.queue IS NOT NULL
  )
  SELECT queue FROM queued WHERE queue IS NOT NULL UNION SELECT queue FROM running WHERE queue IS NOT NULL`

const DEPTH_SQL = `
  SELECT q.queue,
    (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE state = 'queued' AND queue = q.queue LIMIT ${QUEUE_COUNT_CAP}) x)::int
      AS queued,
    (SELECT count(*) FROM (SELECT 1 FROM jobs WHERE state = 'running' AND queue = q.queue LIMIT ${QUEUE_COUNT_CAP}) x)::int
      AS running,
    (SELECT run_at FROM jobs WHERE state = 'queued' AND queue = q.queue ORDER BY run_at LIMIT 1) AS oldest
  FROM jsonb_array_elements_text($1::jsonb) AS q(queue)`

export interface QueueDepth {
  queue: string
  queued: number
  running: number
  /** seconds the oldest due job has waited; 0 when none is due */
  oldestDueSeconds: number
}

/** Depth and lag of every queue with jobs (and of `known`), by index probes: the gauges' and `herold status`'s read. */
export async function readQueueDepths(database: Database, clock: Clock, known: string[] = []): Promise<QueueDepth[]> {
  const found = await database.query<{ queue: string }>(QUEUES_SQL)
  const queues = [...new Set([...known, ...found.map((r) => r.queue)])].sort()
  if (queues.length === 0) return []
  const rows = await database.query<{ queue: string; queued: number; running: number; oldest: Date | string | null }>(
    DEPTH_SQL,
    [JSON.stringify(queues)],
  )
  const now = clock.now().getTime()
  return rows.map((r) => ({
    queue: r.queue,
    queued: Number(r.queued),
    running: Number(r.running),
    oldestDueSeconds: r.oldest ? Math.max(0, (now - new Date(r.oldest).getTime()) / 1000) : 0,
  }))
}

/** the queues the job runners of this process run (shown at 0 when empty) */
const runQueues = new Set<string>()
export function noteRunQueues(queues: string[]): void {
  for (const queue of queues) runQueues.add(queue)
}

/** The scrape's gauges of one database: its queues (with the queues this process runs) and its pool. */
export function watchDatabase(database: Database, clock: Clock, knownQueues = () => [...runQueues]): () => void {
  return addScrapeSource(async () => {
    const pool = database.poolUse()
    const connections = poolConnections()
    connections.set({ state: 'total' }, pool.total)
    connections.set({ state: 'idle' }, pool.idle)
    connections.set({ state: 'max' }, pool.max)
    connections.set({ state: 'waiting' }, pool.waiting)
    await watchPaces(database)
    const depths = await readQueueDepths(database, clock, knownQueues())
    const jobs = queueJobs()
    const due = oldestDue()
    jobs.reset()
    due.reset()
    queueCap().set(QUEUE_COUNT_CAP)
    for (const d of depths) {
      jobs.set({ queue: d.queue, state: 'queued' }, d.queued)
      jobs.set({ queue: d.queue, state: 'running' }, d.running)
      due.set({ queue: d.queue }, d.oldestDueSeconds)
    }
  })
}
