import { randomUUID } from 'node:crypto'
import type { ClaimedJob } from '../../platform/jobs/jobs.ts'
import type { HandedSend } from '../messaging/index.ts'
import type { DelayUnit, SequenceStatus } from './followups.tables.ts'
import { dueAt } from './followups.timing.ts'

/** How often a due step that cannot go out yet (template not approved, sending not possible) looks again. */
export const WAIT_RETRY_MS = 10 * 60_000
/** A step more than this late (it waited for approval or for sending to be possible) is skipped, reason `late`. */
export const LATE_AFTER_MS = 24 * 3600_000

/** An account's follow-up timing: its own send time (or none) and its timezone. */
export interface Timing {
  sendTime: string | null
  timezone: string
}

/** What of a step decides when it is due. */
export interface StepDelay {
  position: number
  delayAmount: number
  delayUnit: DelayUnit
  sendTime: string | null
}

/** An enrollment's next step: its position, the time its delay counts from, and when it is due. */
export interface Scheduled {
  accountId: string
  enrollmentId: string
  position: number
  base: Date
  due: Date
}

/** When a step is due after `base`: its own send time, else the account's, in the account's timezone. */
export const stepDue = (step: Omit<StepDelay, 'position'>, base: Date, timing: Timing) =>
  dueAt({
    base,
    amount: step.delayAmount,
    unit: step.delayUnit,
    sendTime: step.sendTime ?? timing.sendTime,
    timezone: timing.timezone,
  })

/**
 * From a step position and the time its delay counts from, the first step whose time is now or later (future times
 * only; a time equal to now has not passed, so a zero-delay step goes at once): its position, its base and its time;
 * null when every remaining step's time has passed.
 */
export function firstFutureStep(
  steps: StepDelay[],
  from: { position: number; base: Date },
  timing: Timing,
  now: Date,
): { position: number; base: Date; due: Date } | null {
  let base = from.base
  for (const step of steps) {
    if (step.position < from.position) continue
    const due = stepDue(step, base, timing)
    if (due.getTime() >= now.getTime()) return { position: step.position, base, due }
    base = due
  }
  return null
}

/** A step's time after a delay or send-time change; a time moved into the past becomes now (sent, not skipped). */
export function movedDue(step: Omit<StepDelay, 'position'>, base: Date, timing: Timing, now: Date): Date {
  return new Date(Math.max(stepDue(step, base, timing).getTime(), now.getTime()))
}

/** The job time of a step due at `due`: a time already passed is now. */
export const runAtOf = (due: Date, now: Date) => (due.getTime() < now.getTime() ? now : due)

/** One enrollment of a batch of due steps, re-checked in one query (the runner). */
export interface StepCheck {
  id: string
  status: string
  next_position: number
  next_due_at: string | Date
  contact_id: string
  sequence_status: SequenceStatus
  contact_found: string | null
  optin_chat: string | null
  step_id: string | null
  template_id: string | null
  provider_status: string | null
  next_position_after: number | null
  next_delay_amount: number | null
  next_delay_unit: DelayUnit | null
  next_send_time: string | null
  account_timezone: string | null
  timing_send_time: string | null
  timing_timezone: string | null
}

/** An enrollment's change after its due step: stopped or completed (`finished`), or on to its next step. */
export interface EnrollmentChange {
  id: string
  status: 'active' | 'stopped' | 'completed'
  stop_reason: string | null
  finished: boolean
  next_position?: number
  base_at?: string
  next_due_at?: string
  job_id?: string
}

/** What a batch of due steps comes to (planDueSteps): every job is finished or waits. */
export interface DuePlan {
  finished: ClaimedJob[]
  waiting: Array<{ job: ClaimedJob; error: string }>
  sends: HandedSend[]
  changes: EnrollmentChange[]
  /** the next steps to schedule, each with the index of its enrollment's change */
  next: Array<Scheduled & { index: number }>
}

/**
 * Per enrollment of an account's due step jobs (by enrollment id, re-checked in `checked`): a stale job (the
 * enrollment moved on or stopped) ends; a sequence no longer active or a contact deleted, opted out or no longer
 * confirmed stops the enrollment; a step more than a day late is skipped (reason `late`); while its template is not
 * approved or sending is not possible (`blocked`) it waits; otherwise its send goes to the pipeline and the next step
 * is scheduled from the step's time.
 */
export function planDueSteps(input: {
  accountId: string
  jobOf: Map<string, ClaimedJob>
  checked: Map<string, StepCheck>
  finished: ClaimedJob[]
  blocked: string | null
  now: Date
}): DuePlan {
  const { accountId, now } = input
  const plan: DuePlan = { finished: input.finished, waiting: [], sends: [], changes: [], next: [] }
  for (const [enrollmentId, job] of input.jobOf) {
    const row = input.checked.get(enrollmentId)
    if (row?.status !== 'active' || Number(row.next_position) !== Number(job.payload.position)) {
      plan.finished.push(job)
      continue
    }
    const stop = (status: 'stopped' | 'completed', reason: string | null) => {
      plan.changes.push({ id: enrollmentId, status, stop_reason: reason, finished: true })
      plan.finished.push(job)
    }
    if (row.sequence_status !== 'active') {
      stop('stopped', row.sequence_status === 'draft' ? 'sequence_draft' : 'sequence_paused')
      continue
    }
    if (!row.contact_found) {
      stop('stopped', 'contact_deleted')
      continue
    }
    if (row.optin_chat !== 'confirmed') {
      stop('stopped', row.optin_chat === 'opted_out' ? 'contact_opted_out' : 'contact_not_optin')
      continue
    }
    if (!row.step_id) {
      stop('completed', null)
      continue
    }
    const due = new Date(row.next_due_at)
    const late = now.getTime() - due.getTime() > LATE_AFTER_MS
    const wait =
      input.blocked ?? (row.template_id && row.provider_status !== 'approved' ? 'template_not_approved' : null)
    if (!late && wait) {
      plan.waiting.push({ job, error: wait })
      continue
    }
    const skip = late ? 'late' : row.template_id ? null : 'template_missing'
    plan.sends.push({
      id: randomUUID(),
      contact_id: row.contact_id,
      template_id: row.template_id ?? row.step_id,
      status: skip ? 'skipped' : 'queued',
      reason: skip,
      origin_id: row.step_id,
    })
    if (row.next_position_after === null) {
      stop('completed', null)
      continue
    }
    plan.finished.push(job)
    const timing: Timing = {
      sendTime: row.timing_send_time ?? null,
      timezone: row.timing_timezone ?? row.account_timezone ?? 'Europe/Berlin',
    }
    const following = {
      delayAmount: Number(row.next_delay_amount),
      delayUnit: row.next_delay_unit as DelayUnit,
      sendTime: row.next_send_time,
    }
    plan.next.push({
      index: plan.changes.length,
      accountId,
      enrollmentId,
      position: Number(row.next_position_after),
      base: due,
      due: stepDue(following, due, timing),
    })
    plan.changes.push({ id: enrollmentId, status: 'active', stop_reason: null, finished: false })
  }
  return plan
}
