import { and, eq, sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { type ClaimedJob, cancelQueuedJobs, completeJob, enqueue } from '../../platform/jobs/jobs.ts'
import { assignOnInbound, handOutQueue } from './inbox.assignment.ts'
import { publishInboxChanges } from './inbox.live.ts'
import { conversations } from './inbox.tables.ts'

/**
 * Snooze: a conversation put away until a time or until the customer writes (status `snoozed`). A timed snooze comes
 * back by itself through a durable job (WAKE_QUEUE) enqueued in the snoozing transaction and due at its time; the
 * job reopens the conversation only while it is still snoozed until exactly that time, so a snooze changed, ended
 * or woken by the customer before its time is never reopened by the old job (which is also taken out of the queue
 * where the change is a person's: re-snooze, close, reopen). The customer's message wakes any snooze in the
 * statement that stores it (inbox.repository.ts). Every change tells the account's consoles in its transaction.
 */

export const WAKE_QUEUE = 'inbox.wake_snoozed'
/** the furthest a snooze may reach */
export const SNOOZE_MAX_MS = 366 * 24 * 60 * 60 * 1000

/** The wake job's key: one conversation's queued wake-ups are found (and cancelled) by it. */
const wakeKey = (conversationId: string) => `snooze:${conversationId}`

export type SnoozeChoice = { until: Date; untilReply: false } | { until: null; untilReply: true }

/** Reads the body {until} or {until_reply: true}: exactly one, a time in the future (at most a year ahead). */
export function snoozeChoice(body: { until?: string; until_reply?: boolean }, now: Date): SnoozeChoice {
  const hasUntil = body.until !== undefined
  const untilReply = body.until_reply === true
  if (hasUntil && untilReply) {
    throw badRequest('Give either until or until_reply, not both', 'snooze_choice', { field: 'until_reply' })
  }
  if (!hasUntil && !untilReply) {
    throw badRequest('until: a time in the future, or until_reply: true', 'snooze_choice', { field: 'until' })
  }
  if (untilReply) return { until: null, untilReply: true }
  const until = new Date(String(body.until))
  if (Number.isNaN(until.getTime())) throw badRequest('until must be a date-time', 'bad_request', { field: 'until' })
  if (until.getTime() <= now.getTime()) {
    throw badRequest('until must be in the future', 'snooze_time_past', { field: 'until' })
  }
  if (until.getTime() - now.getTime() > SNOOZE_MAX_MS) {
    throw badRequest('until may be at most a year ahead', 'snooze_time_far', { field: 'until' })
  }
  return { until, untilReply: false }
}

/** Takes a conversation's queued wake-ups out (its snooze was changed or ended by a person). */
export async function cancelWake(tx: Db, accountId: string, conversationId: string): Promise<void> {
  await cancelQueuedJobs(tx, { accountId, queue: WAKE_QUEUE, concurrencyKey: wakeKey(conversationId) })
}

/**
 * Snoozes a locked conversation (the caller read it FOR UPDATE in `tx`): status snoozed with its time or the reply
 * flag, the old wake-up cancelled and a new one enqueued for a time; its assignee's room goes to the queue.
 */
export async function snoozeIn(
  tx: Db,
  clock: Clock,
  input: { accountId: string; conversationId: string; choice: SnoozeChoice; assigneeId: string | null },
  actor: string | null,
) {
  const { accountId, conversationId, choice } = input
  await cancelWake(tx, accountId, conversationId)
  const [row] = await tx
    .update(conversations)
    .set({ status: 'snoozed', snoozedUntil: choice.until, snoozeUntilReply: choice.untilReply, closedAt: null })
    .where(and(eq(conversations.accountId, accountId), eq(conversations.id, conversationId)))
    .returning()
  if (choice.until) {
    await enqueue(tx, clock, {
      accountId,
      queue: WAKE_QUEUE,
      payload: { conversation_id: conversationId, until: choice.until.toISOString() },
      concurrencyKey: wakeKey(conversationId),
      runAt: choice.until,
    })
  }
  await publishInboxChanges(tx, accountId, [{ type: 'status', conversation_id: conversationId, actor_id: actor }])
  // a snoozed conversation is not among its assignee's open ones: a waiting one may take its place
  if (input.assigneeId !== null) await handOutQueue(tx, clock, accountId, actor)
  return row
}

/**
 * The wake job: reopens the conversation when it is still snoozed until the job's time, in one transaction with the
 * job's completion (a lost lease rolls both back, so it never fires twice); an unassigned one goes to automatic
 * assignment when that is on.
 */
export function wakeJob({ db, clock }: { db: Db; clock: Clock }) {
  return async (job: ClaimedJob, context: { settled(): void }) => {
    const conversationId = String(job.payload.conversation_id)
    const until = new Date(String(job.payload.until))
    await db.transaction(async (tx) => {
      const [woken] = await tx
        .update(conversations)
        .set({ status: 'open', snoozedUntil: null, snoozeUntilReply: false })
        .where(
          and(
            eq(conversations.accountId, job.accountId),
            eq(conversations.id, conversationId),
            eq(conversations.status, 'snoozed'),
            sql`${conversations.snoozedUntil} = ${until.toISOString()}::timestamptz`,
          ),
        )
        .returning({ assigneeId: conversations.assigneeId })
      if (woken) {
        await publishInboxChanges(tx, job.accountId, [{ type: 'status', conversation_id: conversationId }])
        if (woken.assigneeId === null) await assignOnInbound(tx, clock, job.accountId, conversationId)
      }
      await completeJob(tx, job)
    })
    context.settled()
  }
}
