import { type SQL, sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { recordsetSql, rows } from '../../platform/db/rows.ts'
import { type ClaimedJob, type EnqueueInput, enqueue, enqueueSql, JOBS_CHANNEL } from '../../platform/jobs/jobs.ts'
import { cancelQueued, requeueHeldSql, rescheduleQueued, settleHeldSql } from '../../platform/jobs/lease.ts'
import { countSends, type HandedSend, handOffSendsSql } from '../messaging/index.ts'
import type { EnrollmentChange, Scheduled, StepCheck, Timing } from './followups.schedule.ts'
import type { DelayUnit, EnrollmentStatus, SequenceStatus, SequenceTrigger } from './followups.tables.ts'

/** The durable job of one enrollment's next step, payload { enrollment_id, position }, due at the step's time. */
export const FOLLOWUP_STEP_QUEUE = 'followups.step'

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const json = <T>(v: unknown): T => (typeof v === 'string' ? (JSON.parse(v) as T) : (v as T))
const uuidList = (ids: string[]) => `{${ids.join(',')}}`
const at = (date: Date) => sql`${date.toISOString()}::timestamptz`

export interface SequenceRow {
  accountId: string
  id: string
  name: string
  status: SequenceStatus
  trigger: SequenceTrigger
  createdAt: Date
  updatedAt: Date
}

export interface StepRow {
  id: string
  sequenceId: string
  position: number
  text: string
  delayAmount: number
  delayUnit: DelayUnit
  sendTime: string | null
  templateId: string | null
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

// --- sequences and steps

export async function findSequence(tx: Db, accountId: string, id: string, lock: '' | 'update' | 'share' = '') {
  if (!UUID.test(id)) return undefined
  const suffix = lock === 'update' ? sql`FOR UPDATE` : lock === 'share' ? sql`FOR SHARE` : sql``
  const result = await tx.execute(
    sql`SELECT * FROM followup_sequences WHERE account_id = ${accountId} AND id = ${id} ${suffix}`,
  )
  const [raw] = rows<Record<string, unknown>>(result)
  return raw ? sequenceFrom(raw) : undefined
}

export async function listSequences(db: Db, accountId: string, limit: number, offset: number) {
  const result = await db.execute(sql`SELECT * FROM followup_sequences WHERE account_id = ${accountId}
    ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`)
  return rows<Record<string, unknown>>(result).map(sequenceFrom)
}

/** The active sequences of an account that a trigger kind starts, by id. */
export async function triggeredSequences(tx: Db, accountId: string, kind: SequenceTrigger['type']) {
  const result = await tx.execute(sql`SELECT * FROM followup_sequences
    WHERE account_id = ${accountId} AND trigger_kind = ${kind} AND status = 'active' ORDER BY id`)
  return rows<Record<string, unknown>>(result).map(sequenceFrom)
}

export async function anyTriggered(tx: Db, accountId: string, kind: SequenceTrigger['type']): Promise<boolean> {
  const result = await tx.execute(sql`SELECT 1 FROM followup_sequences
      WHERE account_id = ${accountId} AND trigger_kind = ${kind} AND status = 'active' LIMIT 1`)
  return rows(result).length > 0
}

export const anyTriggeredSql = (accountId: string, kind: SequenceTrigger['type']) =>
  sql`EXISTS (SELECT 1 FROM followup_sequences
      WHERE account_id = ${accountId}::uuid AND trigger_kind = ${kind} AND status = 'active')`

export async function insertSequence(
  tx: Db,
  input: { accountId: string; id: string; name: string; trigger: SequenceTrigger; now: Date },
) {
  await tx.execute(sql`INSERT INTO followup_sequences
      (account_id, id, name, status, trigger, trigger_kind, created_at, updated_at)
    VALUES (${input.accountId}, ${input.id}, ${input.name}, 'draft', ${JSON.stringify(input.trigger)}::jsonb,
      ${input.trigger.type}, ${at(input.now)}, ${at(input.now)})`)
}

export async function updateSequence(
  tx: Db,
  row: SequenceRow,
  input: { name: string; status: SequenceStatus; now: Date },
) {
  await tx.execute(sql`UPDATE followup_sequences SET name = ${input.name},
      status = ${input.status}, updated_at = ${at(input.now)}
    WHERE account_id = ${row.accountId} AND id = ${row.id}`)
}

export async function setSequenceTrigger(tx: Db, row: SequenceRow, trigger: SequenceTrigger, now: Date) {
  await tx.execute(sql`UPDATE followup_sequences SET trigger = ${JSON.stringify(trigger)}::jsonb,
      trigger_kind = ${trigger.type}, updated_at = ${at(now)}
    WHERE account_id = ${row.accountId} AND id = ${row.id}`)
}

export async function stepsOf(tx: Db, accountId: string, sequenceId: string): Promise<StepRow[]> {
  const result = await tx.execute(sql`SELECT * FROM followup_steps
    WHERE account_id = ${accountId} AND sequence_id = ${sequenceId} ORDER BY position`)
  return rows<Record<string, unknown>>(result).map(stepFrom)
}

export async function stepCounts(db: Db, accountId: string, sequenceIds: string[]) {
  const counts = new Map<string, number>()
  if (sequenceIds.length === 0) return counts
  const result = await db.execute(sql`SELECT sequence_id, count(*)::int AS n FROM followup_steps
    WHERE account_id = ${accountId} AND sequence_id = ANY(${uuidList(sequenceIds)}::uuid[]) GROUP BY sequence_id`)
  for (const r of rows<{ sequence_id: string; n: number }>(result)) counts.set(r.sequence_id, Number(r.n))
  return counts
}

export async function insertStep(
  tx: Db,
  input: {
    accountId: string
    id: string
    sequenceId: string
    position: number
    text: string
    delay: { amount: number; unit: DelayUnit }
    sendTime: string | null
    templateId: string
    now: Date
  },
) {
  await tx.execute(sql`INSERT INTO followup_steps (account_id, id, sequence_id, position, text, delay_amount,
      delay_unit, send_time, template_id, created_at, updated_at)
    VALUES (${input.accountId}, ${input.id}, ${input.sequenceId}, ${input.position}, ${input.text},
      ${input.delay.amount}, ${input.delay.unit}, ${input.sendTime}, ${input.templateId}, ${at(input.now)},
      ${at(input.now)})`)
}

export async function updateStep(
  tx: Db,
  accountId: string,
  stepId: string,
  input: { text: string; delayAmount: number; delayUnit: DelayUnit; sendTime: string | null; now: Date },
) {
  await tx.execute(sql`UPDATE followup_steps SET
      text = ${input.text},
      delay_amount = ${input.delayAmount},
      delay_unit = ${input.delayUnit},
      send_time = ${input.sendTime},
      updated_at = ${at(input.now)}
    WHERE account_id = ${accountId} AND id = ${stepId}`)
}

/** Removes a step; enrollments waiting for a later one wait for the position it moves up to. */
export async function deleteStep(tx: Db, accountId: string, step: StepRow) {
  await tx.execute(sql`DELETE FROM followup_steps WHERE account_id = ${accountId} AND id = ${step.id}`)
}

export async function shiftEnrollmentsAfter(tx: Db, accountId: string, sequenceId: string, position: number) {
  await tx.execute(sql`UPDATE followup_enrollments SET next_position = next_position - 1
    WHERE account_id = ${accountId} AND sequence_id = ${sequenceId} AND next_position > ${position}`)
}

/** Gives the steps positions 1..n in the given order (through negative positions: the unique index holds). */
export async function renumberSteps(tx: Db, accountId: string, sequenceId: string, order: string[], now: Date) {
  await tx.execute(sql`UPDATE followup_steps SET position = -position
    WHERE account_id = ${accountId} AND sequence_id = ${sequenceId}`)
  const list = JSON.stringify(order.map((stepId, i) => ({ id: stepId, position: i + 1 })))
  await tx.execute(sql`UPDATE followup_steps s SET position = c.position, updated_at = ${at(now)}
    FROM jsonb_to_recordset(${list}::jsonb) AS c(id uuid, position int)
    WHERE s.account_id = ${accountId} AND s.sequence_id = ${sequenceId} AND s.id = c.id`)
}

/** The ids of a sequence's steps as a query (the origins of its sends). */
export const stepIdsSql = (accountId: string, sequenceId: string) =>
  sql`SELECT st.id FROM followup_steps st WHERE st.account_id = ${accountId} AND st.sequence_id = ${sequenceId}`

/** DELETE /templates/{id}: the follow-up steps that send it. */
export async function stepsSending(tx: Db, accountId: string, templateId: string) {
  const result = await tx.execute(sql`SELECT s.sequence_id, s.position, q.name FROM followup_steps s
    JOIN followup_sequences q ON q.account_id = s.account_id AND q.id = s.sequence_id
    WHERE s.account_id = ${accountId} AND s.template_id = ${templateId}`)
  return rows<{ sequence_id: string; position: number; name: string }>(result)
}

/** The send counts of steps by status (read only: messaging owns the sends), since a time when given. */
export function sendCountsOf(db: Db, accountId: string, stepIds: string[], since: Date | null = null) {
  return countSends(db, { accountId, origin: 'followup', originIds: stepIds, since }, ['origin_id', 'status'])
}

// --- timing

/** The account's follow-up timing: its own send time and timezone, the account's timezone by default. */
export async function timingOf(tx: Db, accountId: string): Promise<Timing> {
  const result = await tx.execute(sql`SELECT a.timezone AS account_timezone, s.send_time, s.timezone
    FROM accounts a LEFT JOIN followup_settings s ON s.account_id = a.id WHERE a.id = ${accountId}`)
  const [raw] = rows<{ account_timezone: string; send_time: string | null; timezone: string | null }>(result)
  return { sendTime: raw?.send_time ?? null, timezone: raw?.timezone ?? raw?.account_timezone ?? 'Europe/Berlin' }
}

export async function storedTiming(tx: Db, accountId: string) {
  const stored = await tx.execute(
    sql`SELECT send_time, timezone FROM followup_settings WHERE account_id = ${accountId}`,
  )
  const [row] = rows<{ send_time: string | null; timezone: string | null }>(stored)
  return row
}

export async function saveTiming(
  tx: Db,
  input: { accountId: string; sendTime: string | null; timezone: string | null; now: Date },
) {
  await tx.execute(sql`INSERT INTO followup_settings (account_id, send_time, timezone, updated_at)
    VALUES (${input.accountId}, ${input.sendTime}, ${input.timezone}, ${at(input.now)})
    ON CONFLICT (account_id) DO UPDATE SET send_time = excluded.send_time, timezone = excluded.timezone,
      updated_at = excluded.updated_at`)
}

/** The steps of an account with a send time of their own. */
export async function stepSendTimes(db: Db, accountId: string) {
  const result = await db.execute(sql`SELECT s.id, s.sequence_id, s.position, s.send_time FROM followup_steps s
    WHERE s.account_id = ${accountId} AND s.send_time IS NOT NULL ORDER BY s.sequence_id, s.position`)
  return rows<{ id: string; sequence_id: string; position: number; send_time: string }>(result)
}

/** Sets the send times of the account's steps among `steps` (other ids are skipped). */
export async function setStepSendTimes(
  tx: Db,
  accountId: string,
  steps: Array<{ id: string; send_time: string | null }>,
  now: Date,
) {
  await tx.execute(sql`UPDATE followup_steps s SET send_time = c.send_time,
      updated_at = ${at(now)}
    FROM jsonb_to_recordset(${JSON.stringify(steps)}::jsonb) AS c(id uuid, send_time text)
    WHERE s.account_id = ${accountId} AND s.id = c.id`)
}

// --- enrollments

export async function contactExists(tx: Db, accountId: string, contactId: string): Promise<boolean> {
  const contact = await tx.execute(sql`SELECT 1 FROM contacts WHERE account_id = ${accountId} AND id = ${contactId}`)
  return rows(contact).length > 0
}

/** A contact's chat opt-in and whether it is enrolled in the sequence now; undefined without the contact. */
export async function contactForEnrollment(db: Db, accountId: string, sequenceId: string, contactId: string) {
  const found = await db.execute(sql`SELECT c.optin_chat, EXISTS (SELECT 1 FROM followup_enrollments e
      WHERE e.account_id = c.account_id AND e.sequence_id = ${sequenceId} AND e.contact_id = c.id
        AND e.status = 'active') AS enrolled
    FROM contacts c WHERE c.account_id = ${accountId} AND c.id = ${contactId}`)
  const [contact] = rows<{ optin_chat: string; enrolled: unknown }>(found)
  return contact
}

/** Enrolls a contact unless it is enrolled already (at most one active enrollment): whether it was. */
export async function insertEnrollment(
  tx: Db,
  input: { accountId: string; id: string; sequenceId: string; contactId: string; now: Date },
): Promise<boolean> {
  const inserted = await tx.execute(sql`INSERT INTO followup_enrollments
      (account_id, id, sequence_id, contact_id, status, enrolled_at, updated_at)
    VALUES (${input.accountId}, ${input.id}, ${input.sequenceId}, ${input.contactId}, 'active', ${at(input.now)},
      ${at(input.now)})
    ON CONFLICT (account_id, sequence_id, contact_id) WHERE status = 'active' DO NOTHING
    RETURNING id`)
  return rows(inserted).length > 0
}

/** Enrolls many contacts of a sequence from when they qualified; returns the ids of those not enrolled already. */
export async function insertEnrollments(
  tx: Db,
  input: {
    accountId: string
    sequenceId: string
    list: Array<{ id: string; contact_id: string; enrolled_at: string }>
    now: Date
  },
): Promise<Set<string>> {
  const inserted = await tx.execute(sql`INSERT INTO followup_enrollments
      (account_id, id, sequence_id, contact_id, status, enrolled_at, updated_at)
    SELECT ${input.accountId}::uuid, r.id, ${input.sequenceId}::uuid, r.contact_id, 'active', r.enrolled_at,
      ${at(input.now)}
    FROM jsonb_to_recordset(${JSON.stringify(input.list)}::jsonb) AS r(id uuid, contact_id uuid, enrolled_at timestamptz)
    ON CONFLICT (account_id, sequence_id, contact_id) WHERE status = 'active' DO NOTHING
    RETURNING id`)
  return new Set(rows<{ id: string }>(inserted).map((r) => r.id))
}

/** Enqueues each enrollment's next step job at its time and records position, base, time and job on the enrollment. */
export async function scheduleSteps(tx: Db, clock: Clock, list: Scheduled[]): Promise<void> {
  if (list.length === 0) return
  const now = clock.now()
  const ids = await enqueue(
    tx,
    clock,
    list.map((s) => stepJob(s, now)),
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
      finished_at = NULL, updated_at = ${at(now)}
    FROM ${recordsetSql(changes, list.length, 'c', 'account_id uuid, id uuid, next_position int, base_at timestamptz, next_due_at timestamptz, job_id uuid')}
    WHERE e.account_id = c.account_id AND e.id = c.id`)
}

/** The step job of a scheduled step, at its time (a time already passed: now). */
function stepJob(s: Scheduled, now: Date): EnqueueInput {
  return {
    accountId: s.accountId,
    queue: FOLLOWUP_STEP_QUEUE,
    payload: { enrollment_id: s.enrollmentId, position: s.position },
    runAt: s.due.getTime() < now.getTime() ? now : s.due,
  }
}

/** Removes the queued step jobs of the enrollments `where` selects (alias `e`; a running one finds its enrollment changed). */
export async function dropStepJobs(tx: Db, accountId: string, where: SQL): Promise<void> {
  await cancelQueued(
    tx,
    accountId,
    sql`SELECT e.job_id FROM followup_enrollments e
      WHERE e.account_id = ${accountId} AND ${where} AND e.job_id IS NOT NULL`,
  )
}

/** Stops the active enrollments `where` selects (alias `e`), with the time they finished when `finished`. */
export async function stopEnrollments(
  tx: Db,
  accountId: string,
  where: SQL,
  input: { reason: string; now: Date; finished: boolean },
) {
  await tx.execute(sql`UPDATE followup_enrollments e SET status = 'stopped', stop_reason = ${input.reason},
      job_id = NULL, ${input.finished ? sql`finished_at = ${at(input.now)},` : sql``} updated_at = ${at(input.now)}
    WHERE e.account_id = ${accountId} AND ${where} AND e.status = 'active'`)
}

export async function anyActiveEnrollment(tx: Db, accountId: string): Promise<boolean> {
  const result = await tx.execute(sql`SELECT 1 FROM followup_enrollments
        WHERE account_id = ${accountId} AND status = 'active' LIMIT 1`)
  return rows(result).length > 0
}

export const anyActiveEnrollmentSql = (accountId: string) =>
  sql`EXISTS (SELECT 1 FROM followup_enrollments WHERE account_id = ${accountId}::uuid AND status = 'active')`

/** DELETE /contacts/{id}: the contact's enrollments; how many. */
export async function deleteEnrollmentsOf(tx: Db, accountId: string, contactId: string): Promise<number> {
  const result = await tx.execute(sql`DELETE FROM followup_enrollments
    WHERE account_id = ${accountId} AND contact_id = ${contactId} RETURNING id`)
  return rows(result).length
}

export async function findEnrollment(db: Db, accountId: string, sequenceId: string, enrollmentId: string) {
  const result = await db.execute(sql`SELECT id, contact_id, status, stop_reason, next_position, next_due_at,
      enrolled_at, finished_at FROM followup_enrollments
    WHERE account_id = ${accountId} AND sequence_id = ${sequenceId} AND id = ${enrollmentId}`)
  const [row] = rows<Record<string, unknown>>(result)
  return row
}

export async function enrollmentsPage(
  db: Db,
  accountId: string,
  sequenceId: string,
  query: { status?: EnrollmentStatus; contact_id?: string; limit: number; offset: number },
) {
  const result = await db.execute(sql`SELECT id, contact_id, status, stop_reason, next_position, next_due_at,
      enrolled_at, finished_at FROM followup_enrollments
    WHERE account_id = ${accountId} AND sequence_id = ${sequenceId}
      ${query.status ? sql`AND status = ${query.status}` : sql``}
      ${query.contact_id ? sql`AND contact_id = ${query.contact_id}` : sql``}
    ORDER BY enrolled_at DESC, id DESC LIMIT ${query.limit + 1} OFFSET ${query.offset}`)
  return rows<Record<string, unknown>>(result)
}

/** Enrollments of sequences by status; since a time of enrollment when given. */
export async function enrollmentCountsOf(db: Db, accountId: string, sequenceIds: string[], since: Date | null = null) {
  const after = since ? sql`AND enrolled_at >= ${since.toISOString()}::timestamptz` : sql``
  const result = await db.execute(sql`SELECT sequence_id, status, count(*)::int AS n FROM followup_enrollments
    WHERE account_id = ${accountId} AND sequence_id = ANY(${uuidList(sequenceIds)}::uuid[]) ${after}
    GROUP BY sequence_id, status`)
  return rows<{ sequence_id: string; status: EnrollmentStatus; n: number }>(result)
}

/** The active enrollments of a sequence by the position of their next step. */
export async function scheduledByPosition(db: Db, accountId: string, sequenceId: string) {
  const result = await db.execute(sql`SELECT next_position, count(*)::int AS n FROM followup_enrollments
    WHERE account_id = ${accountId} AND sequence_id = ${sequenceId} AND status = 'active'
    GROUP BY next_position`)
  return rows<{ next_position: number; n: number }>(result)
}

/** The active enrollments `filter` selects (alias `e`) with what decides their next step's time. */
export async function nextStepsOf(tx: Db, accountId: string, filter: SQL) {
  const result = await tx.execute(sql`SELECT e.id, e.job_id, e.base_at, s.delay_amount, s.delay_unit, s.send_time
    FROM followup_enrollments e JOIN followup_steps s ON s.account_id = e.account_id
      AND s.sequence_id = e.sequence_id AND s.position = e.next_position
    WHERE e.account_id = ${accountId} AND e.status = 'active' AND ${filter}`)
  return rows<{
    id: string
    job_id: string | null
    base_at: string
    delay_amount: number
    delay_unit: DelayUnit
    send_time: string | null
  }>(result)
}

/** Moves the next steps of enrollments to new times, their queued step jobs with them. */
export async function moveNextSteps(
  tx: Db,
  accountId: string,
  changes: Array<{ id: string; job_id: string | null; due: Date }>,
  now: Date,
) {
  const payload = JSON.stringify(changes.map((c) => ({ id: c.id, due: c.due.toISOString() })))
  await tx.execute(sql`UPDATE followup_enrollments e SET next_due_at = c.due, updated_at = ${at(now)}
    FROM ${recordsetSql(payload, changes.length, 'c', 'id uuid, due timestamptz')}
    WHERE e.account_id = ${accountId} AND e.id = c.id`)
  await rescheduleQueued(
    tx,
    accountId,
    changes.map((c) => ({ jobId: c.job_id, runAt: c.due })),
  )
}

/** A batch of a sequence's enrollments stopped by its pause, locked. */
export async function pausedEnrollments(tx: Db, accountId: string, sequenceId: string, limit: number) {
  const result = await tx.execute(sql`SELECT id, next_position, base_at FROM followup_enrollments
    WHERE account_id = ${accountId} AND sequence_id = ${sequenceId} AND status = 'stopped'
      AND stop_reason = 'sequence_paused'
    ORDER BY id LIMIT ${limit} FOR UPDATE`)
  return rows<{ id: string; next_position: number; base_at: string }>(result)
}

/** Paused enrollments none of whose remaining steps lies ahead. */
export async function stopWithoutFutureSteps(tx: Db, accountId: string, ids: string[], now: Date) {
  await tx.execute(sql`UPDATE followup_enrollments SET status = 'stopped', stop_reason = 'no_future_steps',
      job_id = NULL, updated_at = ${at(now)}
    WHERE account_id = ${accountId} AND id = ANY(${uuidList(ids)}::uuid[])`)
}

/**
 * A page (after `cursor`, by id) of the contacts a trigger selects now (confirmed chat opt-in; with a tag trigger
 * also carrying the tag), each with when it qualified.
 */
export async function triggeredContacts(
  tx: Db,
  accountId: string,
  trigger: SequenceTrigger,
  cursor: string,
  limit: number,
) {
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
  // a page of the selected contacts, then which of them are enrolled already (enrolledAmong): as one anti-join the
  // planner, with the statistics of before the activation (the enrollments growing under it), walked every enrollment
  // of the sequence once per contact (a 100,000-contact activation took many minutes)
  const result = await tx.execute(sql`SELECT c.id, coalesce(${since}, c.created_at) AS since
    FROM contacts c
    WHERE c.account_id = ${accountId} AND c.optin_chat = 'confirmed' AND c.id > ${cursor}::uuid ${tagged}
    ORDER BY c.id LIMIT ${limit}`)
  return rows<{ id: string; since: string }>(result)
}

/** Which of the contacts are enrolled in the sequence now or completed it. */
export async function enrolledAmong(tx: Db, accountId: string, sequenceId: string, contactIds: string[]) {
  const enrolled = await tx.execute(sql`SELECT e.contact_id FROM followup_enrollments e
    WHERE e.account_id = ${accountId} AND e.contact_id = ANY(${uuidList(contactIds)}::uuid[])
      AND e.sequence_id = ${sequenceId} AND e.status IN ('active', 'completed')`)
  return new Set(rows<{ contact_id: string }>(enrolled).map((r) => r.contact_id))
}

// --- due steps (the runner)

/**
 * Locks the sequences of the enrollments, then the enrollments (the order a pause locks them in), and re-checks them
 * in the same query with their contact's chat opt-in, the step and its template's approval, the next step and the
 * account's timing.
 */
export async function lockDueEnrollments(tx: Db, accountId: string, enrollmentIds: string[]): Promise<StepCheck[]> {
  const ids = uuidList(enrollmentIds)
  await tx.execute(sql`SELECT 1 FROM followup_sequences q
    WHERE q.account_id = ${accountId} AND q.id IN (SELECT e.sequence_id FROM followup_enrollments e
      WHERE e.account_id = ${accountId} AND e.id = ANY(${ids}::uuid[]))
    ORDER BY q.id FOR SHARE`)
  const result = await tx.execute(sql`SELECT e.id, e.status, e.next_position, e.next_due_at, e.contact_id,
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
    ORDER BY e.id FOR UPDATE OF e`)
  return rows<StepCheck>(result)
}

/**
 * One statement for a batch of due steps of an account: the finished step jobs settled and the waiting ones put back,
 * the send records handed to the pipeline with their send jobs (claimed by this process until `leaseUntil` when
 * given), the next step jobs, the enrollments' changes, and a NOTIFY for the queued jobs. Returns the ids of the step
 * jobs this process still held, and the send jobs it holds.
 */
export async function writeDueSteps(
  tx: Db,
  input: {
    accountId: string
    now: Date
    finished: ClaimedJob[]
    waiting: Array<{ job: ClaimedJob; error: string }>
    retryAt: Date
    sends: HandedSend[]
    leaseUntil: Date | null
    /** each with the index of its enrollment's change */
    next: Array<Scheduled & { index: number }>
    changes: EnrollmentChange[]
  },
): Promise<{ held: string[] | string; claimed: unknown }> {
  const { accountId, now } = input
  const nowIso = now.toISOString()
  // the next steps' jobs, at their times (a time already passed: now)
  const { ids: jobIds, insert } = enqueueSql(
    now,
    input.next.map((s) => stepJob(s, now)),
  )
  input.next.forEach((s, i) => {
    Object.assign(input.changes[s.index], {
      next_position: s.position,
      base_at: s.base.toISOString(),
      next_due_at: s.due.toISOString(),
      job_id: jobIds[i],
    })
  })
  const handed = handOffSendsSql({
    accountId,
    origin: 'followup',
    sends: input.sends,
    sendsCte: 'sends',
    now,
    leaseUntil: input.leaseUntil,
  })
  const result = await tx.execute(sql`WITH
    done AS (${settleHeldSql(input.finished)}),
    waited AS (${requeueHeldSql(accountId, input.waiting, input.retryAt, now)}),
    sends AS (${handed.sends}),
    send_jobs AS (${handed.jobs}),
    next_jobs AS (${insert}),
    enrollments AS (
      UPDATE followup_enrollments e SET status = c.status, stop_reason = c.stop_reason,
        next_position = CASE WHEN c.finished THEN e.next_position ELSE c.next_position END,
        base_at = CASE WHEN c.finished THEN e.base_at ELSE c.base_at END,
        next_due_at = CASE WHEN c.finished THEN e.next_due_at ELSE c.next_due_at END,
        job_id = c.job_id,
        finished_at = CASE WHEN c.finished THEN ${nowIso}::timestamptz END,
        updated_at = ${nowIso}::timestamptz
      FROM ${recordsetSql(
        JSON.stringify(input.changes),
        input.changes.length,
        'c',
        'id uuid, status text, stop_reason text, finished boolean, next_position int, base_at timestamptz, next_due_at timestamptz, job_id uuid',
      )}
      WHERE e.account_id = ${accountId} AND e.id = c.id
      RETURNING e.id)
  SELECT (SELECT coalesce(json_agg(id), '[]') FROM (SELECT id FROM done UNION ALL SELECT id FROM waited) h) AS held,
    (SELECT count(*) FROM enrollments) AS changed,
    (SELECT coalesce(json_agg(c), '[]') FROM send_jobs c WHERE c.lease_token IS NOT NULL) AS claimed,
    (SELECT count(pg_notify(${JOBS_CHANNEL}, q.queue))
      FROM (SELECT queue FROM send_jobs WHERE lease_token IS NULL UNION SELECT queue FROM next_jobs) q) AS notified`)
  const [outcome] = rows<{ held: string[] | string; claimed: unknown }>(result)
  return outcome
}
