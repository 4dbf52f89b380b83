import { randomBytes } from 'node:crypto'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import type { SequenceRow } from './followups.repository.ts'
import * as repo from './followups.repository.ts'
import type { StepInput } from './followups.rules.ts'
import type { Timing } from './followups.schedule.ts'
import type { EnrollmentStatus, SequenceTrigger } from './followups.tables.ts'

export const SENT = ['sent', 'delivered', 'read']

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

export interface SequenceInput {
  name: string
  trigger?: SequenceTrigger
  steps: StepInput[]
}

/** An enrollment as the API shows it. */
export function enrollmentView(r: Record<string, unknown>) {
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

/** The helpers the service's responsibilities share: finding a sequence, its views, its steps' templates. */
export function followupsCore(deps: FollowupsDeps) {
  const { db } = deps

  async function enrollmentRow(accountId: string, sequenceId: string, enrollmentId: string) {
    const row = await repo.findEnrollment(db, accountId, sequenceId, enrollmentId)
    if (!row) throw notFound('enrollment')
    return row
  }

  async function require(tx: Db, accountId: string, id: string, lock: '' | 'update' = '') {
    const row = await repo.findSequence(tx, accountId, id, lock)
    if (!row) throw notFound('follow-up sequence')
    return row
  }

  async function enrollmentCounts(accountId: string, ids: string[]) {
    const counts = new Map<string, Record<EnrollmentStatus, number>>()
    for (const id of ids) counts.set(id, { active: 0, completed: 0, stopped: 0 })
    if (ids.length === 0) return counts
    for (const r of await repo.enrollmentCountsOf(db, accountId, ids)) {
      const entry = counts.get(r.sequence_id)
      if (entry) entry[r.status] = Number(r.n)
    }
    return counts
  }

  async function stepsView(tenant: FollowupsTenant, sequence: SequenceRow, timing: Timing) {
    const steps = await repo.stepsOf(db, sequence.accountId, sequence.id)
    const scheduled = new Map<number, number>()
    for (const r of await repo.scheduledByPosition(db, sequence.accountId, sequence.id)) {
      scheduled.set(Number(r.next_position), Number(r.n))
    }
    const sends = new Map<string, { queued: number; sent: number; skipped: number; failed: number }>()
    if (steps.length > 0) {
      const counts = await repo.sendCountsOf(
        db,
        sequence.accountId,
        steps.map((s) => s.id),
      )
      for (const r of counts) {
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
    const timing = await repo.timingOf(db, row.accountId)
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

  return {
    enrollmentRow,
    require,
    enrollmentCounts,
    stepsView,
    sequenceView,
    detail,
    submitQuietly,
    stepTemplate,
  }
}

export type FollowupsCore = ReturnType<typeof followupsCore>
