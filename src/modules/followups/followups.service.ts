import { randomBytes, randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import { rangeStart, type StatisticsRange, sendFunnel } from '../../platform/http/statistics.ts'
import {
  activateEnrollments,
  enrollContact,
  rescheduleNextSteps,
  stopActive,
  stopSequence,
} from './followups.enrollment.ts'
import * as repo from './followups.repository.ts'
import { type SequenceRow, UUID } from './followups.repository.ts'
import { checkSendTime, checkStep, checkSteps, LIMITS, requireStepText, type StepInput } from './followups.rules.ts'
import type { Timing } from './followups.schedule.ts'
import type { DelayUnit, EnrollmentStatus, SequenceStatus, SequenceTrigger } from './followups.tables.ts'
import { isTimezone } from './followups.timing.ts'
import { followupRunner } from './followups.worker.ts'

export {
  ACTIVATION_BATCH,
  deleteContactEnrollments,
  enrollContact,
  followupSignals,
  followupTemplateUses,
  sequenceExists,
} from './followups.enrollment.ts'
export { FOLLOWUP_STEP_QUEUE } from './followups.repository.ts'
export { checkStep, LIMITS, type StepInput } from './followups.rules.ts'
export { firstFutureStep, LATE_AFTER_MS, WAIT_RETRY_MS } from './followups.schedule.ts'

const SENT = ['sent', 'delivered', 'read']

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
      // every step's text checked before a template is made: a refused one stores nothing
      for (const [i, step] of input.steps.entries()) requireStepText(step.text, tenant.account.language, i + 1)
      const id = randomUUID()
      const templates: string[] = []
      try {
        for (const [i, step] of input.steps.entries()) templates.push(await stepTemplate(tenant, id, i + 1, step.text))
      } catch (error) {
        for (const templateId of templates) await deps.templates.delete(tenant, templateId).catch(() => {})
        throw error
      }
      const now = clock.now()
      await db.transaction(async (tx) => {
        await repo.insertSequence(tx, { accountId: tenant.accountId, id, name, trigger, now })
        for (const [i, step] of input.steps.entries()) {
          await repo.insertStep(tx, {
            accountId: tenant.accountId,
            id: randomUUID(),
            sequenceId: id,
            position: i + 1,
            text: step.text,
            delay: step.delay,
            sendTime: step.send_time ?? null,
            templateId: templates[i],
            now,
          })
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
      const before = await repo.stepsOf(db, tenant.accountId, id)
      if (before.length >= LIMITS.steps) throw badRequest(`A sequence has at most ${LIMITS.steps} steps`)
      const position = before.length + 1
      requireStepText(input.text, tenant.account.language, position)
      const templateId = await stepTemplate(tenant, id, position, input.text)
      const now = clock.now()
      try {
        await db.transaction(async (tx) => {
          await require(tx, tenant.accountId, id, 'update')
          // under the sequence's lock: two adds at once get positions one after the other
          const count = (await repo.stepsOf(tx, tenant.accountId, id)).length
          if (count >= LIMITS.steps) throw badRequest(`A sequence has at most ${LIMITS.steps} steps`)
          await repo.insertStep(tx, {
            accountId: tenant.accountId,
            id: randomUUID(),
            sequenceId: id,
            position: count + 1,
            text: input.text,
            delay: input.delay,
            sendTime: input.send_time ?? null,
            templateId,
            now,
          })
        })
      } catch (error) {
        await deps.templates.delete(tenant, templateId).catch(() => {})
        throw error
      }
      return detail(tenant, sequence)
    },

    async list(tenant: FollowupsTenant, query: { limit: number; offset: number }) {
      const found = await repo.listSequences(db, tenant.accountId, query.limit + 1, query.offset)
      const page = toPage(found, query.limit, query.offset)
      const ids = page.items.map((r) => r.id)
      const counts = await enrollmentCounts(tenant.accountId, ids)
      const stepCounts = await repo.stepCounts(db, tenant.accountId, ids)
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
        for (const step of await repo.stepsOf(db, tenant.accountId, id)) {
          if (!step.templateId) continue
          const template = await deps.templates.get(tenant, step.templateId).catch(() => null)
          if (template && template.provider_status === null) await submitQuietly(tenant, step.templateId)
        }
      }
      const saved = await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, 'update')
        const status = input.status ?? row.status
        if (status !== row.status && status !== 'active') {
          await stopSequence(tx, clock, row, status === 'paused' ? 'sequence_paused' : 'sequence_draft')
        }
        await repo.updateSequence(tx, row, { name: input.name?.trim() ?? row.name, status, now: clock.now() })
        return require(tx, tenant.accountId, id)
      })
      if (activating && saved.status === 'active') await activateEnrollments(db, clock, saved)
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
      const steps = UUID.test(stepId) ? await repo.stepsOf(db, tenant.accountId, id) : []
      const step = steps.find((s) => s.id === stepId)
      if (!step) throw notFound('follow-up step')
      const textChanged = input.text !== undefined && input.text !== step.text
      // the check the submission runs, before the template or the step is touched: a refused text stores nothing
      if (textChanged) requireStepText(input.text as string, tenant.account.language, step.position)
      if (textChanged && step.templateId) {
        try {
          await deps.templates.update(tenant, step.templateId, { content: input.text as string })
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
          // the text passed the check above; a 400 left (the provider's name taken) is shown by the template
          if (!(error instanceof AppError && error.status === 400)) throw error
        }
      }
      await db.transaction(async (tx) => {
        await repo.updateStep(tx, tenant.accountId, step.id, {
          text: input.text ?? step.text,
          delayAmount: input.delay?.amount ?? step.delayAmount,
          delayUnit: input.delay?.unit ?? step.delayUnit,
          sendTime: input.send_time === undefined ? step.sendTime : input.send_time,
          now: clock.now(),
        })
        if (input.delay !== undefined || input.send_time !== undefined) {
          await rescheduleNextSteps(
            tx,
            clock,
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
      const found = await repo.enrollmentsPage(db, tenant.accountId, sequence.id, query)
      const page = toPage(found, query.limit, query.offset)
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
      const contact = await repo.contactForEnrollment(db, tenant.accountId, sequence.id, contactId)
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
        const now = clock.now()
        await db.transaction((tx) =>
          stopActive(tx, tenant.accountId, sql`e.id = ${enrollmentId}`, {
            reason: 'stopped_by_user',
            now,
            finished: true,
          }),
        )
      }
      return enrollmentView(await enrollmentRow(tenant.accountId, id, enrollmentId))
    },

    /** POST /app/followups/{id}/duplicate: a new draft with the same trigger and steps (new templates, submitted). */
    async duplicate(tenant: FollowupsTenant, id: string) {
      const source = await require(db, tenant.accountId, id)
      const steps = await repo.stepsOf(db, tenant.accountId, id)
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
        await repo.setSequenceTrigger(tx, row, clean, clock.now())
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
        const steps = await repo.stepsOf(tx, tenant.accountId, id)
        const step = UUID.test(stepId) ? steps.find((s) => s.id === stepId) : undefined
        if (!step) throw notFound('follow-up step')
        if (row.status === 'active') throw activeRefusal('removing a step')
        if (steps.length === 1) throw badRequest('A sequence keeps at least one step', 'followup_last_step')
        templateId = step.templateId
        await repo.deleteStep(tx, tenant.accountId, step)
        const order = steps.filter((s) => s.id !== step.id).map((s) => s.id)
        await repo.renumberSteps(tx, tenant.accountId, id, order, clock.now())
        await repo.shiftEnrollmentsAfter(tx, tenant.accountId, id, step.position)
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
        const steps = await repo.stepsOf(tx, tenant.accountId, id)
        const step = UUID.test(stepId) ? steps.find((s) => s.id === stepId) : undefined
        if (!step) throw notFound('follow-up step')
        if (row.status === 'active') throw activeRefusal('moving a step')
        if (!Number.isInteger(position) || position < 1 || position > steps.length) {
          throw badRequest(`position must be 1 to ${steps.length} (the number of steps)`)
        }
        const order = steps.filter((s) => s.id !== step.id).map((s) => s.id)
        order.splice(position - 1, 0, step.id)
        await repo.renumberSteps(tx, tenant.accountId, id, order, clock.now())
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
      const enrollments = { started: 0, active: 0, completed: 0, stopped: 0 }
      for (const r of await repo.enrollmentCountsOf(db, tenant.accountId, [sequence.id], since)) {
        enrollments[r.status] = Number(r.n)
        enrollments.started += Number(r.n)
      }
      const steps = await repo.stepsOf(db, tenant.accountId, sequence.id)
      const perStep = new Map<string, Record<string, number>>()
      if (steps.length > 0) {
        const counts = await repo.sendCountsOf(
          db,
          tenant.accountId,
          steps.map((s) => s.id),
          since,
        )
        for (const r of counts) {
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
      const timing = await repo.timingOf(db, tenant.accountId)
      const steps = await repo.stepSendTimes(db, tenant.accountId)
      return {
        send_time: timing.sendTime,
        timezone: timing.timezone,
        steps: steps.map((r) => ({
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
          const now = clock.now()
          const current = await repo.timingOf(tx, tenant.accountId)
          const row = await repo.storedTiming(tx, tenant.accountId)
          const sendTime = input.send_time === undefined ? (row?.send_time ?? current.sendTime) : input.send_time
          const timezone = input.timezone ?? row?.timezone ?? null
          await repo.saveTiming(tx, { accountId: tenant.accountId, sendTime, timezone, now })
        }
        const own = (input.steps ?? []).filter((s) => UUID.test(s.id))
        if (own.length > 0) await repo.setStepSendTimes(tx, tenant.accountId, own, clock.now())
        await rescheduleNextSteps(tx, clock, tenant.accountId, sql`TRUE`)
      })
      return this.timing(tenant)
    },

    ...followupRunner(deps),
  }
}

export type FollowupsService = ReturnType<typeof followupsService>
export type { DelayUnit, SequenceStatus, SequenceTrigger }
