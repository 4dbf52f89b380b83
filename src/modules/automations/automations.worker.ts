import { type ClaimedJob, LeaseLostError } from '../../platform/jobs/jobs.ts'
import type { BatchContext, JobContext } from '../../platform/jobs/runner.ts'
import { callOut } from './automations.callout.ts'
import { calendarFeeds } from './automations.feeds.ts'
import type { AutomationsEngineDeps, Pending } from './automations.ports.ts'
import { runWalker } from './automations.walk.ts'

export {
  type AutomationsEngineDeps,
  CALENDAR_POLL_QUEUE,
  CALENDAR_START_QUEUE,
  FINAL,
  RUN_MAX_ATTEMPTS,
  RUN_QUEUE,
} from './automations.ports.ts'
export { automationSignals, finishRun, startRuns } from './automations.start.ts'

/** A batch records the calls out of its runs and walks them on this many times, then their runs go on in new jobs. */
const MAX_CALL_ROUNDS = 60
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * The automations' jobs: a run's steps one after another (walked in batches by automations.walk.ts, their calls out
 * made by automations.callout.ts), and the calendar feeds' polls and starts (automations.feeds.ts).
 */
export function automationsEngine(deps: AutomationsEngineDeps) {
  const { walkRuns } = runWalker(deps)
  const { pollCalendar, startCalendarRun, ensurePolling } = calendarFeeds(deps)

  /**
   * The jobs of one account: walked together (walkRuns); the calls out of the walk are made at once after its
   * commit, and their results recorded (and their runs walked on) in the next walk, up to MAX_CALL_ROUNDS.
   */
  async function runAccountJobs(accountId: string, jobs: ClaimedJob[], settled: (job: ClaimedJob) => void) {
    let pending: Pending[] = jobs.map((job) => ({ job, runId: String(job.payload.run_id) }))
    for (let round = 0; pending.length > 0; round++) {
      const walked = await walkRuns(accountId, pending, round < MAX_CALL_ROUNDS)
      for (const job of walked.settled) settled(job)
      // a call that throws (not an answer) concerns its own run only: the others' results are recorded all the same
      pending = await Promise.all(
        walked.calls.map(async (call): Promise<Pending> => {
          try {
            return {
              job: call.job,
              runId: call.run.id,
              result: { index: call.index, step: call.step, outcome: await callOut(deps, call) },
            }
          } catch (error) {
            return { job: call.job, runId: call.run.id, thrown: error instanceof Error ? error.message : String(error) }
          }
        }),
      )
    }
  }

  /**
   * Due run jobs, a claim at once (the batch handler of RUN_QUEUE), per account. A job whose run is missing, finished
   * or not yet due simply completes. When a batch fails as a whole (a lease lost, an error in one run's step), each
   * job goes on its own, so one run never holds back the others; the errors of those alone are retried by the runner.
   */
  async function runBatch(jobs: ClaimedJob[], context: Pick<BatchContext, 'settled'>) {
    const byAccount = new Map<string, ClaimedJob[]>()
    const seen = new Set<string>()
    for (const job of jobs) {
      const runId = String(job.payload.run_id)
      // a malformed job, or a second one of the same run (a run's jobs run one at a time), is simply completed (by
      // the runner, as the batch's unsettled jobs)
      if (!UUID.test(runId) || seen.has(`${job.accountId}/${runId}`)) continue
      seen.add(`${job.accountId}/${runId}`)
      byAccount.set(job.accountId, [...(byAccount.get(job.accountId) ?? []), job])
    }
    let failure: unknown = null
    for (const [accountId, ofAccount] of byAccount) {
      const done = new Set<ClaimedJob>()
      const settled = (job: ClaimedJob) => {
        done.add(job)
        context.settled(job)
      }
      try {
        await runAccountJobs(accountId, ofAccount, settled)
      } catch (error) {
        if (ofAccount.length === 1) {
          if (!(error instanceof LeaseLostError)) failure ??= error
          continue
        }
        for (const job of ofAccount.filter((j) => !done.has(j))) {
          try {
            await runAccountJobs(accountId, [job], settled)
          } catch (e) {
            if (!(e instanceof LeaseLostError)) failure ??= e
          }
        }
      }
    }
    if (failure) throw failure
  }

  /** One run's job (runBatch with one job). */
  async function runJob(job: ClaimedJob, context?: Pick<JobContext, 'settled'>) {
    await runBatch([job], { settled: () => context?.settled() })
  }

  return { runJob, runBatch, pollCalendar, startCalendarRun, ensurePolling }
}
