import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { type ClaimedJob, type JobRow, LeaseLostError, toClaimed } from '../../platform/jobs/jobs.ts'
import type { BatchContext, JobContext } from '../../platform/jobs/runner.ts'
import { lockDueEnrollments, UUID, writeDueSteps } from './followups.repository.ts'
import { planDueSteps, WAIT_RETRY_MS } from './followups.schedule.ts'

const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T))

export interface FollowupRunnerDeps {
  db: Db
  clock: Clock
  /** the reason nothing can go out now (account blocked or paused, no chat number), or null */
  sendingBlocked(accountId: string): Promise<string | null>
}

/** The job handler of FOLLOWUP_STEP_QUEUE: claims of due steps, re-checked and handed to the template send pipeline. */
export function followupRunner(deps: FollowupRunnerDeps) {
  const { db, clock } = deps

  /**
   * The due steps of one account's jobs, in one transaction (see runSteps); returns the jobs it settled and, when the
   * runner takes hand-offs, the send jobs it wrote already claimed by this process (they go straight into the send
   * pipeline in the slots the step jobs free; otherwise the send jobs are queued and wake the workers).
   */
  async function runStepGroup(
    accountId: string,
    jobs: ClaimedJob[],
    runner: Partial<Pick<BatchContext, 'handOff' | 'leaseMs'>>,
  ): Promise<{ settled: ClaimedJob[]; claimed: ClaimedJob[] }> {
    const handOff = runner.handOff !== undefined && runner.leaseMs !== undefined
    const jobOf = new Map<string, ClaimedJob>()
    const finished: ClaimedJob[] = []
    for (const job of jobs) {
      const enrollmentId = String(job.payload.enrollment_id)
      // a malformed job, or a second one for the same enrollment, is simply completed
      if (UUID.test(enrollmentId) && !jobOf.has(enrollmentId)) jobOf.set(enrollmentId, job)
      else finished.push(job)
    }
    // sending not possible (through the channels service): due steps wait
    const blocked = jobOf.size > 0 ? await deps.sendingBlocked(accountId) : null
    const claimed = await db.transaction(async (tx) => {
      const found = jobOf.size === 0 ? [] : await lockDueEnrollments(tx, accountId, [...jobOf.keys()])
      const now = clock.now()
      const plan = planDueSteps({
        accountId,
        jobOf,
        checked: new Map(found.map((r) => [r.id, r])),
        finished,
        blocked,
        now,
      })
      const outcome = await writeDueSteps(tx, {
        accountId,
        now,
        finished: plan.finished,
        waiting: plan.waiting,
        retryAt: new Date(now.getTime() + WAIT_RETRY_MS),
        sends: plan.sends,
        leaseUntil: handOff ? new Date(now.getTime() + (runner.leaseMs ?? 0)) : null,
        next: plan.next,
        changes: plan.changes,
      })
      const kept = new Set(json<string[]>(outcome.held))
      const lost = [...plan.finished, ...plan.waiting.map((w) => w.job)].find((j) => !kept.has(j.id))
      if (lost) throw new LeaseLostError(lost)
      return json<JobRow[]>(outcome.claimed).map(toClaimed)
    })
    // every job of the group was completed or put back to wait in that commit
    return { settled: jobs, claimed }
  }

  return {
    /**
     * Due steps, a claim of jobs at once (the batch handler of FOLLOWUP_STEP_QUEUE), per account. Whether sending is
     * possible is read once per account; then, in one transaction: the batch's sequences are share-locked (a pause
     * committing meanwhile waits, then removes what this queued), the enrollments locked, and in the same query
     * re-checked with their contact's chat opt-in, the step and its template's approval, the next step and the
     * account's timing. Per enrollment (planDueSteps): a stale job (the enrollment moved on, stopped, or a second job
     * for it) ends; a sequence no longer active or a contact deleted, opted out or no longer confirmed stops the
     * enrollment; a step more than a day late is skipped (reason `late`); while its template is not approved or
     * sending is not possible it waits and looks again; otherwise its send record goes into the template send pipeline
     * (which checks consent again right before sending, reserves the quota and paces; the unique index keeps it to one
     * per step and contact). Then one statement writes everything: the send records with their send jobs, the skips,
     * the enrollments' changes with their next step jobs, the finished and the waiting step jobs.
     */
    async runSteps(
      jobs: ClaimedJob[],
      context: Pick<BatchContext, 'settled'> & Partial<Pick<BatchContext, 'handOff' | 'leaseMs'>>,
    ) {
      const byAccount = new Map<string, ClaimedJob[]>()
      for (const job of jobs) byAccount.set(job.accountId, [...(byAccount.get(job.accountId) ?? []), job])
      const run = async (accountId: string, group: ClaimedJob[]) => {
        const { settled, claimed } = await runStepGroup(accountId, group, context)
        for (const job of settled) context.settled(job)
        if (claimed.length > 0) context.handOff?.(claimed)
      }
      for (const [accountId, ofAccount] of byAccount) {
        try {
          await run(accountId, ofAccount)
        } catch (error) {
          if (!(error instanceof LeaseLostError)) throw error
          // one lost lease must not undo the others: each on its own (a lost one stays for its new holder)
          for (const job of ofAccount) {
            try {
              await run(accountId, [job])
            } catch (e) {
              if (!(e instanceof LeaseLostError)) throw e
            }
          }
        }
      }
    },

    /** One enrollment's due step (runSteps with one job). */
    async runStep(job: ClaimedJob, context: Pick<JobContext, 'settled'>) {
      await this.runSteps([job], { settled: () => context.settled() })
    },
  }
}
