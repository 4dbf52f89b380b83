import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { AppError } from '../../platform/http/errors.ts'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { namedPage } from '../../platform/http/pagination.ts'
import { StatisticsQuery } from '../../platform/http/statistics.ts'
import type { RateLimiter } from '../../platform/rate-limit/rate-limiter.ts'
import { BuildingBlocks, buildingBlocks } from './automations.blocks.ts'
import {
  Automation,
  AutomationPage,
  AutomationParams,
  AutomationStatistics,
  AutomationWebhookPage,
  CreateAutomationBody,
  CreatedAutomation,
  ListQuery,
  Run,
  RunPage,
  RunParams,
  TriggerBody,
  TriggeredRun,
  UpdateAutomationBody,
} from './automations.schemas.ts'
import type { AutomationsService } from './automations.service.ts'

const tags = ['automations']
/** The services the automations' operations call. */
export interface AutomationsServices {
  automations: AutomationsService
  automationBlocks: typeof buildingBlocks
}

const operation = operationsUsing<AutomationsServices>()

const Deleted = Type.Object({ id: Type.String({ format: 'uuid' }), deleted: Type.Literal(true) })
const invalid = {
  400: 'automation_invalid (with problems): a step, trigger or condition names what does not exist or does not fit',
}

export const listAutomations = operation({
  method: 'GET',
  path: '/automations',
  scope: 'automations:read',
  operationId: 'listAutomations',
  summary: 'List automations',
  description: 'Newest first.',
  tags,
  query: ListQuery,
  response: AutomationPage,
  handle: async ({ automations }, { tenant, query }) => namedPage('automations', await automations.list(tenant, query)),
})

export const createAutomation = operation({
  method: 'POST',
  path: '/automations',
  scope: 'automations:write',
  operationId: 'createAutomation',
  summary: 'Create an automation (as a draft)',
  description:
    'Answers 200 (the spec). The safety rules apply: a mailing_list or newsletter intent always gets a double opt-in step prepended; several messages at least 24 hours apart (a follow-up sequence in disguise) are cut off after the first such message. `notice` (alias `hinweis`) says what was changed. 400 automation_invalid names every problem (unknown template, a wait with both or neither of duration and until_time, a branch jumping backwards, an unusable address). The signing secret of its webhook steps is shown only here.',
  tags,
  body: CreateAutomationBody,
  response: CreatedAutomation,
  errors: invalid,
  handle: ({ automations }, { tenant, body }) => automations.create(tenant, body),
})

export const getAutomation = operation({
  method: 'GET',
  path: '/automations/{id}',
  scope: 'automations:read',
  operationId: 'getAutomation',
  summary: 'One automation',
  tags,
  params: AutomationParams,
  response: Automation,
  handle: ({ automations }, { tenant, params }) => automations.get(tenant, params.id),
})

export const updateAutomation = operation({
  method: 'PATCH',
  path: '/automations/{id}',
  scope: 'automations:write',
  operationId: 'updateAutomation',
  summary: 'Change an automation',
  description:
    'name, intent, trigger and steps; the safety rules apply again (`notice`). Runs already started keep the steps they started with.',
  tags,
  params: AutomationParams,
  body: UpdateAutomationBody,
  response: Automation,
  errors: invalid,
  handle: ({ automations }, { tenant, params, body }) => automations.update(tenant, params.id, body),
})

export const deleteAutomation = operation({
  method: 'DELETE',
  path: '/automations/{id}',
  scope: 'automations:delete',
  operationId: 'deleteAutomation',
  summary: 'Delete an automation',
  description: 'With its runs and its webhook address; pending steps are not carried out.',
  tags,
  params: AutomationParams,
  response: Deleted,
  handle: ({ automations }, { tenant, params }) => automations.remove(tenant, params.id),
})

export const activateAutomation = operation({
  method: 'POST',
  path: '/automations/{id}/activate',
  scope: 'automations:write',
  operationId: 'activateAutomation',
  summary: 'Activate an automation',
  description: 'Its trigger starts runs from now on; runs that waited while it was paused go on.',
  tags,
  params: AutomationParams,
  response: Automation,
  handle: ({ automations }, { tenant, params }) => automations.activate(tenant, params.id),
})

export const pauseAutomation = operation({
  method: 'POST',
  path: '/automations/{id}/pause',
  scope: 'automations:write',
  operationId: 'pauseAutomation',
  summary: 'Pause an automation',
  description: 'No new runs start; running ones wait before their next step until it is active again.',
  tags,
  params: AutomationParams,
  response: Automation,
  handle: ({ automations }, { tenant, params }) => automations.pause(tenant, params.id),
})

export const triggerAutomation = operation({
  method: 'POST',
  path: '/automations/{id}/trigger',
  scope: 'automations:write',
  idempotent: true,
  operationId: 'triggerAutomation',
  summary: 'Start a run for a contact',
  description:
    'Accepts Idempotency-Key. 202 with the run id; 404 for an unknown automation or contact; 409 automation_not_active unless the automation is active. `data` is available to branch conditions (field).',
  tags,
  params: AutomationParams,
  body: TriggerBody,
  status: 202,
  response: TriggeredRun,
  errors: {
    404: 'not_found: the automation or the contact is missing or belongs to another account',
    409: 'automation_not_active: only an active automation is triggered',
  },
  handle: ({ automations }, { tenant, params, body }) => automations.trigger(tenant, params.id, body),
})

export const listAutomationRuns = operation({
  method: 'GET',
  path: '/automations/{id}/runs',
  scope: 'automations:read',
  operationId: 'listAutomationRuns',
  summary: 'Runs of an automation',
  description:
    'Newest first; each with its state (running, waiting, completed, failed, cancelled), current step and each step’s time, result and reason.',
  tags,
  params: AutomationParams,
  query: ListQuery,
  response: RunPage,
  handle: async ({ automations }, { tenant, params, query }) =>
    namedPage('runs', await automations.runs(tenant, params.id, query)),
})

export const getAutomationRun = operation({
  method: 'GET',
  path: '/automations/{id}/runs/{run_id}',
  scope: 'automations:read',
  operationId: 'getAutomationRun',
  summary: 'One run',
  tags,
  params: RunParams,
  response: Run,
  handle: ({ automations }, { tenant, params }) => automations.run(tenant, params.id, params.run_id),
})

export const duplicateAutomation = operation({
  method: 'POST',
  path: '/automations/{id}/duplicate',
  scope: 'automations:write',
  operationId: 'duplicateAutomation',
  summary: 'Duplicate an automation as a new draft',
  description:
    'Same intent, trigger and steps, named "<name> (copy)"; a draft with its own signing secret (shown once, as on create) and, for a webhook trigger, its own incoming address. Nothing runs until it is activated.',
  tags,
  params: AutomationParams,
  status: 201,
  response: CreatedAutomation,
  handle: ({ automations }, { tenant, params }) => automations.duplicate(tenant, params.id),
})

export const cancelAutomationRun = operation({
  method: 'POST',
  path: '/automations/{id}/runs/{run_id}/cancel',
  scope: 'automations:write',
  operationId: 'cancelAutomationRun',
  summary: 'Cancel a run',
  description:
    'A running or waiting run ends as cancelled (reason cancelled_by_user): its next step never happens. What it did before stays done. 409 run_finished when it has ended already.',
  tags,
  params: RunParams,
  response: Run,
  errors: { 409: 'run_finished: the run has ended already' },
  handle: ({ automations }, { tenant, params }) => automations.cancelRun(tenant, params.id, params.run_id),
})

export const getAutomationStatistics = operation({
  method: 'GET',
  path: '/automations/{id}/statistics',
  scope: 'stats:read',
  operationId: 'getAutomationStatistics',
  summary: "An automation's statistics",
  description:
    'For the range (7d, 30d, 90d: 24-hour periods up to now; all): the runs begun in it by their state now, the completion rate, by what started them, failure and cancel reasons, and the template sends of those runs by the furthest status they reached. Scope stats:read.',
  tags,
  params: AutomationParams,
  query: StatisticsQuery,
  response: AutomationStatistics,
  handle: ({ automations }, { tenant, params, query }) => automations.statistics(tenant, params.id, query.range),
})

export const listAutomationBuildingBlocks = operation({
  method: 'GET',
  path: '/automations/building-blocks',
  scope: 'automations:read',
  operationId: 'listAutomationBuildingBlocks',
  summary: 'What an automation can be built from',
  description:
    'Every intent, trigger and step type with what it does and its fields (each with its JSON Schema and limits), as POST /automations takes them.',
  tags,
  response: BuildingBlocks,
  handle: async ({ automationBlocks }) => automationBlocks(),
})

export const listAutomationWebhooks = operation({
  method: 'GET',
  path: '/automation-webhooks',
  scope: 'webhooks:read',
  operationId: 'listAutomationWebhooks',
  summary: 'Webhook addresses of automations',
  description:
    'Read-only. Every trigger source: an incoming webhook address (its url contains the secret), a calendar feed, or Herold itself (internal). state is running, waiting_for_first_event, not_connected (the automation is not active) or internal; German aliases of section 9 (zustand, art, verbindung, erstes_ereignis, letztes_ereignis, anzahl_ereignisse, letzter_fehler) are returned beside the English names.',
  tags: ['automations', 'webhooks'],
  query: ListQuery,
  response: AutomationWebhookPage,
  handle: async ({ automations }, { tenant, query }) =>
    namedPage('automation_webhooks', await automations.addresses(tenant, query)),
})

export function automationsRoutes(automations: AutomationsService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { automations, automationBlocks: buildingBlocks }, [
      listAutomations,
      createAutomation,
      getAutomation,
      updateAutomation,
      deleteAutomation,
      activateAutomation,
      pauseAutomation,
      triggerAutomation,
      listAutomationRuns,
      getAutomationRun,
      duplicateAutomation,
      cancelAutomationRun,
      getAutomationStatistics,
      listAutomationBuildingBlocks,
      listAutomationWebhooks,
    ])
  }
}

/** Incoming webhook addresses: JSON only, at most 64 KB, rate-limited per address. */
export const WEBHOOK_BODY_LIMIT = 64 * 1024

export function automationHookRoutes(deps: { service: AutomationsService; limiter: RateLimiter }) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Params: { id: string; secret: string } }>(
      '/public/automation-hooks/:id/:secret',
      { config: { public: true }, bodyLimit: WEBHOOK_BODY_LIMIT, schema: { hide: true } },
      async (request, reply) => {
        const type = String(request.headers['content-type'] ?? '')
          .split(';')[0]
          .trim()
          .toLowerCase()
        if (type !== 'application/json') {
          throw new AppError(415, 'unsupported_media_type', 'Send the payload as application/json')
        }
        const rate = await deps.limiter.consume(`automation-hook:${request.params.id}`)
        if (!rate.allowed) {
          reply.header('retry-after', String(rate.resetSeconds))
          throw new AppError(429, 'rate_limited', 'Too many requests to this address; retry later')
        }
        const started = await deps.service.receiveWebhook(request.params.id, request.params.secret, request.body)
        return reply.code(202).send(started)
      },
    )
  }
}
