import { randomUUID } from 'node:crypto'
import { type SQL, sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { Signal, SignalListener, SignalName } from '../../platform/events/signals.ts'
import { skipQueuedSends } from '../messaging/index.ts'
import * as repo from './followups.repository.ts'
import { type SequenceRow, UUID } from './followups.repository.ts'
import { firstFutureStep, movedDue, type Scheduled, type Timing } from './followups.schedule.ts'
import type { SequenceTrigger } from './followups.tables.ts'

/**
 * Who is enrolled and when their steps are due, as other modules (signals, automations, template and contact
 * deletion) and the sequence's edits (activation, pause, a changed delay or send time) change it.
 */

/** contacts scheduled per statement when a sequence is activated (each batch its own transaction) */
export const ACTIVATION_BATCH = 2_000

/**
 * Enrolls a contact in an active sequence of its account, in the caller's transaction (signals, automation steps):
 * its first step is scheduled from now (a zero-delay step is due now and goes at once). Not enrolled when the sequence
 * is not active or has no step, or when the contact is already enrolled in it (at most once at a time).
 */
export async function enrollContact(
  tx: Db,
  clock: Clock,
  input: { accountId: string; sequenceId: string; contactId: string },
): Promise<{ enrolled: boolean; enrollment_id: string | null; reason: string | null }> {
  const sequence = await repo.findSequence(tx, input.accountId, input.sequenceId, 'share')
  if (!sequence) return { enrolled: false, enrollment_id: null, reason: 'sequence_not_found' }
  if (sequence.status !== 'active') return { enrolled: false, enrollment_id: null, reason: 'sequence_not_active' }
  if (!(await repo.contactExists(tx, input.accountId, input.contactId))) {
    return { enrolled: false, enrollment_id: null, reason: 'contact_not_found' }
  }
  const steps = await repo.stepsOf(tx, input.accountId, input.sequenceId)
  const now = clock.now()
  const first = firstFutureStep(steps, { position: 1, base: now }, await repo.timingOf(tx, input.accountId), now)
  if (!first) return { enrolled: false, enrollment_id: null, reason: 'no_steps' }
  const id = randomUUID()
  if (!(await repo.insertEnrollment(tx, { ...input, id, now }))) {
    return { enrolled: false, enrollment_id: null, reason: 'already_enrolled' }
  }
  await repo.scheduleSteps(tx, clock, [{ accountId: input.accountId, enrollmentId: id, ...first }])
  return { enrolled: true, enrollment_id: id, reason: null }
}

/** Whether an active sequence of the account exists (the automation step's check on create and update). */
export async function sequenceExists(tx: Db, accountId: string, sequenceId: string): Promise<boolean> {
  return (await repo.findSequence(tx, accountId, sequenceId)) !== undefined
}

const SIGNAL_KINDS: Partial<Record<SignalName, SequenceTrigger['type']>> = {
  'optin.confirmed': 'optin_confirmed',
  'tag.added': 'tag_added',
}

/** Stops the active enrollments `where` selects (alias `e`): their pending step jobs are removed. */
export async function stopActive(
  tx: Db,
  accountId: string,
  where: SQL,
  input: { reason: string; now: Date; finished: boolean },
) {
  await repo.dropStepJobs(tx, accountId, sql`${where} AND e.status = 'active'`)
  await repo.stopEnrollments(tx, accountId, where, input)
}

/**
 * Opt-in confirmations (chat) and added tags enroll contacts in the active sequences they trigger; a chat opt-out
 * stops the contact's enrollments.
 */
export const followupSignals: SignalListener = {
  async accepts(tx, accountId, name) {
    if (name === 'optin.opted_out') return repo.anyActiveEnrollment(tx, accountId)
    const kind = SIGNAL_KINDS[name]
    if (!kind) return false
    return repo.anyTriggered(tx, accountId, kind)
  },
  acceptsSql(accountId, name) {
    if (name === 'optin.opted_out') return repo.anyActiveEnrollmentSql(accountId)
    const kind = SIGNAL_KINDS[name]
    if (!kind) return sql`false`
    return repo.anyTriggeredSql(accountId, kind)
  },
  async handle(tx, clock, signals: Signal[]) {
    const cache = new Map<string, SequenceRow[]>()
    for (const signal of signals) {
      if (signal.name === 'optin.opted_out' && signal.contactId && signal.data.channel === 'chat') {
        // a chat opt-out stops the contact's enrollments at once
        const opted = { reason: 'contact_opted_out', now: clock.now(), finished: true }
        await stopActive(tx, signal.accountId, sql`e.contact_id = ${signal.contactId}`, opted)
        continue
      }
      const kind = SIGNAL_KINDS[signal.name]
      if (!kind || !signal.contactId) continue
      if (kind === 'optin_confirmed' && signal.data.channel !== 'chat') continue
      const group = `${signal.accountId}/${kind}`
      let sequences = cache.get(group)
      if (!sequences) {
        sequences = await repo.triggeredSequences(tx, signal.accountId, kind)
        cache.set(group, sequences)
      }
      for (const sequence of sequences) {
        const trigger = sequence.trigger
        if (trigger.type === 'tag_added' && trigger.tag !== signal.data.tag) continue
        await enrollContact(tx, clock, {
          accountId: signal.accountId,
          sequenceId: sequence.id,
          contactId: signal.contactId,
        })
      }
    }
  },
}

/** DELETE /templates/{id}: the follow-up steps that send it. */
export async function followupTemplateUses(tx: Db, accountId: string, templateId: string): Promise<string[]> {
  if (!UUID.test(templateId)) return []
  return (await repo.stepsSending(tx, accountId, templateId)).map(
    (r) => `follow-up ${r.sequence_id} (${r.name}) step ${r.position}`,
  )
}

/** DELETE /contacts/{id}: the contact's enrollments and their pending step jobs. */
export async function deleteContactEnrollments(tx: Db, accountId: string, contactId: string) {
  await repo.dropStepJobs(tx, accountId, sql`e.contact_id = ${contactId}`)
  return { followup_enrollments: await repo.deleteEnrollmentsOf(tx, accountId, contactId) }
}

/** Recomputes the time of the next step of active enrollments (after a delay or send-time change). */
export async function rescheduleNextSteps(tx: Db, clock: Clock, accountId: string, filter: SQL) {
  const now = clock.now()
  const timing = await repo.timingOf(tx, accountId)
  const changes = (await repo.nextStepsOf(tx, accountId, filter)).map((r) => {
    const step = { delayAmount: Number(r.delay_amount), delayUnit: r.delay_unit, sendTime: r.send_time }
    return { id: r.id, job_id: r.job_id, due: movedDue(step, new Date(r.base_at), timing, now) }
  })
  if (changes.length === 0) return
  await repo.moveNextSteps(tx, accountId, changes, now)
}

/** 1. of activateEnrollments: enrollments stopped by the sequence's pause go on, in batches; whether all went on. */
async function resumePaused(
  db: Db,
  clock: Clock,
  sequence: SequenceRow,
  steps: repo.StepRow[],
  timing: Timing,
): Promise<boolean> {
  const accountId = sequence.accountId
  return db.transaction(async (tx) => {
    const current = await repo.findSequence(tx, accountId, sequence.id, 'share')
    if (current?.status !== 'active') return true
    const list = await repo.pausedEnrollments(tx, accountId, sequence.id, ACTIVATION_BATCH)
    if (list.length === 0) return true
    const now = clock.now()
    const scheduled: Scheduled[] = []
    const finished: string[] = []
    for (const e of list) {
      const from = { position: Number(e.next_position), base: new Date(e.base_at) }
      const next = firstFutureStep(steps, from, timing, now)
      if (next) scheduled.push({ accountId, enrollmentId: e.id, ...next })
      else finished.push(e.id)
    }
    if (finished.length > 0) await repo.stopWithoutFutureSteps(tx, accountId, finished, now)
    await repo.scheduleSteps(tx, clock, scheduled)
    return false
  })
}

/**
 * 2. of activateEnrollments: a page of the contacts the trigger selects who are not enrolled (nor finished the
 * sequence), enrolled from when they qualified; the page's last contact, or null when none is left.
 */
async function enrollTriggered(
  db: Db,
  clock: Clock,
  sequence: SequenceRow,
  steps: repo.StepRow[],
  timing: Timing,
  cursor: string,
): Promise<string | null> {
  const accountId = sequence.accountId
  return db.transaction(async (tx) => {
    const current = await repo.findSequence(tx, accountId, sequence.id, 'share')
    if (current?.status !== 'active') return null
    const page = await repo.triggeredContacts(tx, accountId, sequence.trigger, cursor, ACTIVATION_BATCH)
    if (page.length === 0) return null
    const last = page[page.length - 1].id
    const taken = await repo.enrolledAmong(
      tx,
      accountId,
      sequence.id,
      page.map((c) => c.id),
    )
    const now = clock.now()
    const enrollments: Array<{ id: string; contact_id: string; enrolled_at: string }> = []
    const scheduled: Scheduled[] = []
    for (const c of page.filter((c) => !taken.has(c.id))) {
      const since = new Date(c.since)
      const next = firstFutureStep(steps, { position: 1, base: since }, timing, now)
      if (!next) continue
      const id = randomUUID()
      enrollments.push({ id, contact_id: c.id, enrolled_at: since.toISOString() })
      scheduled.push({ accountId, enrollmentId: id, ...next })
    }
    if (enrollments.length === 0) return last
    const kept = await repo.insertEnrollments(tx, { accountId, sequenceId: sequence.id, list: enrollments, now })
    await repo.scheduleSteps(
      tx,
      clock,
      scheduled.filter((s) => kept.has(s.enrollmentId)),
    )
    return last
  })
}

/**
 * Activation: enrollments stopped by a pause go on, and every contact the trigger selects now (confirmed chat opt-in;
 * with a tag trigger also carrying the tag) is enrolled from when it qualified. Future step times only: a step
 * whose time for that contact has passed is not sent. Batches of ACTIVATION_BATCH, each its own transaction.
 */
export async function activateEnrollments(db: Db, clock: Clock, sequence: SequenceRow) {
  const steps = await repo.stepsOf(db, sequence.accountId, sequence.id)
  const timing = await repo.timingOf(db, sequence.accountId)
  for (;;) if (await resumePaused(db, clock, sequence, steps, timing)) break
  let cursor: string | null = '00000000-0000-0000-0000-000000000000'
  while (cursor !== null) cursor = await enrollTriggered(db, clock, sequence, steps, timing, cursor)
}

/** Pause or draft: every queued step job and queued send of the sequence is removed; enrollments stop. */
export async function stopSequence(tx: Db, clock: Clock, sequence: SequenceRow, reason: string) {
  const now = clock.now()
  await stopActive(tx, sequence.accountId, sql`e.sequence_id = ${sequence.id}`, { reason, now, finished: false })
  await skipQueuedSends(tx, {
    accountId: sequence.accountId,
    origin: 'followup',
    originIds: repo.stepIdsSql(sequence.accountId, sequence.id),
    reason,
    now,
  })
}
