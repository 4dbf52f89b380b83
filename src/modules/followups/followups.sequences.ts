import { randomUUID } from 'node:crypto'
import { badRequest } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import type { FollowupsCore, FollowupsDeps, FollowupsTenant, SequenceInput } from './followups.core.ts'
import { activateEnrollments, stopSequence } from './followups.enrollment.ts'
import * as repo from './followups.repository.ts'
import { activeRefusal, checkSteps, LIMITS, requireStepText } from './followups.rules.ts'
import type { SequenceStatus, SequenceTrigger } from './followups.tables.ts'

/** Creating, listing, changing (activate, pause, rename), duplicating sequences and setting their trigger. */
export function followupSequences(deps: FollowupsDeps, core: FollowupsCore) {
  const { db, clock } = deps
  const { require, enrollmentCounts, sequenceView, detail, submitQuietly, stepTemplate } = core
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
  }
}
