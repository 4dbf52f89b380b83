import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { toPage } from '../../platform/http/pagination.ts'
import { withGermanAliases } from '../../platform/http/serializer.ts'
import { rangeStart, type StatisticsRange, sendFunnel } from '../../platform/http/statistics.ts'
import { cancelQueuedJobs } from '../../platform/jobs/jobs.ts'
import {
  contactForAutomation,
  fieldConditionProblems,
  fieldDefinitionsOf,
  findOrCreateInboundContact,
} from '../contacts/index.ts'
import { CONTACT_VARIABLES, type TemplatesService } from '../templates/index.ts'
import * as repo from './automations.repository.ts'
import { applySafetyRules, fieldConditionOf, type Step, stepProblems, type Trigger } from './automations.rules.ts'
import { enqueueRunJobs } from './automations.start.ts'
import {
  type AutomationsEngineDeps,
  automationsEngine,
  FINAL,
  finishRun,
  RUN_QUEUE,
  startRuns,
} from './automations.worker.ts'

export type AutomationsTenant = Pick<TenantContext, 'accountId' | 'account'>

export interface AutomationsDeps extends AutomationsEngineDeps {
  publicUrl: string
  allowPrivateTargets: boolean
  templates: Pick<TemplatesService, 'get'>
  checkUrl: (url: string, allowPrivateTargets: boolean) => { key: string; message: string } | null
  newSecret: () => string
  /** the follow-ups module: whether a sequence exists in the account, and enrolling a contact in the run's transaction */
  followups: AutomationsEngineDeps['followups'] & {
    exists(tx: Db, accountId: string, sequenceId: string): Promise<boolean>
  }
}

interface CreateInput {
  name: string
  intent: string
  trigger: Trigger
  steps: Step[]
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const sourceKindOf = (trigger: Trigger) =>
  trigger.type === 'webhook' ? 'webhook' : trigger.type === 'calendar' ? 'calendar' : 'internal'

const digest = (value: string) => createHash('sha256').update(value).digest()

export function runView(row: repo.RunRow) {
  const finished = FINAL.includes(row.state)
  return {
    id: row.id,
    automation_id: row.automationId,
    contact_id: row.contactId,
    state: row.state,
    source: row.source,
    current_step: finished ? null : row.stepIndex,
    wait_until: row.waitUntil?.toISOString() ?? null,
    reason: row.reason,
    steps: row.log,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    finished_at: row.finishedAt?.toISOString() ?? null,
  }
}

export function automationsService(deps: AutomationsDeps) {
  const { db, clock } = deps
  const engine = automationsEngine(deps)

  const webhookUrl = (source: repo.SourceRow) =>
    `${deps.publicUrl}/public/automation-hooks/${source.id}/${deps.secrets.open(source.secretSealed ?? '')}`

  function view(row: repo.AutomationRow, source: repo.SourceRow | null) {
    return {
      id: row.id,
      name: row.name,
      status: row.status,
      intent: row.intent,
      trigger: row.trigger,
      steps: row.steps,
      webhook_url: source?.kind === 'webhook' ? webhookUrl(source) : null,
      notice: row.notice,
      hinweis: row.notice,
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
    }
  }

  async function load(tenant: AutomationsTenant, id: string, options: { lock?: boolean; tx?: Db } = {}) {
    if (!UUID.test(id)) throw notFound('automation')
    const row = await repo.findAutomation(options.tx ?? db, tenant.accountId, id, options)
    if (!row) throw notFound('automation')
    return row
  }

  /** What the schema cannot check: step rules, the templates and tags they name, the addresses they call. */
  async function validate(tenant: AutomationsTenant, input: { trigger?: Trigger; steps?: Step[] }) {
    const problems = input.steps ? stepProblems(input.steps) : []
    const passes = (input.steps ?? []).some((s) => s.type === 'send_template' && Object.keys(s.variables ?? {}).length)
    // rule 5 of POST /messages: built-in contact variables and custom fields come from the contact, never from a step
    const fromContact = new Set<string>(CONTACT_VARIABLES)
    if (passes) for (const field of await fieldDefinitionsOf(db, tenant.accountId)) fromContact.add(field.key)
    for (const [index, step] of (input.steps ?? []).entries()) {
      if (step.type === 'send_template') {
        const found = await deps.templates
          .get({ accountId: tenant.accountId, account: tenant.account }, step.template_id)
          .catch((error: unknown) => (error instanceof AppError && error.status === 404 ? null : Promise.reject(error)))
        if (!found) problems.push(`steps[${index}]: template ${step.template_id} does not exist`)
        else if (found.channel !== 'chat')
          problems.push(`steps[${index}]: template ${step.template_id} is not a chat template`)
        const contactOwn = found ? found.variables.filter((v) => !found.settable_variables.includes(v)) : []
        for (const name of Object.keys(step.variables ?? {})) {
          if (fromContact.has(name) || contactOwn.includes(name)) {
            problems.push(`steps[${index}].variables.${name}: comes from the contact and cannot be passed`)
          }
        }
      }
      if (step.type === 'enroll_followup' && !(await deps.followups.exists(db, tenant.accountId, step.followup_id))) {
        problems.push(`steps[${index}]: follow-up sequence ${step.followup_id} does not exist`)
      }
      if (step.type === 'webhook') {
        const problem = deps.checkUrl(step.url, deps.allowPrivateTargets)
        if (problem) problems.push(`steps[${index}]: ${problem.message}`)
      }
    }
    const fieldConditions = (input.steps ?? []).flatMap((step, index) =>
      step.type === 'branch' && step.condition.type === 'contact_field'
        ? [{ index, condition: fieldConditionOf(step.condition) }]
        : [],
    )
    if (fieldConditions.length > 0) {
      const definitions = await fieldDefinitionsOf(db, tenant.accountId)
      for (const { index, condition } of fieldConditions) {
        const at = `steps[${index}].condition`
        const found = fieldConditionProblems([condition], definitions, at)
        problems.push(...found.map((p) => p.message.replace(`${at}[0]`, at)))
      }
    }
    if (input.trigger?.type === 'calendar') {
      const problem = deps.checkUrl(input.trigger.feed_url, deps.allowPrivateTargets)
      if (problem) problems.push(`trigger.feed_url: ${problem.message.replace(/^url/, 'the feed address')}`)
    }
    if (problems.length > 0) throw badRequest(problems.join('; '), 'automation_invalid', { problems })
  }

  async function insertSourceFor(tx: Db, accountId: string, automationId: string, trigger: Trigger) {
    const kind = sourceKindOf(trigger)
    await repo.insertSource(tx, {
      accountId,
      id: randomUUID(),
      automationId,
      kind,
      secretSealed: kind === 'webhook' ? deps.secrets.seal(randomBytes(24).toString('base64url')) : null,
      feedUrl: trigger.type === 'calendar' ? trigger.feed_url : null,
      createdAt: clock.now(),
    })
  }

  return {
    async list(tenant: AutomationsTenant, page: { limit: number; offset: number }) {
      const rows = await repo.listAutomations(db, tenant.accountId, page.limit, page.offset)
      const result = toPage(rows, page.limit, page.offset)
      const items = []
      for (const row of result.items) items.push(view(row, await repo.sourceOf(db, tenant.accountId, row.id)))
      return { ...result, items }
    },

    async get(tenant: AutomationsTenant, id: string) {
      const row = await load(tenant, id)
      return view(row, await repo.sourceOf(db, tenant.accountId, row.id))
    },

    /**
     * POST /app/automations/check: what saving this definition would do, with nothing saved. `problems` are the
     * reasons a save is refused (400 automation_invalid, the same validation); `changes` and `notice` what the
     * safety rules change, and `steps` the steps as they would be stored.
     */
    async check(tenant: AutomationsTenant, input: Omit<CreateInput, 'name'>) {
      let problems: string[] = []
      try {
        await validate(tenant, input)
      } catch (error) {
        if (!(error instanceof AppError) || error.key !== 'automation_invalid') throw error
        problems = error.details.problems as string[]
      }
      const { steps, notices, changes } = applySafetyRules(input.intent, input.steps)
      return { problems, changes, notice: notices.length > 0 ? notices.join(' ') : null, steps }
    },

    /** POST /automations: a draft, with the safety rules applied and what they changed in `notice`. */
    async create(tenant: AutomationsTenant, input: CreateInput) {
      await validate(tenant, input)
      const { steps, notices } = applySafetyRules(input.intent, input.steps)
      const now = clock.now()
      const id = randomUUID()
      const signingSecret = deps.newSecret()
      const row = {
        accountId: tenant.accountId,
        id,
        name: input.name,
        status: 'draft' as const,
        intent: input.intent,
        trigger: input.trigger,
        triggerKind: input.trigger.type,
        steps,
        notice: notices.length > 0 ? notices.join(' ') : null,
        signingSecretSealed: deps.secrets.seal(signingSecret),
        createdAt: now,
        updatedAt: now,
      }
      await db.transaction(async (tx) => {
        await repo.insertAutomation(tx, row)
        await insertSourceFor(tx, tenant.accountId, id, input.trigger)
      })
      return { ...view(row, await repo.sourceOf(db, tenant.accountId, id)), signing_secret: signingSecret }
    },

    async update(tenant: AutomationsTenant, id: string, change: Partial<CreateInput>) {
      await validate(tenant, change)
      return db.transaction(async (tx) => {
        const current = await load(tenant, id, { lock: true, tx })
        const intent = change.intent ?? current.intent
        const rules = change.steps || change.intent ? applySafetyRules(intent, change.steps ?? current.steps) : null
        const trigger = change.trigger ?? current.trigger
        const row = await repo.updateAutomation(tx, tenant.accountId, id, {
          ...(change.name ? { name: change.name } : {}),
          intent,
          trigger,
          triggerKind: trigger.type,
          ...(rules ? { steps: rules.steps, notice: rules.notices.length > 0 ? rules.notices.join(' ') : null } : {}),
          updatedAt: clock.now(),
        })
        if (!row) throw notFound('automation')
        let source = await repo.sourceOf(tx, tenant.accountId, id)
        const sameSource =
          source?.kind === sourceKindOf(trigger) && (trigger.type !== 'calendar' || source.feedUrl === trigger.feed_url)
        if (!sameSource) {
          await repo.deleteSource(tx, tenant.accountId, id)
          await insertSourceFor(tx, tenant.accountId, id, trigger)
          source = await repo.sourceOf(tx, tenant.accountId, id)
        }
        if (row.status === 'active') await engine.ensurePolling(tx, tenant.accountId, source)
        return view(row, source)
      })
    },

    async remove(tenant: AutomationsTenant, id: string) {
      await load(tenant, id)
      const deleted = await db.transaction((tx) => repo.deleteAutomation(tx, tenant.accountId, id))
      if (!deleted) throw notFound('automation')
      return { id, deleted: true as const }
    },

    /** Active: signals start runs; runs that waited while it was paused go on. */
    async activate(tenant: AutomationsTenant, id: string) {
      return db.transaction(async (tx) => {
        await load(tenant, id, { lock: true, tx })
        const now = clock.now()
        const row = await repo.updateAutomation(tx, tenant.accountId, id, { status: 'active', updatedAt: now })
        if (!row) throw notFound('automation')
        const released = await repo.releasePausedRuns(tx, tenant.accountId, id, now)
        await enqueueRunJobs(
          tx,
          clock,
          tenant.accountId,
          released.map((runId) => ({ id: runId })),
        )
        const source = await repo.sourceOf(tx, tenant.accountId, id)
        await engine.ensurePolling(tx, tenant.accountId, source)
        return view(row, source)
      })
    },

    /** Paused: no new runs; running ones wait at their next step until it is active again. */
    async pause(tenant: AutomationsTenant, id: string) {
      await load(tenant, id)
      const row = await repo.updateAutomation(db, tenant.accountId, id, { status: 'paused', updatedAt: clock.now() })
      if (!row) throw notFound('automation')
      return view(row, await repo.sourceOf(db, tenant.accountId, id))
    },

    /** POST /automations/{id}/trigger: a run for a contact of this account; 409 unless the automation is active. */
    async trigger(
      tenant: AutomationsTenant,
      id: string,
      input: { contact_id: string; data?: Record<string, unknown> },
    ) {
      const automation = await load(tenant, id)
      if (!UUID.test(input.contact_id)) throw notFound('contact')
      return db.transaction(async (tx) => {
        const contact = await contactForAutomation(tx, tenant.accountId, input.contact_id, { lock: false })
        if (!contact) throw notFound('contact')
        if (automation.status !== 'active') {
          throw new AppError(409, 'automation_not_active', `The automation is ${automation.status}; activate it first`)
        }
        const [runId] = await startRuns(tx, clock, automation, [
          { contactId: contact.id, data: input.data ?? {}, source: 'manual' },
        ])
        return { run_id: runId, state: 'running' }
      })
    },

    async runs(tenant: AutomationsTenant, id: string, page: { limit: number; offset: number }) {
      await load(tenant, id)
      const rows = await repo.listRuns(db, tenant.accountId, id, page.limit, page.offset)
      const result = toPage(rows, page.limit, page.offset)
      return { ...result, items: result.items.map(runView) }
    },

    async run(tenant: AutomationsTenant, id: string, runId: string) {
      await load(tenant, id)
      if (!UUID.test(runId)) throw notFound('run')
      const row = await repo.findRun(db, tenant.accountId, runId)
      if (!row || row.automationId !== id) throw notFound('run')
      return runView(row)
    },

    /** POST /automations/{id}/duplicate: a draft copy (same intent, trigger and steps) with its own signing secret. */
    async duplicate(tenant: AutomationsTenant, id: string) {
      const source = await load(tenant, id)
      return this.create(tenant, {
        name: `${source.name.slice(0, 193)} (copy)`,
        intent: source.intent,
        trigger: source.trigger,
        steps: source.steps,
      } as CreateInput)
    },

    /**
     * POST /automations/{id}/runs/{run_id}/cancel: a running or waiting run ends as cancelled (reason
     * cancelled_by_user); its queued step job is removed, so nothing further of it happens. A finished run is a 409.
     */
    async cancelRun(tenant: AutomationsTenant, id: string, runId: string) {
      await load(tenant, id)
      if (!UUID.test(runId)) throw notFound('run')
      return db.transaction(async (tx) => {
        const run = await repo.findRun(tx, tenant.accountId, runId, { lock: true })
        if (!run || run.automationId !== id) throw notFound('run')
        if (FINAL.includes(run.state)) {
          throw new AppError(409, 'run_finished', `The run is ${run.state} already`, { key: 'run_finished' })
        }
        await cancelQueuedJobs(tx, { accountId: tenant.accountId, queue: RUN_QUEUE, concurrencyKey: run.id })
        await finishRun(tx, clock, run, run.log, 'cancelled', 'cancelled_by_user')
        const saved = await repo.findRun(tx, tenant.accountId, runId)
        return runView(saved as repo.RunRow)
      })
    },

    /**
     * GET /automations/{id}/statistics: the runs begun in the range by their state now and by what started them,
     * why runs failed or were cancelled, and the template sends of those runs by the furthest status reached.
     */
    async statistics(tenant: AutomationsTenant, id: string, range: StatisticsRange) {
      const automation = await load(tenant, id)
      const since = rangeStart(clock.now(), range)
      const runs = { total: 0, running: 0, waiting: 0, completed: 0, failed: 0, cancelled: 0 }
      const bySource: Record<string, number> = {}
      const reasons: Record<string, number> = {}
      for (const r of await repo.runCounts(db, tenant.accountId, automation.id, since)) {
        const n = Number(r.n)
        runs.total += n
        runs[r.state] += n
        bySource[r.source] = (bySource[r.source] ?? 0) + n
        if ((r.state === 'failed' || r.state === 'cancelled') && r.reason)
          reasons[r.reason] = (reasons[r.reason] ?? 0) + n
      }
      const byStatus: Record<string, number> = {}
      for (const r of await repo.runSendCounts(db, tenant.accountId, automation.id, since)) {
        byStatus[r.status] = Number(r.n)
      }
      const finished = runs.completed + runs.failed + runs.cancelled
      return {
        automation_id: automation.id,
        name: automation.name,
        range,
        since,
        runs: {
          ...runs,
          completion_rate: finished === 0 ? null : Math.round((runs.completed / finished) * 10_000) / 10_000,
        },
        by_source: bySource,
        failure_reasons: reasons,
        sends: sendFunnel(byStatus),
      }
    },

    /** GET /automation-webhooks: every trigger source with its address, state and counts. */
    async addresses(tenant: AutomationsTenant, page: { limit: number; offset: number }) {
      const rows = await repo.listSources(db, tenant.accountId, page.limit, page.offset)
      const result = toPage(rows, page.limit, page.offset)
      return {
        ...result,
        items: result.items.map(({ source, automation }) => {
          const state =
            source.kind === 'internal'
              ? 'internal'
              : automation.status !== 'active'
                ? 'not_connected'
                : source.eventCount > 0 || (source.kind === 'calendar' && source.lastPolledAt && !source.lastError)
                  ? 'running'
                  : 'waiting_for_first_event'
          const connection =
            source.kind === 'webhook'
              ? { method: 'POST', content_type: 'application/json', automation_status: automation.status }
              : source.kind === 'calendar'
                ? {
                    feed_url: source.feedUrl,
                    last_polled_at: source.lastPolledAt?.toISOString() ?? null,
                    automation_status: automation.status,
                  }
                : { trigger: automation.trigger.type, automation_status: automation.status }
          return withGermanAliases(
            {
              id: source.id,
              automation_id: automation.id,
              automation_name: automation.name,
              url: source.kind === 'webhook' ? webhookUrl(source) : source.kind === 'calendar' ? source.feedUrl : null,
              kind: source.kind,
              state,
              connection,
              first_event_at: source.firstEventAt?.toISOString() ?? null,
              last_event_at: source.lastEventAt?.toISOString() ?? null,
              event_count: source.eventCount,
              last_error: source.lastError,
            },
            ['kind', 'state', 'connection', 'first_event_at', 'last_event_at', 'event_count', 'last_error'],
          )
        }),
      }
    },

    /**
     * A POST to a webhook address: the secret compared in constant time (unknown: 404, nothing stored); the contact
     * found or created by e-mail or phone (never an opt-in); a run started. A payload that cannot start one is
     * recorded as the address's last error and refused with 422.
     */
    async receiveWebhook(sourceId: string, secret: string, payload: unknown) {
      const source = UUID.test(sourceId) ? await repo.sourceById(db, sourceId) : null
      if (source?.kind !== 'webhook' || !source.secretSealed) throw notFound('address')
      const expected = deps.secrets.open(source.secretSealed)
      if (!timingSafeEqual(digest(expected), digest(secret))) throw notFound('address')
      const refuse = async (key: string, message: string) => {
        await repo.updateSource(db, source.accountId, source.id, { lastError: message, lastErrorAt: clock.now() })
        return new AppError(422, 'unprocessable', message, { key })
      }
      const automation = await repo.findAutomation(db, source.accountId, source.automationId)
      if (!automation) throw notFound('address')
      if (automation.status !== 'active')
        throw await refuse('automation_not_active', `The automation is ${automation.status}; nothing was started`)
      if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
        throw await refuse('payload_not_object', 'The body must be a JSON object')
      }
      const data = payload as Record<string, unknown>
      const email = typeof data.email === 'string' ? data.email : undefined
      const phone = typeof data.phone === 'string' ? data.phone : undefined
      if (!email && !phone)
        throw await refuse(
          'contact_address_missing',
          'The body needs an email or a phone to find or create the contact',
        )
      const account = await getAccount(db, source.accountId)
      try {
        return await db.transaction(async (tx) => {
          const { contactId } = await findOrCreateInboundContact(tx, clock, {
            accountId: source.accountId,
            language: account.language,
            name: typeof data.name === 'string' ? data.name : '',
            ...(phone ? { phone } : {}),
            ...(email ? { email } : {}),
          })
          const [runId] = await startRuns(tx, clock, automation, [{ contactId, data, source: 'webhook' }])
          await repo.countSourceEvent(tx, source.accountId, source.id, clock.now())
          await repo.updateSource(tx, source.accountId, source.id, { lastError: null })
          return { run_id: runId, contact_id: contactId }
        })
      } catch (error) {
        if (error instanceof AppError && error.status === 400)
          throw await refuse('contact_address_invalid', error.message)
        throw error
      }
    },

    runJob: engine.runJob,
    runBatch: engine.runBatch,
    pollCalendar: engine.pollCalendar,
    startCalendarRun: engine.startCalendarRun,
  }
}

export type AutomationsService = ReturnType<typeof automationsService>

/** DELETE /templates/{id} answers 409 while an automation's steps send the template. */
export async function automationTemplateUses(tx: Db, accountId: string, templateId: string): Promise<string[]> {
  return (await repo.automationsUsingTemplate(tx, accountId, templateId)).map((name) => `automation "${name}"`)
}
