import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import type { FollowupsCore, FollowupsDeps, FollowupsTenant } from './followups.core.ts'
import { rescheduleNextSteps } from './followups.enrollment.ts'
import * as repo from './followups.repository.ts'
import { UUID } from './followups.repository.ts'
import {
  activeRefusal,
  checkStep,
  checkStepChange,
  removableStep,
  requireRoomForSteps,
  requireStepText,
  type StepInput,
} from './followups.rules.ts'

/** Adding, changing, removing and moving a sequence's steps (each step's template made, changed or deleted with it). */
export function followupSteps(deps: FollowupsDeps, core: FollowupsCore) {
  const { db, clock } = deps
  const { require, detail, submitQuietly, stepTemplate } = core
  return {
    /**
     * The web app's add-a-step (POST /app/followups/{id}/steps): a new last step, its template made and submitted
     * as on create. Contacts already past the previous last step (completed) do not get it.
     */
    async addStep(tenant: FollowupsTenant, id: string, input: StepInput) {
      checkStep(input, 'step')
      if (typeof input.text !== 'string' || input.delay === undefined) throw badRequest('Give text and delay')
      const sequence = await require(db, tenant.accountId, id)
      const before = await repo.stepsOf(db, tenant.accountId, id)
      requireRoomForSteps(before.length)
      const position = before.length + 1
      requireStepText(input.text, tenant.account.language, position)
      const templateId = await stepTemplate(tenant, id, position, input.text)
      const now = clock.now()
      try {
        await db.transaction(async (tx) => {
          await require(tx, tenant.accountId, id, 'update')
          // under the sequence's lock: two adds at once get positions one after the other
          const count = (await repo.stepsOf(tx, tenant.accountId, id)).length
          requireRoomForSteps(count)
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
      checkStepChange(input)
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

    /**
     * DELETE /followups/{id}/steps/{step_id}: removes a step of a sequence that is not active; the later steps move up
     * and contacts waiting for it get the next one. Its template is deleted. The last remaining step cannot go.
     */
    async removeStep(tenant: FollowupsTenant, id: string, stepId: string) {
      let templateId: string | null = null
      await db.transaction(async (tx) => {
        const row = await require(tx, tenant.accountId, id, 'update')
        const steps = await repo.stepsOf(tx, tenant.accountId, id)
        const step = removableStep(row.status, steps, stepId)
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
  }
}
