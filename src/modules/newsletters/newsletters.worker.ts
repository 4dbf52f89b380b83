import { sql } from 'drizzle-orm'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError } from '../../platform/http/errors.ts'
import { type ClaimedJob, completeJob, countQueuedJobs, enqueue } from '../../platform/jobs/jobs.ts'
import type { JobContext } from '../../platform/jobs/runner.ts'
import { SEND_WAIT_RETRY_MS, TEMPLATE_SEND_QUEUE } from '../messaging/index.ts'
import * as repo from './newsletters.repository.ts'
import type { NewsletterPhase, NewsletterStatus } from './newsletters.tables.ts'

export const NEWSLETTER_START_QUEUE = 'newsletters.start'
export const NEWSLETTER_PROGRESS_QUEUE = 'newsletters.progress'
/** how often a waiting newsletter looks again (template approval, sending possible again) */
export const RETRY_WAIT_MS = 60_000
/** how often a sending newsletter checks whether every send reached a final state */
export const PROGRESS_EVERY_MS = 5_000
/** contacts written per fan-out statement (each its own transaction; the cursor survives a crash) */
export const FANOUT_BATCH = 10_000
/**
 * Send jobs of the account kept queued ahead of the sender while a newsletter sends: its send records get their jobs
 * as the queue drains below this (at the fan-out and at every progress check), 20 s of work at 1,000 sends/s.
 */
export const FEED_AHEAD = 20_000
/**
 * Rows per bulk statement (a fan-out batch, a slice of the feed) on the embedded database. Its one connection runs one
 * statement at a time, so a request waits for the bulk statement that holds it (PriorityGate): a feed of 20,000 jobs
 * in one statement held it for about half a second, a slice of 1,000 for a few tens of milliseconds. On PostgreSQL a
 * bulk statement holds one connection of a pool, and the batches stay whole.
 */
export const EMBEDDED_BULK_SLICE = 1_000

/** What the delivery needs: the template's approval, whether sending is possible, the daily limit. */
export interface NewsletterDeliveryDeps {
  db: Db
  clock: Clock
  templates: {
    get(
      tenant: { accountId: string; account: { language: string } },
      id: string,
    ): Promise<{ provider_status: string | null }>
  }
  /** throws an AppError (chat_not_connected, subscription_locked) when nothing can go out now */
  requireSendingPossible(accountId: string): Promise<void>
  /** the chat number's daily limit of new conversations as it stands (channels) */
  dailyWindow(accountId: string): Promise<{ limit: number | null; used: number; resumesAt: Date | null }>
  /** send jobs kept queued ahead of the sender (default FEED_AHEAD; tests feed a few at a time) */
  feedAhead?: number
  /** rows per bulk statement, each its own transaction (EMBEDDED_BULK_SLICE on the embedded database); default whole */
  bulkSlice?: number
}

/** The newsletter's jobs: the start at its time (waiting, then the fan-out) and the progress checks that feed it. */
export function newsletterDelivery(deps: NewsletterDeliveryDeps) {
  const { db, clock } = deps
  const feedAhead = deps.feedAhead ?? FEED_AHEAD
  const fanoutBatch = Math.min(FANOUT_BATCH, deps.bulkSlice ?? FANOUT_BATCH)
  const feedSlice = deps.bulkSlice ?? feedAhead
  const save = (tx: Db, row: repo.NewsletterRow, change: Partial<repo.NewsletterRow>) =>
    repo.updateNewsletter(tx, row, change, clock.now())

  /**
   * Gives the newsletter's next send records their send jobs (and a tracked CTA's short links), in contact order
   * after feed_cursor and up to `upTo` (the fan-out's cursor while it runs), so that about FEED_AHEAD send jobs of
   * the account wait ahead of the sender: a million recipients are a million send records at once but never a
   * million queued jobs. Runs under the newsletter's row lock, in the transaction that saves the cursor it answers;
   * writes at most one slice (`feedSlice` jobs) and answers the room left after it for the next slice's transaction.
   */
  async function feed(
    tx: Db,
    row: repo.NewsletterRow,
    upTo: string | null,
    known?: number,
  ): Promise<{ cursor: string | null; room: number }> {
    const room =
      known ??
      feedAhead - (await countQueuedJobs(tx, { accountId: row.accountId, queue: TEMPLATE_SEND_QUEUE, upTo: feedAhead }))
    if (room <= 0) return { cursor: row.feedCursor, room: 0 }
    const slice = Math.min(room, feedSlice)
    const out = await repo.feedSends(tx, row, { upTo, room: slice, now: clock.now() })
    // a short slice means nothing more is there to feed now
    return { cursor: out.last ?? row.feedCursor, room: out.queued < slice ? 0 : room - slice }
  }

  /** The rest of the feed's room, a slice a transaction (the embedded database's requests go between them). */
  async function feedRest(accountId: string, id: string, room: number) {
    while (room > 0) {
      room = await db.transaction(async (tx) => {
        const fresh = await repo.requireNewsletter(tx, accountId, id, true)
        if (fresh.status !== 'sending' || fresh.phase !== 'sending') return 0
        const out = await feed(tx, fresh, null, room)
        if (out.cursor !== fresh.feedCursor) await save(tx, fresh, { feedCursor: out.cursor })
        return out.room
      })
    }
  }

  function enqueueProgress(tx: Db, accountId: string, id: string) {
    return enqueue(tx, clock, {
      accountId,
      queue: NEWSLETTER_PROGRESS_QUEUE,
      payload: { newsletter_id: id },
      runAt: new Date(clock.now().getTime() + PROGRESS_EVERY_MS),
    })
  }

  /** The fan-out, batch by batch; a crash continues after the saved cursor (and the unique index skips repeats). */
  async function fanout(row: repo.NewsletterRow) {
    const { accountId, id } = row
    const templateId = row.templateId as string
    // one "today" and one set of field definitions for the whole snapshot (a fan-out may run past midnight)
    const fields = await repo.segmentFieldContext(db, accountId, row.segment ?? null, clock.now())
    // the first send jobs go with each batch, so sending starts while the rest of the snapshot is written
    while (row.phase === 'fanout') {
      row = await db.transaction(async (tx) => {
        const fresh = await repo.requireNewsletter(tx, accountId, id, true)
        const batch = await repo.fanoutBatch(tx, fresh, { templateId, batch: fanoutBatch, now: clock.now(), fields })
        const fanoutCursor = batch.last ?? fresh.fanoutCursor
        const feedCursor = fanoutCursor ? (await feed(tx, fresh, fanoutCursor)).cursor : fresh.feedCursor
        if (batch.picked < fanoutBatch) {
          await enqueueProgress(tx, accountId, id)
          return save(tx, fresh, { phase: 'sending', fanoutCursor, feedCursor })
        }
        return save(tx, fresh, { fanoutCursor, feedCursor })
      })
    }
    // one table a statement: on the embedded database each holds its one connection for its whole run
    await db.execute(sql`ANALYZE template_sends`)
    await db.execute(sql`ANALYZE jobs`)
  }

  return {
    /**
     * The start at the scheduled time: nothing goes out until the template is approved and sending is possible
     * (it waits and looks again); then the recipients are written as a snapshot in batches (confirmed chat opt-in,
     * the segment), each send going through the template send pipeline.
     */
    async start(job: ClaimedJob, context: Pick<JobContext, 'settled'>) {
      const accountId = job.accountId
      const id = String(job.payload.newsletter_id)
      let row = await repo.findNewsletter(db, accountId, id)
      if (!row || (row.status !== 'scheduled' && row.status !== 'sending')) return
      if (row.status === 'scheduled' && (!row.scheduledAt || row.scheduledAt.getTime() > clock.now().getTime())) return
      const account = await getAccount(db, accountId)
      const tenant = { accountId, account: { language: account.language } }
      const wait = async (phase: NewsletterPhase, reason: string) => {
        const resumesAt = new Date(clock.now().getTime() + RETRY_WAIT_MS)
        await db.transaction(async (tx) => {
          const fresh = await repo.requireNewsletter(tx, accountId, id, true)
          await save(tx, fresh, { phase, stopReason: reason, resumesAt })
          await completeJob(tx, job)
          await enqueue(tx, clock, {
            accountId,
            queue: NEWSLETTER_START_QUEUE,
            payload: { newsletter_id: id },
            concurrencyKey: id,
            runAt: resumesAt,
          })
        })
        context.settled()
      }
      if (row.status === 'scheduled') {
        const template = row.templateId ? await deps.templates.get(tenant, row.templateId).catch(() => null) : null
        if (!template || template.provider_status === 'rejected') {
          await db.transaction(async (tx) => {
            const fresh = await repo.requireNewsletter(tx, accountId, id, true)
            await save(tx, fresh, { phase: 'stopped', stopReason: template ? 'template_rejected' : 'template_missing' })
            await completeJob(tx, job)
          })
          context.settled()
          return
        }
        if (template.provider_status !== 'approved') return wait('waiting_for_approval', 'template_not_approved')
        if (account.status === 'blocked') return wait('waiting_for_sending', 'account_blocked')
        try {
          await deps.requireSendingPossible(accountId)
        } catch (error) {
          if (error instanceof AppError) return wait('waiting_for_sending', error.code)
          throw error
        }
        row = await db.transaction(async (tx) => {
          const fresh = await repo.requireNewsletter(tx, accountId, id, true)
          if (fresh.status !== 'scheduled') return fresh
          return save(tx, fresh, {
            status: 'sending',
            phase: 'fanout',
            stopReason: null,
            resumesAt: null,
            startedAt: clock.now(),
          })
        })
        if (row.status !== 'sending') return
      }
      await fanout(row)
    },

    /** While sending: when every send record reached a final state the newsletter is sent; else look again later. */
    async progress(job: ClaimedJob, context: Pick<JobContext, 'settled'>) {
      const accountId = job.accountId
      const id = String(job.payload.newsletter_id)
      const row = await repo.findNewsletter(db, accountId, id)
      if (row?.status !== 'sending' || (row.phase !== 'sending' && row.phase !== 'waiting_for_sending')) return
      const { open, waiting, reason, quietUntil } = await repo.openAndWaiting(db, accountId, id)
      // at the daily limit it resumes by itself when the oldest conversation leaves the 24-hour window
      const daily = waiting > 0 && reason === 'daily_limit_reached' ? await deps.dailyWindow(accountId) : null
      const room = await db.transaction(async (tx) => {
        const fresh = await repo.requireNewsletter(tx, accountId, id, true)
        if (!open) {
          await save(tx, fresh, {
            status: 'sent' as NewsletterStatus,
            phase: 'done',
            stopReason: null,
            resumesAt: null,
            finishedAt: clock.now(),
          })
        } else {
          // the next send jobs, as the sender consumed the ones written ahead
          const { cursor: feedCursor, room } = await feed(tx, fresh, null)
          const fed = feedCursor !== fresh.feedCursor ? { feedCursor } : {}
          if (waiting > 0) {
            const resumesAt =
              daily?.resumesAt ??
              (reason === 'quiet_hours' ? quietUntil : null) ??
              new Date(clock.now().getTime() + SEND_WAIT_RETRY_MS)
            await save(tx, fresh, { phase: 'waiting_for_sending', stopReason: reason, resumesAt, ...fed })
          } else if (fresh.phase !== 'sending') {
            await save(tx, fresh, { phase: 'sending', stopReason: null, resumesAt: null, ...fed })
          } else if (feedCursor !== fresh.feedCursor) {
            await save(tx, fresh, fed)
          }
          await enqueueProgress(tx, accountId, id)
          await completeJob(tx, job)
          // quiet hours hold each contact's sends, not the newsletter: the others (other time zones) still go
          return waiting > 0 && reason !== 'quiet_hours' ? 0 : room
        }
        await completeJob(tx, job)
        return 0
      })
      context.settled()
      await feedRest(accountId, id, room)
    },
  }
}
