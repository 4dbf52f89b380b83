import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { Signal, SignalListener, SignalName } from '../../platform/events/signals.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import { rangeStart, type StatisticsRange, sendFunnel } from '../../platform/http/statistics.ts'
import {
  type ClaimedJob,
  enqueue,
  enqueueSql,
  JOBS_CHANNEL,
  type JobRow,
  LeaseLostError,
  toClaimed,
} from '../../platform/jobs/jobs.ts'
import type { BatchContext, JobContext } from '../../platform/jobs/runner.ts'
import { TEMPLATE_SEND_QUEUE } from '../messaging/index.ts'
import type { DelayUnit, EnrollmentStatus, SequenceStatus, SequenceTrigger } from './followups.tables.ts'
import { dueAt, isTimezone, SEND_TIME } from './followups.timing.ts'

/** The durable job of one enrollment's next step, payload { enrollment_id, position }, due at the step's time. */
export const FOLLOWUP_STEP_QUEUE = 'followups.step'
/** How often a due step that cannot go out yet (template not approved, sending not possible) looks again. */
export const WAIT_RETRY_MS = 10 * 60_000
/** A step more than this late (it waited for approval or for sending to be possible) is skipped, reason `late`. */
export const LATE_AFTER_MS = 24 * 3600_000
/** contacts scheduled per statement when a sequence is activated (each batch its own transaction) */
export const ACTIVATION_BATCH = 2_000

export const LIMITS = { name: 200, text: 1024, steps: 20, hours: 8760, days: 365, tag: 40 }

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const SENT = ['sent', 'delivered', 'read']

function rows<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows
}
const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T))
const uuidList = (ids: string[]) => `{${ids.join(',')}}`

export interface FollowupsTenant {
  accountId: string
  account: { language: string }
}

/** What follow-ups need of the templates module (its exported service). */
export interface FollowupTemplates {
  create(
    tenant: FollowupsTenant,
    input: { name: string; content: string; channel: 'chat'; purpose: 'marketing'; language: string },
  ): Promise<{ id: string }>
  submit(tenant: FollowupsTenant, id: string): Promise<unknown>
  get(tenant: FollowupsTenant, id: string): Promise<{ provider_status: string | null; state: string }>
  update(tenant: FollowupsTenant, id: string, input: { content: string }): Promise<unknown>
  delete(tenant: FollowupsTenant, id: string): Promise<unknown>
}

export interface FollowupsDeps {
  db: Db
  clock: Clock
  templates: FollowupTemplates
  /** the reason nothing can go out now (account blocked or paused, no chat number), or null */
  sendingBlocked(accountId: string): Promise<string | null>
}

export interface StepInput {
  text: string
  delay: { amount: number; unit: DelayUnit }
  send_time?: string | null
}

export interface SequenceInput {
  name: string
  trigger?: SequenceTrigger
  steps: StepInput[]
}

interface SequenceRow {
  accountId: string
  id: string
  name: string
  status: SequenceStatus
  trigger: SequenceTrigger
  createdAt: Date
  updatedAt: Date
}

interface StepRow {
  id: string
  sequenceId: string
  position: number
  text: string
  delayAmount: number
  delayUnit: DelayUnit
  sendTime: string | null
  templateId: string | null
}

/** One enrollment of a batch of due steps, re-checked in one query (runSteps). */
interface StepCheck {
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

interface Timing {
  sendTime: string | null
  timezone: string
}

function sequenceFrom(raw: Record<string, unknown>): SequenceRow {
  return {
    accountId: String(raw.account_id),
    id: String(raw.id),
    name: String(raw.name),
    status: raw.status as SequenceStatus,
    trigger: json<SequenceTrigger>(raw.trigger),
    createdAt: new Date(raw.created_at as string),
    updatedAt: new Date(raw.updated_at as string),
  }
}

function stepFrom(raw: Record<string, unknown>): StepRow {
  return {
    id: String(raw.id),
    sequenceId: String(raw.sequence_id),
    position: Number(raw.position),
    text: String(raw.text),
    delayAmount: Number(raw.delay_amount),
    delayUnit: raw.delay_unit as DelayUnit,
    sendTime: (raw.send_time as string | null) ?? null,
    templateId: (raw.template_id as string | null) ?? null,
  }
}

async function findSequence(tx: Db, accountId: string, id: string, lock: '' | 'update' | 'share' = '') {
  if (!UUID.test(id)) return undefined
  const suffix = lock === 'update' ? sql`FOR UPDATE` : lock === 'share' ? sql`FOR SHARE` : sql``
  const result = await tx.execute(
    sql`SELECT * FROM followup_sequences WHERE account_id = ${accountId} AND id = ${id} ${suffix}`,
  )
  const [raw] = rows<Record<string, unknown>>(result)
  return raw ? sequenceFrom(raw) : undefined
}

async function stepsOf(tx: Db, accountId: string, sequenceId: string): Promise<StepRow[]> {
  const result = await tx.execute(sql`SELECT * FROM followup_steps
    WHERE account_id = ${accountId} AND sequence_id = ${sequenceId} ORDER BY position`)
  return rows<Record<string, unknown>>(result).map(stepFrom)
}

/** The account's follow-up timing: its own send time and timezone, the account's timezone by default. */
async function timingOf(tx: Db, accountId: string): Promise<Timing> {
  const result = await tx.execute(sql`SELECT a.timezone AS account_timezone, s.send_time, s.timezone
    FROM accounts a LEFT JOIN followup_settings s ON s.account_id = a.id WHERE a.id = ${accountId}`)
  const [raw] = rows<{ account_timezone: string; send_time: string | null; timezone: string | null }>(result)
  return { sendTime: raw?.send_time ?? null, timezone: raw?.timezone ?? raw?.account_timezone ?? 'Europe/Berlin' }
}

const stepDue = (step: StepRow, base: Date, timing: Timing) =>
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
  steps: StepRow[],
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

interface Scheduled {
  accountId: string
  enrollmentId: string
  position: number
  base: Date
  due: Date
}

/** Enqueues each enrollment's next step job at its time and records position, base, time and job on the enrollment. */
async function scheduleSteps(tx: Db, clock: Clock, list: Scheduled[]): Promise<void> {
  if (list.length === 0) return
  const now = clock.now()
  const ids = await enqueue(
    tx,
    clock,
    list.map((s) => ({
      accountId: s.accountId,
      queue: FOLLOWUP_STEP_QUEUE,
      payload: { enrollment_id: s.enrollmentId, position: s.position },
      runAt: s.due.getTime() < now.getTime() ? now : s.due,
    })),
  )
  const changes = JSON.stringify(
    list.map((s, i) => ({
      account_id: s.accountId,
      id: s.enrollmentId,
      next_position: s.position,
      base_at: s.base.toISOString(),
      next_due_at: s.due.toISOString(),
      job_id: ids[i],
    })),
  )
  await tx.execute(sql`UPDATE followup_enrollments e SET status = 'active', stop_reason = NULL,
      next_position = c.next_position, base_at = c.base_at, next_due_at = c.next_due_at, job_id = c.job_id,
      finished_at = NULL, updated_at = ${now.toISOString()}::timestamptz
    FROM jsonb_to_recordset(${changes}::jsonb)
      AS c(account_id uuid, id uuid, next_position int, base_at timestamptz, next_due_at timestamptz, job_id uuid)
    WHERE e.account_id = c.account_id AND e.id = c.id`)
}

/** Removes the queued step jobs of the given enrollments (a running one finds its enrollment changed). */
async function dropStepJobs(tx: Db, accountId: string, where: ReturnType<typeof sql>): Promise<void> {
  await tx.execute(sql`DELETE FROM jobs j USING followup_enrollments e
    WHERE e.account_id = ${accountId} AND ${where} AND e.job_id IS NOT NULL
      AND j.account_id = e.account_id AND j.id = e.job_id AND j.state = 'queued'`)
}

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
  const sequence = await findSequence(tx, input.accountId, input.sequenceId, 'share')
  if (!sequence) return { enrolled: false, enrollment_id: null, reason: 'sequence_not_found' }
  if (sequence.status !== 'active') return { enrolled: false, enrollment_id: null, reason: 'sequence_not_active' }
  const contact = await tx.execute(
    sql`SELECT 1 FROM contacts WHERE account_id = ${input.accountId} AND id = ${input.contactId}`,
  )
  if (rows(contact).length === 0) return { enrolled: false, enrollment_id: null, reason: 'contact_not_found' }
  const steps = await stepsOf(tx, input.accountId, input.sequenceId)
  const now = clock.now()
  const first = firstFutureStep(steps, { position: 1, base: now }, await timingOf(tx, input.accountId), now)
  if (!first) return { enrolled: false, enrollment_id: null, reason: 'no_steps' }
  const id = randomUUID()
  const inserted = await tx.execute(sql`INSERT INTO followup_enrollments
      (account_id, id, sequence_id, contact_id, status, enrolled_at, updated_at)
    VALUES (${input.accountId}, ${id}, ${input.sequenceId}, ${input.contactId}, 'active', ${now.toISOString()}::timestamptz,
      ${now.toISOString()}::timestamptz)
    ON CONFLICT (account_id, sequence_id, contact_id) WHERE status = 'active' DO NOTHING
    RETURNING id`)
  if (rows(inserted).length === 0) return { enrolled: false, enrollment_id: null, reason: 'already_enrolled' }
  await scheduleSteps(tx, clock, [{ accountId: input.accountId, enrollmentId: id, ...first }])
  return { enrolled: true, enrollment_id: id, reason: null }
}

/** Whether an active sequence of the account exists (the automation step's check on create and update). */
export async function sequenceExists(tx: Db, accountId: string, sequenceId: string): Promise<boolean> {
  return (await findSequence(tx, accountId, sequenceId)) !== undefined
}

const SIGNAL_KINDS: Partial<Record<SignalName, SequenceTrigger['type']>> = {
  'optin.confirmed': 'optin_confirmed',
  'tag.added': 'tag_added',
}

/** A chat opt-out stops the contact's enrollments at once: their pending step jobs are removed. */
async function stopContactEnrollments(tx: Db, clock: Clock, accountId: string, contactId: string, reason: string) {
  const now = clock.now().toISOString()
  await dropStepJobs(tx, accountId, sql`e.contact_id = ${contactId} AND e.status = 'active'`)
  await tx.execute(sql`UPDATE followup_enrollments SET status = 'stopped', stop_reason = ${reason}, job_id = NULL,
      finished_at = ${now}::timestamptz, updated_at = ${now}::timestamptz
    WHERE account_id = ${accountId} AND contact_id = ${contactId} AND status = 'active'`)
}

/**
 * Opt-in confirmations (chat) and added tags enroll contacts in the active sequences they trigger; a chat opt-out
 * stops the contact's enrollments.
 */
export const followupSignals: SignalListener = {
  async accepts(tx, accountId, name) {
    if (name === 'optin.opted_out') {
      const result = await tx.execute(sql`SELECT 1 FROM followup_enrollments
        WHERE account_id = ${accountId} AND status = 'active' LIMIT 1`)
      return rows(result).length > 0
    }
    const kind = SIGNAL_KINDS[name]
    if (!kind) return false
    const result = await tx.execute(sql`SELECT 1 FROM followup_sequences
      WHERE account_id = ${accountId} AND trigger_kind = ${kind} AND status = 'active' LIMIT 1`)
    return rows(result).length > 0
  },
  acceptsSql(accountId, name) {
    if (name === 'optin.opted_out') {
      return sql`EXISTS (SELECT 1 FROM followup_enrollments WHERE account_id = ${accountId}::uuid AND status = 'active')`
    }
    const kind = SIGNAL_KINDS[name]
    if (!kind) return sql`false`
    return sql`EXISTS (SELECT 1 FROM followup_sequences
      WHERE account_id = ${accountId}::uuid AND trigger_kind = ${kind} AND status = 'active')`
  },
  async handle(tx, clock, signals: Signal[]) {
    const cache = new Map<string, SequenceRow[]>()
    for (const signal of signals) {
      if (signal.name === 'optin.opted_out' && signal.contactId && signal.data.channel === 'chat') {
        await stopContactEnrollments(tx, clock, signal.accountId, signal.contactId, 'contact_opted_out')
        continue
      }
      const kind = SIGNAL_KINDS[signal.name]
      if (!kind || !signal.contactId) continue
      if (kind === 'optin_confirmed' && signal.data.channel !== 'chat') continue
      const group = `${signal.accountId}/${kind}`
      let sequences = cache.get(group)
      if (!sequences) {
        const result = await tx.execute(sql`SELECT * FROM followup_sequences
          WHERE account_id = ${signal.accountId} AND trigger_kind = ${kind} AND status = 'active' ORDER BY id`)
        sequences = rows<Record<string, unknown>>(result).map(sequenceFrom)
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
  const result = await tx.execute(sql`SELECT s.sequence_id, s.position, q.name FROM followup_steps s
    JOIN followup_sequences q ON q.account_id = s.account_id AND q.id = s.sequence_id
    WHERE s.account_id = ${accountId} AND s.template_id = ${templateId}`)
  return rows<{ sequence_id: string; position: number; name: string }>(result).map(
    (r) => `follow-up ${r.sequence_id} (${r.name}) step ${r.position}`,
  )
}

/** DELETE /contacts/{id}: the contact's enrollments and their pending step jobs. */
export async function deleteContactEnrollments(tx: Db, accountId: string, contactId: string) {
  await dropStepJobs(tx, accountId, sql`e.contact_id = ${contactId}`)
  const result = await tx.execute(sql`DELETE FROM followup_enrollments
    WHERE account_id = ${accountId} AND contact_id = ${contactId} RETURNING id`)
  return { followup_enrollments: rows(result).length }
}

function checkSendTime(value: string | null | undefined, field: string) {
  if (value === undefined || value === null) return
  if (!SEND_TIME.test(value)) throw badRequest(`${field} must be HH:MM (00:00 to 23:59) or null`)
}

function checkSteps(steps: StepInput[]) {
  if (steps.length === 0) throw badRequest('A sequence needs at least one step')
  if (steps.length > LIMITS.steps) throw badRequest(`A sequence has at most ${LIMITS.steps} steps`)
  for (const [i, step] of steps.entries()) checkStep(step, `steps[${i}]`)
}

/** A step's own rules (text length, delay within its unit's limit, send time), as create and addStep check them. */
export function checkStep(step: Partial<StepInput>, field: string) {
  if (step.text !== undefined && (step.text.trim() === '' || step.text.length > LIMITS.text)) {
    throw badRequest(`${field}.text must hold 1 to ${LIMITS.text} characters`)
  }
  if (step.delay !== undefined) {
    const { amount, unit } = step.delay
    const max = unit === 'days' ? LIMITS.days : LIMITS.hours
    if (!Number.isInteger(amount) || amount < 0 || amount > max || (unit !== 'days' && unit !== 'hours')) {
      throw badRequest(`${field}.delay must be {amount: 0 to ${max}, unit: hours or days}`)
    }
  }
  checkSendTime(step.send_time, `${field}.send_time`)
}

/** An enrollment as the API shows it. */
function enrollmentView(r: Record<string, unknown>) {
  const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string))
  return {
    id: String(r.id),
    contact_id: String(r.contact_id),
    status: r.status as EnrollmentStatus,
    stop_reason: (r.stop_reason as string | null) ?? null,
    next_position: r.status === 'active' && r.next_position !== null ? Number(r.next_position) : null,
    next_due_at: r.status === 'active' ? date(r.next_due_at) : null,
    enrolled_at: date(r.enrolled_at) as Date,
    finished_at: date(r.finished_at),
  }
}

export function followupsService(deps: FollowupsDeps) {
  const { db, clock } = deps

  const activeRefusal = (what: string) =>
    new AppError(409, 'followup_active', `Pause the sequence before ${what}`, { key: 'followup_active' })

  /** Gives the steps positions 1..n in the given order (through negative positions: the unique index holds). */
  async function renumber(tx: Db, accountId: string, sequenceId: string, order: string[]) {
    const now = clock.now().toISOString()
    await tx.execute(sql`UPDATE followup_steps SET position = -position
      WHERE account_id = ${accountId} AND sequence_id = ${sequenceId}`)
    const list = JSON.stringify(order.map((stepId, i) => ({ id: stepId, position: i + 1 })))
    await tx.execute(sql`UPDATE followup_steps s SET position = c.position, updated_at = ${now}::timestamptz
      FROM jsonb_to_recordset(${list}::jsonb) AS c(id uuid, position int)
      WHERE s.account_id = ${accountId} AND s.sequence_id = ${sequenceId} AND s.id = c.id`)
  }

  async function enrollmentRow(accountId: string, sequenceId: string, enrollmentId: string) {
    const result = await db.execute(sql`SELECT id, contact_id, status, stop_reason, next_position, next_due_at,
        enrolled_at, finished_at FROM followup_enrollments
      WHERE account_id = ${accountId} AND sequence_id = ${sequenceId} AND id = ${enrollmentId}`)
    const [row] = rows<Record<string, unknown>>(result)
    if (!row) throw notFound('enrollment')
    return row
  }

  async function require(tx: Db, accountId: string, id: string, lock: '' | 'update' = '') {
    const row = await findSequence(tx, accountId, id, lock)
    if (!row) throw notFound('follow-up sequence')
    return row
  }

  async function enrollmentCounts(accountId: string, ids: string[]) {
    const counts = new Map<string, Record<EnrollmentStatus, number>>()
    for (const id of ids) counts.set(id, { active: 0, completed: 0, stopped: 0 })
    if (ids.length === 0) return counts
    const result = await db.execute(sql`SELECT sequence_id, status, count(*)::int AS n FROM followup_enrollments
      WHERE account_id = ${accountId} AND sequence_id = ANY(${uuidList(ids)}::uuid[]) GROUP BY sequence_id, status`)
    for (const r of rows<{ sequence_id: string; status: EnrollmentStatus; n: number }>(result)) {
      const entry = counts.get(r.sequence_id)
      if (entry) entry[r.status] = Number(r.n)
    }
    return counts
  }

  async function stepsView(tenant: FollowupsTenant, sequence: SequenceRow, timing: Timing) {
    const steps = await stepsOf(db, sequence.accountId, sequence.id)
    const scheduled = new Map<number, number>()
    const scheduledResult = await db.execute(sql`SELECT next_position, count(*)::int AS n FROM followup_enrollments
      WHERE account_id = ${sequence.accountId} AND sequence_id = ${sequence.id} AND status = 'active'
      GROUP BY next_position`)
    for (const r of rows<{ next_position: number; n: number }>(scheduledResult)) {
      scheduled.set(Number(r.next_position), Number(r.n))
    }
    const sends = new Map<string, { queued: number; sent: number; skipped: number; failed: number }>()
    if (steps.length > 0) {
      const result = await db.execute(sql`SELECT origin_id, status, count(*)::int AS n FROM template_sends
        WHERE account_id = ${sequence.accountId} AND origin = 'followup'
          AND origin_id = ANY(${uuidList(steps.map((s) => s.id))}::uuid[])
        GROUP BY origin_id, status`)
      for (const r of rows<{ origin_id: string; status: string; n: number }>(result)) {
        const entry = sends.get(r.origin_id) ?? { queued: 0, sent: 0, skipped: 0, failed: 0 }
        const n = Number(r.n)
        if (SENT.includes(r.status)) entry.sent += n
        else if (r.status === 'skipped') entry.skipped += n
        else if (r.status === 'failed') entry.failed += n
        else entry.queued += n
        sends.set(r.origin_id, entry)
      }
    }
    const views = []
    for (const step of steps) {
      const template = step.templateId ? await deps.templates.get(tenant, step.templateId).catch(() => null) : null
      const status = template?.provider_status ?? null
      const counts = sends.get(step.id) ?? { queued: 0, sent: 0, skipped: 0, failed: 0 }
      views.push({
        id: step.id,
        position: step.position,
        text: step.text,
        delay: { amount: step.delayAmount, unit: step.delayUnit },
        send_time: step.sendTime,
        effective_send_time: step.sendTime ?? timing.sendTime,
        template_id: step.templateId,
        template_status: status,
        approval: status === null ? ('not_submitted' as const) : status,
        needs_approval: status !== 'approved',
        counts: withGermanAliases({ scheduled: scheduled.get(step.position) ?? 0, ...counts }, [
          'queued',
          'sent',
          'skipped',
          'failed',
        ]),
      })
    }
    return views
  }

  function sequenceView(row: SequenceRow, enrollments: Record<EnrollmentStatus, number>) {
    return {
      id: row.id,
      name: row.name,
      status: row.status,
      trigger: row.trigger,
      enrollments,
      created_at: row.createdAt,
      updated_at: row.updatedAt,
    }
  }

  async function detail(tenant: FollowupsTenant, row: SequenceRow) {
    const counts = await enrollmentCounts(row.accountId, [row.id])
    const timing = await timingOf(db, row.accountId)
    return {
      ...sequenceView(row, counts.get(row.id) ?? { active: 0, completed: 0, stopped: 0 }),
      steps: await stepsView(tenant, row, timing),
    }
  }

  async function submitQuietly(tenant: FollowupsTenant, templateId: string) {
    try {
      await deps.templates.submit(tenant, templateId)
    } catch (error) {
      // no number connected yet, or the provider not reached: the step waits for its approval (shown per step)
      if (error instanceof AppError && (error.key === 'chat_not_connected' || error.status === 502)) return
      throw error
    }
  }

  /** Makes and submits a step's marketing template; a text the template check refuses is a 400. */
  async function stepTemplate(tenant: FollowupsTenant, sequenceId: string, position: number, text: string) {
    const template = await deps.templates.create(tenant, {
      name: `followup ${sequenceId.slice(0, 8)} step ${position} ${randomBytes(3).toString('hex')}`,
      content: text,
      channel: 'chat',
      purpose: 'marketing',
      language: tenant.account.language,
    })
    try {
      await submitQuietly(tenant, template.id)
    } catch (error) {
      await deps.templates.delete(tenant, template.id).catch(() => {})
      if (error instanceof AppError && error.status === 400) {
        throw badRequest(
          `Step ${position} cannot go out as a WhatsApp template: ${error.message}`,
          'followup_template_invalid',
          { ...error.details, position, template_key: error.key },
        )
      }
      throw error
    }
    return template.id
  }

  /** Recomputes the time of the next step of active enrollments (after a delay or send-time change). */
  async function reschedule(tx: Db, accountId: string, filter: ReturnType<typeof sql>) {
    const now = clock.now()
    const timing = await timingOf(tx, accountId)
    const result = await tx.execute(sql`SELECT e.id, e.job_id, e.base_at, s.delay_amount, s.delay_unit, s.send_time
      FROM followup_enrollments e JOIN followup_steps s ON s.account_id = e.account_id
        AND s.sequence_id = e.sequence_id AND s.position = e.next_position
      WHERE e.account_id = ${accountId} AND e.status = 'active' AND ${filter}`)
    const changes = rows<{
      id: string
      job_id: string | null
      base_at: string
      delay_amount: number
      delay_unit: DelayUnit
      send_time: string | null
    }>(result).map((r) => {
      const due = dueAt({
        base: new Date(r.base_at),
        amount: Number(r.delay_amount),
        unit: r.delay_unit,
        sendTime: r.send_time ?? timing.sendTime,
        timezone: timing.timezone,
      })
      // a time moved into the past becomes now (sent, not skipped as late)
      const at = new Date(Math.max(due.getTime(), now.getTime()))
      return { id: r.id, job_id: r.job_id, due: at.toISOString(), run: at }
    })
    if (changes.length === 0) return
    const payload = JSON.stringify(changes.map((c) => ({ ...c, run: c.run.toISOString() })))
    await tx.execute(sql`UPDATE followup_enrollments e SET next_due_at = c.due, updated_at = ${now.toISOString()}::timestamptz
      FROM jsonb_to_recordset(${payload}::jsonb) AS c(id uuid, job_id uuid, due timestamptz, run timestamptz)
      WHERE e.account_id = ${accountId} AND e.id = c.id`)
    await tx.execute(sql`UPDATE jobs j SET run_at = c.run
      FROM jsonb_to_recordset(${payload}::jsonb) AS c(id uuid, job_id uuid, due timestamptz, run timestamptz)
      WHERE j.account_id = ${accountId} AND j.id = c.job_id AND j.state = 'queued'`)
  }

  /**
   * Activation: enrollments stopped by a pause go on, and every contact the trigger selects now (confirmed chat opt-in;
   * with a tag trigger also carrying the tag) is enrolled from when it qualified. Future step times only: a step
   * whose time for that contact has passed is not sent. Batches of ACTIVATION_BATCH, each its own transaction.
   */
  async function scheduleExisting(sequence: SequenceRow) {
    const accountId = sequence.accountId
    const steps = await stepsOf(db, accountId, sequence.id)
    const timing = await timingOf(db, accountId)
    // 1. resume what a pause stopped
    for (;;) {
      const done = await db.transaction(async (tx) => {
        const current = await findSequence(tx, accountId, sequence.id, 'share')
        if (current?.status !== 'active') return true
        const result = await tx.execute(sql`SELECT id, next_position, base_at FROM followup_enrollments
          WHERE account_id = ${accountId} AND sequence_id = ${sequence.id} AND status = 'stopped'
            AND stop_reason = 'sequence_paused'
          ORDER BY id LIMIT ${ACTIVATION_BATCH} FOR UPDATE`)
        const list = rows<{ id: string; next_position: number; base_at: string }>(result)
        if (list.length === 0) return true
        const now = clock.now()
        const scheduled: Scheduled[] = []
        const finished: string[] = []
        for (const e of list) {
          const next = firstFutureStep(
            steps,
            { position: Number(e.next_position), base: new Date(e.base_at) },
            timing,
            now,
          )
          if (next) scheduled.push({ accountId, enrollmentId: e.id, ...next })
          else finished.push(e.id)
        }
        if (finished.length > 0) {
          await tx.execute(sql`UPDATE followup_enrollments SET status = 'stopped', stop_reason = 'no_future_steps',
              job_id = NULL, updated_at = ${now.toISOString()}::timestamptz
            WHERE account_id = ${accountId} AND id = ANY(${uuidList(finished)}::uuid[])`)
        }
        await scheduleSteps(tx, clock, scheduled)
        return false
      })
      if (done) break
    }
    // 2. everyone the trigger selects who is not enrolled (nor finished the sequence): from when they qualified
    const trigger = sequence.trigger
    let cursor = '00000000-0000-0000-0000-000000000000'
    for (;;) {
      const done = await db.transaction(async (tx) => {
        const current = await findSequence(tx, accountId, sequence.id, 'share')
        if (current?.status !== 'active') return true
        const since =
          trigger.type === 'tag_added'
            ? sql`(SELECT min(t.created_at) FROM contact_tags t WHERE t.account_id = c.account_id
                AND t.contact_id = c.id AND t.name = ${trigger.tag})`
            : sql`(SELECT max(r.recorded_at) FROM consent_records r WHERE r.account_id = c.account_id
                AND r.contact_id = c.id AND r.channel = 'chat' AND r.to_state = 'confirmed')`
        const tagged =
          trigger.type === 'tag_added'
            ? sql`AND EXISTS (SELECT 1 FROM contact_tags t WHERE t.account_id = c.account_id AND t.contact_id = c.id
                AND t.name = ${trigger.tag})`
            : sql``
        // a page of the selected contacts, then which of them are enrolled already: as one anti-join the planner,
        // with the statistics of before the activation (the enrollments growing under it), walked every enrollment
        // of the sequence once per contact (a 100,000-contact activation took many minutes)
        const result = await tx.execute(sql`SELECT c.id, coalesce(${since}, c.created_at) AS since
          FROM contacts c
          WHERE c.account_id = ${accountId} AND c.optin_chat = 'confirmed' AND c.id > ${cursor}::uuid ${tagged}
          ORDER BY c.id LIMIT ${ACTIVATION_BATCH}`)
        const page = rows<{ id: string; since: string }>(result)
        if (page.length === 0) return true
        cursor = page[page.length - 1].id
        const enrolled = await tx.execute(sql`SELECT e.contact_id FROM followup_enrollments e
          WHERE e.account_id = ${accountId} AND e.contact_id = ANY(${uuidList(page.map((c) => c.id))}::uuid[])
            AND e.sequence_id = ${sequence.id} AND e.status IN ('active', 'completed')`)
        const taken = new Set(rows<{ contact_id: string }>(enrolled).map((r) => r.contact_id))
        const list = page.filter((c) => !taken.has(c.id))
        const now = clock.now()
        const enrollments: Array<Record<string, unknown>> = []
        const scheduled: Scheduled[] = []
        for (const c of list) {
          const since = new Date(c.since)
          const next = firstFutureStep(steps, { position: 1, base: since }, timing, now)
          if (!next) continue
          const id = randomUUID()
          enrollments.push({ id, contact_id: c.id, enrolled_at: since.toISOString() })
          scheduled.push({ accountId, enrollmentId: id, ...next })
        }
        if (enrollments.length === 0) return false
        const inserted = await tx.execute(sql`INSERT INTO followup_enrollments
            (account_id, id, sequence_id, contact_id, status, enrolled_at, updated_at)
          SELECT ${accountId}::uuid, r.id, ${sequence.id}::uuid, r.contact_id, 'active', r.enrolled_at,
            ${now.toISOString()}::timestamptz
          FROM jsonb_to_recordset(${JSON.stringify(enrollments)}::jsonb) AS r(id uuid, contact_id uuid, enrolled_at timestamptz)
          ON CONFLICT (account_id, sequence_id, contact_id) WHERE status = 'active' DO NOTHING
          RETURNING id`)
        const kept = new Set(rows<{ id: string }>(inserted).map((r) => r.id))
        await scheduleSteps(
          tx,
          clock,
          scheduled.filter((s) => kept.has(s.enrollmentId)),
        )
        return false
      })
      if (done) break
    }
  }

  /** Pause or draft: every queued step job and queued send of the sequence is removed; enrollments stop. */
  async function stopSequence(tx: Db, sequence: SequenceRow, reason: string) {
    const now = clock.now().toISOString()
    await dropStepJobs(tx, sequence.accountId, sql`e.sequence_id = ${sequence.id} AND e.status = 'active'`)
    await tx.execute(sql`UPDATE followup_enrollments SET status = 'stopped', stop_reason = ${reason}, job_id = NULL,
        updated_at = ${now}::timestamptz
      WHERE account_id = ${sequence.accountId} AND sequence_id = ${sequence.id} AND status = 'active'`)
    await tx.execute(sql`DELETE FROM jobs j USING template_sends s, followup_steps st
      WHERE st.account_id = ${sequence.accountId} AND st.sequence_id = ${sequence.id}
        AND s.account_id = st.account_id AND s.origin = 'followup' AND s.origin_id = st.id AND s.status = 'queued'
        AND j.account_id = s.account_id AND j.queue = ${TEMPLATE_SEND_QUEUE} AND j.state = 'queued'
        AND j.payload->>'send_id' = s.id::text`)
    await tx.execute(sql`UPDATE template_sends s SET status = 'skipped', reason = ${reason},
        skipped_at = ${now}::timestamptz, updated_at = ${now}::timestamptz
      FROM followup_steps st
      WHERE st.account_id = ${sequence.accountId} AND st.sequence_id = ${sequence.id}
        AND s.account_id = st.account_id AND s.origin = 'followup' AND s.origin_id = st.id AND s.status = 'queued'`)
  }

  return {
    /** The CLI's (and later the web app's) create: a draft with its steps, each step's template made and submitted. */
    async create(tenant: FollowupsTenant, input: SequenceInput) {
      const name = input.name?.trim() ?? ''
      if (name === '' || name.length > LIMITS.name) throw badRequest(`name must hold 1 to ${LIMITS.name} characters`)
      const trigger: SequenceTrigger = input.trigger ?? { type: 'optin_confirmed' }
      if (trigger.type === 'tag_added') {
        if (typeof trigger.tag !== 'string' || trigger.tag.trim() === '' || trigger.tag.length > LIMITS.tag) {
          throw badRequest(`trigger.tag must hold 1 to ${LIMITS.tag} characters`)
        }
      } else if (trigger.type !== 'optin_confirmed') {
        throw badRequest('trigger.type must be optin_confirmed or tag_added')
      }
      if (!Array.isArray(input.steps)) throw badRequest('steps must be an array')
      checkSteps(input.steps)
      const id = randomUUID()
      const templates: string[] = []
      try {
        for (const [i, step] of input.steps.entries()) templates.push(await stepTemplate(tenant, id, i + 1, step.text))
      } catch (error) {
        for (const templateId of templates) await deps.templates.delete(tenant, templateId).catch(() => {})
        throw error
      }
      const now = clock.now().toISOString()
      await db.transaction(async (tx) => {
        await tx.execute(sql`INSERT INTO followup_sequences
            (account_id, id, name, status, trigger, trigger_kind, created_at, updated_at)
          VALUES (${tenant.accountId}, ${id}, ${name}, 'draft', ${JSON.stringify(trigger)}::jsonb, ${trigger.type},
            ${now}::timestamptz, ${now}::timestamptz)`)
        for (const [i, step] of input.steps.entries()) {
          await tx.execute(sql`INSERT INTO followup_steps (account_id, id, sequence_id, position, text, delay_amount,
              delay_unit, send_time, template_id, created_at, updated_at)
            VALUES (${tenant.accountId}, ${randomUUID()}, ${id}, ${i + 1}, ${step.text}, ${step.delay.amount},
              ${step.delay.unit}, ${step.send_time ?? null}, ${templates[i]}, ${now}::timestamptz, ${now}::timestamptz)`)
        }
      })
      return detail(tenant, await require(db, tenant.accountId, id))
    },

    /**
     * The web app's add-a-step (POST /app/followups/{id}/steps): a new last step, its template made and submitted
     * as on create. Contacts already past the previous last step (completed) do not get it.
     */
    async addStep(tenant: FollowupsTenant, id: string, input: StepInput) {
      checkStep(input, 'step')
      if (typeof input.text !== 'string' || input.delay === undefined) throw badRequest('Give text and delay')
      const sequence = await require(db, tenant.accountId, id)
      const before = await stepsOf(db, tenant.accountId, id)
      if (before.length >= LIMITS.steps) throw badRequest(`A sequence has at most ${LIMITS.steps} steps`)
      const position = before.length + 1
      const templateId = await stepTemplate(tenant, id, position, input.text)
      const now = clock.now().toISOString()
      try {
        await db.transaction(async (tx) => {
          await require(tx, tenant.accountId, id, 'update')
          // under the sequence's lock: two adds at once get positions one after the other
          const count = (await stepsOf(tx, tenant.accountId, id)).length
          if (count >= LIMITS.steps) throw badRequest(`A sequence has at most ${LIMITS.steps} steps`)
          await tx.execute(sql`INSERT INTO followup_steps (account_id, id, sequence_id, position, text, delay_amount,
              delay_unit, send_time, template_id, created_at, updated_at)
            VALUES (${tenant.accountId}, ${randomUUID()}, ${id}, ${count + 1}, ${input.text}, ${input.delay.amount},
              ${input.delay.unit}, ${input.send_time ?? null}, ${templateId}, ${now}::timestamptz, ${now}::timestamptz)`)
        })
      } catch (error) {
        await deps.templates.delete(tenant, templateId).catch(() => {})
        throw error
      }
      return detail(tenant, sequence)
    },

    async list(tenant: FollowupsTenant, query: { limit: number; offset: number }) {
      const result = await db.execute(sql`SELECT * FROM followup_sequences WHERE account_id = ${tenant.accountId}
        ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1} OFFSET ${query.offset}`)
      const page = toPage(rows<Record<string, unknown>>(result).map(sequenceFrom), query.limit, query.offset)
      const ids = page.items.map((r) => r.id)
      const counts = await enrollmentCounts(tenant.accountId, ids)
      const stepCounts = new Map<string, number>()
      if (ids.length > 0) {
        const steps = await db.execute(sql`SELECT sequence_id, count(*)::int AS n FROM followup_steps
          WHERE account_id = ${tenant.accountId} AND sequence_id = ANY(${uuidList(ids)}::uuid[]) GROUP BY sequence_id`)
        for (const r of rows<{ sequence_id: string; n: number }>(steps)) stepCounts.set(r.sequence_id, Number(r.n))
      }
      return {
        ...page,
        items: page.items.map((row) => ({
          ...sequenceView(row, counts.get(row.id) ?? { active: 0, completed: 0, stopped: 0 }),
          steps_count: stepCounts.get(row.id) ?? 0,
        })),
      }
    },

    async get(tenant: FollowupsTenant, id: string) {
      return detail(tenant, await require(db, tenant.accountId, id))
    },

    /**
     * PATCH /followups/{id}: `name`, `status`. To active: step templates not yet submitted are submitted, then the
     * contacts the trigger selects are scheduled (future times only). To paused or draft: every send of it stops.
     */
    async update(tenant: FollowupsTenant, id: string, input: { name?: string; status?: SequenceStatus }) {
      if (input.name === undefined && input.status === undefined) throw badRequest('Give status or name (or both)')
      if (input.name !== undefined && (input.name.trim() === '' || input.name.length > LIMITS.name)) {
        throw badRequest(`name must hold 1 to ${LIMITS.name} characters`)
      }
      const before = await require(db, tenant.accountId, id)
      const activating = input.status === 'active' && before.status !== 'active'
      if (activating) {
        for (const step of await stepsOf(db, tenant.accountId, id)) {
          if (!step.templateId) continue
          const template = await deps.templates.get(tenant, step.templateId).catch(() => null)
          if (template && template.provider_status === null) await submitQuietly(tenant, step.templateId)
        }
      }
      const saved = await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, 'update')
        const status = input.status ?? row.status
        if (status !== row.status && status !== 'active') {
          await stopSequence(tx, row, status === 'paused' ? 'sequence_paused' : 'sequence_draft')
        }
        await tx.execute(sql`UPDATE followup_sequences SET name = ${input.name?.trim() ?? row.name},
            status = ${status}, updated_at = ${clock.now().toISOString()}::timestamptz
          WHERE account_id = ${row.accountId} AND id = ${row.id}`)
        return require(tx, tenant.accountId, id)
      })
      if (activating && saved.status === 'active') await scheduleExisting(saved)
      return detail(tenant, await require(db, tenant.accountId, id))
    },

    /**
     * PATCH /followups/{id}/steps/{step_id}: text, delay, send_time. A changed text changes the step's template, which
     * then needs a new approval (submitted again at once when a number is connected): nothing unapproved goes out.
     * A changed delay or send time moves the scheduled times of that step.
     */
    async updateStep(
      tenant: FollowupsTenant,
      id: string,
      stepId: string,
      input: { text?: string; delay?: StepInput['delay']; send_time?: string | null },
    ) {
      if (input.text === undefined && input.delay === undefined && input.send_time === undefined) {
        throw badRequest('Give text, delay or send_time')
      }
      checkStep(input, 'step')
      const sequence = await require(db, tenant.accountId, id)
      const step = UUID.test(stepId) ? (await stepsOf(db, tenant.accountId, id)).find((s) => s.id === stepId) : null
      if (!step) throw notFound('follow-up step')
      if (input.text !== undefined && input.text !== step.text && step.templateId) {
        try {
          await deps.templates.update(tenant, step.templateId, { content: input.text })
        } catch (error) {
          if (error instanceof AppError && error.status === 400) {
            throw badRequest(
              `The step cannot go out as a WhatsApp template: ${error.message}`,
              'followup_template_invalid',
              {
                ...error.details,
                template_key: error.key,
              },
            )
          }
          throw error
        }
        try {
          await submitQuietly(tenant, step.templateId)
        } catch (error) {
          // the text is saved; the check's problems are shown by the template and it waits unapproved
          if (!(error instanceof AppError && error.status === 400)) throw error
        }
      }
      await db.transaction(async (tx) => {
        await tx.execute(sql`UPDATE followup_steps SET
            text = ${input.text ?? step.text},
            delay_amount = ${input.delay?.amount ?? step.delayAmount},
            delay_unit = ${input.delay?.unit ?? step.delayUnit},
            send_time = ${input.send_time === undefined ? step.sendTime : input.send_time},
            updated_at = ${clock.now().toISOString()}::timestamptz
          WHERE account_id = ${tenant.accountId} AND id = ${step.id}`)
        if (input.delay !== undefined || input.send_time !== undefined) {
          await reschedule(
            tx,
            tenant.accountId,
            sql`e.sequence_id = ${sequence.id} AND e.next_position = ${step.position}`,
          )
        }
      })
      return detail(tenant, await require(db, tenant.accountId, id))
    },

    /** GET /followups/{id}/enrollments: the contacts in a sequence, newest enrollment first, by status or contact. */
    async enrollments(
      tenant: FollowupsTenant,
      id: string,
      query: { status?: EnrollmentStatus; contact_id?: string; limit: number; offset: number },
    ) {
      const sequence = await require(db, tenant.accountId, id)
      if (query.contact_id !== undefined && !UUID.test(query.contact_id)) throw badRequest('contact_id must be a uuid')
      const result = await db.execute(sql`SELECT id, contact_id, status, stop_reason, next_position, next_due_at,
          enrolled_at, finished_at FROM followup_enrollments
        WHERE account_id = ${tenant.accountId} AND sequence_id = ${sequence.id}
          ${query.status ? sql`AND status = ${query.status}` : sql``}
          ${query.contact_id ? sql`AND contact_id = ${query.contact_id}` : sql``}
        ORDER BY enrolled_at DESC, id DESC LIMIT ${query.limit + 1} OFFSET ${query.offset}`)
      const page = toPage(rows<Record<string, unknown>>(result), query.limit, query.offset)
      return { ...page, items: page.items.map(enrollmentView) }
    },

    /**
     * POST /followups/{id}/enrollments: enrolls one contact by hand, its first step counted from now. The sequence must
     * be active and the contact's chat opt-in confirmed; a contact enrolled already is a 409.
     */
    /** The rules of enroll, checked without enrolling (the tool's preview): 404, 400 or 409 as enroll answers. */
    async checkEnrollment(tenant: FollowupsTenant, id: string, contactId: string) {
      const sequence = await require(db, tenant.accountId, id)
      if (!UUID.test(contactId)) throw notFound('contact')
      const found = await db.execute(sql`SELECT c.optin_chat, EXISTS (SELECT 1 FROM followup_enrollments e
          WHERE e.account_id = c.account_id AND e.sequence_id = ${sequence.id} AND e.contact_id = c.id
            AND e.status = 'active') AS enrolled
        FROM contacts c WHERE c.account_id = ${tenant.accountId} AND c.id = ${contactId}`)
      const [contact] = rows<{ optin_chat: string; enrolled: unknown }>(found)
      if (!contact) throw notFound('contact')
      if (contact.optin_chat !== 'confirmed') {
        throw badRequest(
          'Only a contact whose chat opt-in is confirmed can be enrolled',
          'followup_contact_not_confirmed',
        )
      }
      if (sequence.status !== 'active') {
        throw new AppError(409, 'followup_not_active', 'The sequence is not active: activate it first', {
          key: 'followup_not_active',
        })
      }
      if (contact.enrolled === true || contact.enrolled === 't') {
        throw new AppError(409, 'followup_already_enrolled', 'The contact is enrolled in this sequence already', {
          key: 'followup_already_enrolled',
        })
      }
      return { sequence_id: sequence.id, contact_id: contactId, optin_chat: contact.optin_chat }
    },

    async enroll(tenant: FollowupsTenant, id: string, contactId: string) {
      await this.checkEnrollment(tenant, id, contactId)
      const outcome = await db.transaction((tx) =>
        enrollContact(tx, clock, { accountId: tenant.accountId, sequenceId: id, contactId }),
      )
      if (!outcome.enrolled) {
        if (outcome.reason === 'already_enrolled') {
          throw new AppError(409, 'followup_already_enrolled', 'The contact is enrolled in this sequence already', {
            key: 'followup_already_enrolled',
          })
        }
        if (outcome.reason === 'sequence_not_active') {
          throw new AppError(409, 'followup_not_active', 'The sequence is not active: activate it first', {
            key: 'followup_not_active',
          })
        }
        throw badRequest('The sequence has no step whose time lies ahead', 'followup_no_steps')
      }
      return enrollmentView(await enrollmentRow(tenant.accountId, id, outcome.enrollment_id as string))
    },

    /** POST /followups/{id}/enrollments/{enrollment_id}/stop: the contact gets no further step of this sequence. */
    async stopEnrollment(tenant: FollowupsTenant, id: string, enrollmentId: string) {
      await require(db, tenant.accountId, id)
      if (!UUID.test(enrollmentId)) throw notFound('enrollment')
      const current = await enrollmentRow(tenant.accountId, id, enrollmentId)
      if (current.status === 'active') {
        const now = clock.now().toISOString()
        await db.transaction(async (tx) => {
          await dropStepJobs(tx, tenant.accountId, sql`e.id = ${enrollmentId} AND e.status = 'active'`)
          await tx.execute(sql`UPDATE followup_enrollments SET status = 'stopped', stop_reason = 'stopped_by_user',
              job_id = NULL, finished_at = ${now}::timestamptz, updated_at = ${now}::timestamptz
            WHERE account_id = ${tenant.accountId} AND id = ${enrollmentId} AND status = 'active'`)
        })
      }
      return enrollmentView(await enrollmentRow(tenant.accountId, id, enrollmentId))
    },

    /** POST /app/followups/{id}/duplicate: a new draft with the same trigger and steps (new templates, submitted). */
    async duplicate(tenant: FollowupsTenant, id: string) {
      const source = await require(db, tenant.accountId, id)
      const steps = await stepsOf(db, tenant.accountId, id)
      return this.create(tenant, {
        name: `${source.name.slice(0, LIMITS.name - 7)} (copy)`,
        trigger: source.trigger,
        steps: steps.map((s) => ({
          text: s.text,
          delay: { amount: s.delayAmount, unit: s.delayUnit },
          send_time: s.sendTime,
        })),
      })
    },

    /**
     * PUT /followups/{id}/trigger: what enrolls contacts. Only while the sequence is not active (409
     * followup_active): activating it then enrolls the contacts the new trigger selects.
     */
    async setTrigger(tenant: FollowupsTenant, id: string, trigger: { type: string; tag?: string }) {
      let clean: SequenceTrigger = { type: 'optin_confirmed' }
      if (trigger.type === 'tag_added') {
        if (typeof trigger.tag !== 'string' || trigger.tag.trim() === '' || trigger.tag.length > LIMITS.tag) {
          throw badRequest(`trigger.tag must hold 1 to ${LIMITS.tag} characters with tag_added`)
        }
        clean = { type: 'tag_added', tag: trigger.tag.trim() }
      } else if (trigger.type !== 'optin_confirmed') {
        throw badRequest('trigger.type must be optin_confirmed or tag_added')
      } else if (trigger.tag !== undefined) {
        throw badRequest('trigger.tag belongs to tag_added only')
      }
      await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, 'update')
        if (row.status === 'active') throw activeRefusal('changing its trigger')
        await tx.execute(sql`UPDATE followup_sequences SET trigger = ${JSON.stringify(clean)}::jsonb,
            trigger_kind = ${clean.type}, updated_at = ${clock.now().toISOString()}::timestamptz
          WHERE account_id = ${row.accountId} AND id = ${row.id}`)
      })
      return detail(tenant, await require(db, tenant.accountId, id))
    },

    /**
     * DELETE /followups/{id}/steps/{step_id}: removes a step of a sequence that is not active; the later steps move up
     * and contacts waiting for it get the next one. Its template is deleted. The last remaining step cannot go.
     */
    async removeStep(tenant: FollowupsTenant, id: string, stepId: string) {
      let templateId: string | null = null
      await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, 'update')
        const steps = await stepsOf(tx, tenant.accountId, id)
        const step = UUID.test(stepId) ? steps.find((s) => s.id === stepId) : undefined
        if (!step) throw notFound('follow-up step')
        if (row.status === 'active') throw activeRefusal('removing a step')
        if (steps.length === 1) throw badRequest('A sequence keeps at least one step', 'followup_last_step')
        templateId = step.templateId
        await tx.execute(sql`DELETE FROM followup_steps WHERE account_id = ${tenant.accountId} AND id = ${step.id}`)
        await renumber(
          tx,
          tenant.accountId,
          id,
          steps.filter((s) => s.id !== step.id).map((s) => s.id),
        )
        await tx.execute(sql`UPDATE followup_enrollments SET next_position = next_position - 1
          WHERE account_id = ${tenant.accountId} AND sequence_id = ${id} AND next_position > ${step.position}`)
      })
      if (templateId) await deps.templates.delete(tenant, templateId).catch(() => {})
      return detail(tenant, await require(db, tenant.accountId, id))
    },

    /**
     * POST /followups/{id}/steps/{step_id}/move: puts a step at another position (1 = first) of a sequence that is not
     * active; the others keep their order. Contacts waiting for position n get the step that is at n now.
     */
    async moveStep(tenant: FollowupsTenant, id: string, stepId: string, position: number) {
      await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, 'update')
        const steps = await stepsOf(tx, tenant.accountId, id)
        const step = UUID.test(stepId) ? steps.find((s) => s.id === stepId) : undefined
        if (!step) throw notFound('follow-up step')
        if (row.status === 'active') throw activeRefusal('moving a step')
        if (!Number.isInteger(position) || position < 1 || position > steps.length) {
          throw badRequest(`position must be 1 to ${steps.length} (the number of steps)`)
        }
        const order = steps.filter((s) => s.id !== step.id).map((s) => s.id)
        order.splice(position - 1, 0, step.id)
        await renumber(tx, tenant.accountId, id, order)
      })
      return detail(tenant, await require(db, tenant.accountId, id))
    },

    /**
     * GET /followups/{id}/statistics: enrollments started in the range by their status now, and the sends of each
     * step in the range by the furthest status reached.
     */
    async statistics(tenant: FollowupsTenant, id: string, range: StatisticsRange) {
      const sequence = await require(db, tenant.accountId, id)
      const since = rangeStart(clock.now(), range)
      const after = since ? sql`AND enrolled_at >= ${since.toISOString()}::timestamptz` : sql``
      const enrolled = await db.execute(sql`SELECT status, count(*)::int AS n FROM followup_enrollments
        WHERE account_id = ${tenant.accountId} AND sequence_id = ${sequence.id} ${after} GROUP BY status`)
      const enrollments = { started: 0, active: 0, completed: 0, stopped: 0 }
      for (const r of rows<{ status: EnrollmentStatus; n: number }>(enrolled)) {
        enrollments[r.status] = Number(r.n)
        enrollments.started += Number(r.n)
      }
      const steps = await stepsOf(db, tenant.accountId, sequence.id)
      const perStep = new Map<string, Record<string, number>>()
      if (steps.length > 0) {
        const result = await db.execute(sql`SELECT origin_id, status, count(*)::int AS n FROM template_sends
          WHERE account_id = ${tenant.accountId} AND origin = 'followup'
            AND origin_id = ANY(${uuidList(steps.map((s) => s.id))}::uuid[])
            ${since ? sql`AND created_at >= ${since.toISOString()}::timestamptz` : sql``}
          GROUP BY origin_id, status`)
        for (const r of rows<{ origin_id: string; status: string; n: number }>(result)) {
          const entry = perStep.get(r.origin_id) ?? {}
          entry[r.status] = (entry[r.status] ?? 0) + Number(r.n)
          perStep.set(r.origin_id, entry)
        }
      }
      const all: Record<string, number> = {}
      for (const entry of perStep.values()) for (const [k, n] of Object.entries(entry)) all[k] = (all[k] ?? 0) + n
      const finished = enrollments.completed + enrollments.stopped
      return {
        followup_id: sequence.id,
        name: sequence.name,
        range,
        since,
        enrollments: {
          ...enrollments,
          completion_rate: finished === 0 ? null : Math.round((enrollments.completed / finished) * 10_000) / 10_000,
        },
        sends: sendFunnel(all),
        steps: steps.map((s) => ({ step_id: s.id, position: s.position, sends: sendFunnel(perStep.get(s.id) ?? {}) })),
      }
    },

    async timing(tenant: FollowupsTenant) {
      const timing = await timingOf(db, tenant.accountId)
      const result = await db.execute(sql`SELECT s.id, s.sequence_id, s.position, s.send_time FROM followup_steps s
        WHERE s.account_id = ${tenant.accountId} AND s.send_time IS NOT NULL ORDER BY s.sequence_id, s.position`)
      return {
        send_time: timing.sendTime,
        timezone: timing.timezone,
        steps: rows<{ id: string; sequence_id: string; position: number; send_time: string }>(result).map((r) => ({
          id: r.id,
          sequence_id: r.sequence_id,
          position: Number(r.position),
          send_time: r.send_time,
        })),
      }
    },

    /**
     * PATCH /settings/followup-timing: send_time (HH:MM or null), timezone (IANA), steps [{id, send_time}] (steps of
     * other accounts and unknown ids are silently skipped). Scheduled step times move accordingly.
     */
    async updateTiming(
      tenant: FollowupsTenant,
      input: { send_time?: string | null; timezone?: string; steps?: Array<{ id: string; send_time: string | null }> },
    ) {
      checkSendTime(input.send_time, 'send_time')
      if (input.timezone !== undefined && !isTimezone(input.timezone)) {
        throw badRequest(`timezone must be an IANA name such as Europe/Berlin; "${input.timezone}" is unknown`)
      }
      for (const [i, step] of (input.steps ?? []).entries()) checkSendTime(step.send_time, `steps[${i}].send_time`)
      await db.transaction(async (tx) => {
        if (input.send_time !== undefined || input.timezone !== undefined) {
          const now = clock.now().toISOString()
          const current = await timingOf(tx, tenant.accountId)
          const stored = await tx.execute(
            sql`SELECT send_time, timezone FROM followup_settings WHERE account_id = ${tenant.accountId}`,
          )
          const [row] = rows<{ send_time: string | null; timezone: string | null }>(stored)
          const sendTime = input.send_time === undefined ? (row?.send_time ?? current.sendTime) : input.send_time
          const timezone = input.timezone ?? row?.timezone ?? null
          await tx.execute(sql`INSERT INTO followup_settings (account_id, send_time, timezone, updated_at)
            VALUES (${tenant.accountId}, ${sendTime}, ${timezone}, ${now}::timestamptz)
            ON CONFLICT (account_id) DO UPDATE SET send_time = excluded.send_time, timezone = excluded.timezone,
              updated_at = excluded.updated_at`)
        }
        const own = (input.steps ?? []).filter((s) => UUID.test(s.id))
        if (own.length > 0) {
          await tx.execute(sql`UPDATE followup_steps s SET send_time = c.send_time,
              updated_at = ${clock.now().toISOString()}::timestamptz
            FROM jsonb_to_recordset(${JSON.stringify(own)}::jsonb) AS c(id uuid, send_time text)
            WHERE s.account_id = ${tenant.accountId} AND s.id = c.id`)
        }
        await reschedule(tx, tenant.accountId, sql`TRUE`)
      })
      return this.timing(tenant)
    },

    /**
     * Due steps, a claim of jobs at once (the batch handler of FOLLOWUP_STEP_QUEUE), per account. Whether sending is
     * possible is read once per account; then, in one transaction: the batch's sequences are share-locked (a pause
     * committing meanwhile waits, then removes what this queued), the enrollments locked, and in the same query
     * re-checked with their contact's chat opt-in, the step and its template's approval, the next step and the
     * account's timing. Per enrollment: a stale job (the enrollment moved on, stopped, or a second job for it) ends;
     * a sequence no longer active or a contact deleted, opted out or no longer confirmed stops the enrollment; a step
     * more than a day late is skipped (reason `late`); while its template is not approved or sending is not possible
     * it waits and looks again; otherwise its send record goes into the template send pipeline (which checks consent
     * again right before sending, reserves the quota and paces; the unique index keeps it to one per step and
     * contact). Then one statement writes everything: the send records with their send jobs, the skips, the
     * enrollments' changes with their next step jobs, the finished and the waiting step jobs.
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
      const ids = uuidList([...jobOf.keys()])
      if (jobOf.size > 0) {
        // sequences first, then enrollments: the order a pause (sequence, then its enrollments) locks them in
        await tx.execute(sql`SELECT 1 FROM followup_sequences q
          WHERE q.account_id = ${accountId} AND q.id IN (SELECT e.sequence_id FROM followup_enrollments e
            WHERE e.account_id = ${accountId} AND e.id = ANY(${ids}::uuid[]))
          ORDER BY q.id FOR SHARE`)
      }
      const found =
        jobOf.size === 0
          ? []
          : rows<StepCheck>(
              await tx.execute(sql`SELECT e.id, e.status, e.next_position, e.next_due_at, e.contact_id,
                q.status AS sequence_status, c.id AS contact_found, c.optin_chat,
                s.id AS step_id, s.template_id, t.provider_status,
                n.position AS next_position_after, n.delay_amount AS next_delay_amount,
                n.delay_unit AS next_delay_unit, n.send_time AS next_send_time,
                (SELECT a.timezone FROM accounts a WHERE a.id = ${accountId}) AS account_timezone,
                (SELECT fs.send_time FROM followup_settings fs WHERE fs.account_id = ${accountId}) AS timing_send_time,
                (SELECT fs.timezone FROM followup_settings fs WHERE fs.account_id = ${accountId}) AS timing_timezone
              FROM followup_enrollments e
              JOIN followup_sequences q ON q.account_id = e.account_id AND q.id = e.sequence_id
              LEFT JOIN contacts c ON c.account_id = e.account_id AND c.id = e.contact_id
              LEFT JOIN followup_steps s ON s.account_id = e.account_id AND s.sequence_id = e.sequence_id
                AND s.position = e.next_position
              LEFT JOIN templates t ON t.account_id = s.account_id AND t.id = s.template_id
              LEFT JOIN followup_steps n ON n.account_id = e.account_id AND n.sequence_id = e.sequence_id
                AND n.position = e.next_position + 1
              WHERE e.account_id = ${accountId} AND e.id = ANY(${ids}::uuid[])
              ORDER BY e.id FOR UPDATE OF e`),
            )
      const now = clock.now()
      const nowIso = now.toISOString()
      const leaseUntil = handOff ? new Date(now.getTime() + (runner.leaseMs ?? 0)).toISOString() : null
      const sends: Array<Record<string, unknown>> = []
      const changes: Array<Record<string, unknown>> = []
      const next: Array<Scheduled & { index: number }> = []
      const waiting: Array<{ job: ClaimedJob; reason: string }> = []
      const checked = new Map(found.map((r) => [r.id, r]))
      for (const [enrollmentId, job] of jobOf) {
        const row = checked.get(enrollmentId)
        if (row?.status !== 'active' || Number(row.next_position) !== Number(job.payload.position)) {
          finished.push(job)
          continue
        }
        const stop = (status: 'stopped' | 'completed', reason: string | null) => {
          changes.push({ id: enrollmentId, status, stop_reason: reason, finished: true })
          finished.push(job)
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
        const wait = blocked ?? (row.template_id && row.provider_status !== 'approved' ? 'template_not_approved' : null)
        if (!late && wait) {
          waiting.push({ job, reason: wait })
          continue
        }
        const skip = late ? 'late' : row.template_id ? null : 'template_missing'
        sends.push({
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
        finished.push(job)
        const timing: Timing = {
          sendTime: row.timing_send_time ?? null,
          timezone: row.timing_timezone ?? row.account_timezone ?? 'Europe/Berlin',
        }
        const following = {
          delayAmount: Number(row.next_delay_amount),
          delayUnit: row.next_delay_unit as DelayUnit,
          sendTime: row.next_send_time,
        } as StepRow
        next.push({
          index: changes.length,
          accountId,
          enrollmentId,
          position: Number(row.next_position_after),
          base: due,
          due: stepDue(following, due, timing),
        })
        changes.push({ id: enrollmentId, status: 'active', stop_reason: null, finished: false })
      }
      // the next steps' jobs, at their times (a time already passed: now)
      const { ids: jobIds, insert } = enqueueSql(
        now,
        next.map((s) => ({
          accountId,
          queue: FOLLOWUP_STEP_QUEUE,
          payload: { enrollment_id: s.enrollmentId, position: s.position },
          runAt: s.due.getTime() < now.getTime() ? now : s.due,
        })),
      )
      next.forEach((s, i) => {
        Object.assign(changes[s.index], {
          next_position: s.position,
          base_at: s.base.toISOString(),
          next_due_at: s.due.toISOString(),
          job_id: jobIds[i],
        })
      })
      const held = (list: ClaimedJob[]) =>
        JSON.stringify(list.map((j) => ({ account_id: j.accountId, id: j.id, lease_token: j.leaseToken })))
      const retryAt = new Date(now.getTime() + WAIT_RETRY_MS).toISOString()
      const waitingJson = JSON.stringify(
        waiting.map(({ job, reason }) => ({ id: job.id, lease_token: job.leaseToken, error: reason })),
      )
      const result = await tx.execute(sql`WITH
        done AS (
          DELETE FROM jobs USING jsonb_to_recordset(${held(finished)}::jsonb) AS h(account_id uuid, id uuid, lease_token uuid)
          WHERE jobs.account_id = h.account_id AND jobs.id = h.id AND jobs.lease_token = h.lease_token
            AND jobs.state = 'running'
          RETURNING jobs.id),
        waited AS (
          UPDATE jobs SET state = 'queued', run_at = ${retryAt}::timestamptz, lease_token = NULL, locked_until = NULL,
            last_error = w.error, updated_at = ${nowIso}::timestamptz
          FROM jsonb_to_recordset(${waitingJson}::jsonb) AS w(id uuid, lease_token uuid, error text)
          WHERE jobs.account_id = ${accountId} AND jobs.id = w.id AND jobs.lease_token = w.lease_token
            AND jobs.state = 'running'
          RETURNING jobs.id),
        sends AS (
          INSERT INTO template_sends (account_id, id, contact_id, template_id, variables, status, reason, origin,
            origin_id, created_at, updated_at, skipped_at)
          SELECT ${accountId}::uuid, r.id, r.contact_id, r.template_id, '{}'::jsonb, r.status, r.reason, 'followup',
            r.origin_id, ${nowIso}::timestamptz, ${nowIso}::timestamptz,
            CASE WHEN r.status = 'skipped' THEN ${nowIso}::timestamptz END
          FROM jsonb_to_recordset(${JSON.stringify(sends)}::jsonb)
            AS r(id uuid, contact_id uuid, template_id uuid, status text, reason text, origin_id uuid)
          ON CONFLICT DO NOTHING
          RETURNING id, status),
        send_jobs AS (
          INSERT INTO jobs (account_id, id, queue, payload, run_at, created_at, state, lease_token, locked_until,
            attempts)
          SELECT ${accountId}::uuid, gen_random_uuid(), ${TEMPLATE_SEND_QUEUE}, jsonb_build_object('send_id', sends.id),
            ${nowIso}::timestamptz, ${nowIso}::timestamptz, ${handOff ? 'running' : 'queued'},
            CASE WHEN ${handOff}::boolean THEN gen_random_uuid() END, ${leaseUntil}::timestamptz, ${handOff ? 1 : 0}::int
          FROM sends WHERE sends.status = 'queued'
          RETURNING account_id, id, queue, payload, concurrency_key, attempts, run_at, created_at, lease_token),
        next_jobs AS (${insert}),
        enrollments AS (
          UPDATE followup_enrollments e SET status = c.status, stop_reason = c.stop_reason,
            next_position = CASE WHEN c.finished THEN e.next_position ELSE c.next_position END,
            base_at = CASE WHEN c.finished THEN e.base_at ELSE c.base_at END,
            next_due_at = CASE WHEN c.finished THEN e.next_due_at ELSE c.next_due_at END,
            job_id = c.job_id,
            finished_at = CASE WHEN c.finished THEN ${nowIso}::timestamptz END,
            updated_at = ${nowIso}::timestamptz
          FROM jsonb_to_recordset(${JSON.stringify(changes)}::jsonb) AS c(id uuid, status text, stop_reason text,
            finished boolean, next_position int, base_at timestamptz, next_due_at timestamptz, job_id uuid)
          WHERE e.account_id = ${accountId} AND e.id = c.id
          RETURNING e.id)
      SELECT (SELECT coalesce(json_agg(id), '[]') FROM (SELECT id FROM done UNION ALL SELECT id FROM waited) h) AS held,
        (SELECT count(*) FROM enrollments) AS changed,
        (SELECT coalesce(json_agg(c), '[]') FROM send_jobs c WHERE c.lease_token IS NOT NULL) AS claimed,
        (SELECT count(pg_notify(${JOBS_CHANNEL}, q.queue))
          FROM (SELECT queue FROM send_jobs WHERE lease_token IS NULL UNION SELECT queue FROM next_jobs) q) AS notified`)
      const [outcome] = rows<{ held: string[] | string; claimed: JobRow[] | string }>(result)
      const kept = new Set(json<string[]>(outcome.held))
      const lost = [...finished, ...waiting.map((w) => w.job)].find((j) => !kept.has(j.id))
      if (lost) throw new LeaseLostError(lost)
      return json<JobRow[]>(outcome.claimed).map(toClaimed)
    })
    // every job of the group was completed or put back to wait in that commit
    return { settled: jobs, claimed }
  }
}

export type FollowupsService = ReturnType<typeof followupsService>
export type { DelayUnit, SequenceStatus, SequenceTrigger }
