import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import { Type } from 'typebox'
import { AppError, errorResponses } from '../../platform/http/errors.ts'
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

type Params = Static<typeof AutomationParams>
type Query = Static<typeof ListQuery>
const tags = ['automations']

const Deleted = Type.Object({ id: Type.String({ format: 'uuid' }), deleted: Type.Literal(true) })

export function automationsRoutes(service: AutomationsService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Querystring: Query }>(
      '/automations',
      {
        config: { scope: 'automations:read' },
        schema: {
          operationId: 'listAutomations',
          summary: 'List automations',
          description: 'Newest first.',
          tags,
          querystring: ListQuery,
          response: { 200: AutomationPage },
        },
      },
      async (request) => {
        const { items, ...page } = await service.list(request.tenant, request.query)
        return { automations: items, ...page }
      },
    )

    app.post<{ Body: Static<typeof CreateAutomationBody> }>(
      '/automations',
      {
        config: { scope: 'automations:write' },
        schema: {
          operationId: 'createAutomation',
          summary: 'Create an automation (as a draft)',
          description:
            'Answers 200 (the spec). The safety rules apply: a mailing_list or newsletter intent always gets a double opt-in step prepended; several messages at least 24 hours apart (a follow-up sequence in disguise) are cut off after the first such message. `notice` (alias `hinweis`) says what was changed. 400 automation_invalid names every problem (unknown template, a wait with both or neither of duration and until_time, a branch jumping backwards, an unusable address). The signing secret of its webhook steps is shown only here.',
          tags,
          body: CreateAutomationBody,
          response: {
            ...errorResponses({
              400: 'automation_invalid (with problems): a step, trigger or condition names what does not exist or does not fit',
            }),
            200: CreatedAutomation,
          },
        },
      },
      async (request) => service.create(request.tenant, request.body),
    )

    app.get<{ Params: Params }>(
      '/automations/:id',
      {
        config: { scope: 'automations:read' },
        schema: {
          operationId: 'getAutomation',
          summary: 'One automation',
          tags,
          params: AutomationParams,
          response: { 200: Automation },
        },
      },
      async (request) => service.get(request.tenant, request.params.id),
    )

    app.patch<{ Params: Params; Body: Static<typeof UpdateAutomationBody> }>(
      '/automations/:id',
      {
        config: { scope: 'automations:write' },
        schema: {
          operationId: 'updateAutomation',
          summary: 'Change an automation',
          description:
            'name, intent, trigger and steps; the safety rules apply again (`notice`). Runs already started keep the steps they started with.',
          tags,
          params: AutomationParams,
          body: UpdateAutomationBody,
          response: {
            ...errorResponses({
              400: 'automation_invalid (with problems): a step, trigger or condition names what does not exist or does not fit',
            }),
            200: Automation,
          },
        },
      },
      async (request) => service.update(request.tenant, request.params.id, request.body),
    )

    app.delete<{ Params: Params }>(
      '/automations/:id',
      {
        config: { scope: 'automations:delete' },
        schema: {
          operationId: 'deleteAutomation',
          summary: 'Delete an automation',
          description: 'With its runs and its webhook address; pending steps are not carried out.',
          tags,
          params: AutomationParams,
          response: { 200: Deleted },
        },
      },
      async (request) => service.remove(request.tenant, request.params.id),
    )

    for (const action of ['activate', 'pause'] as const) {
      app.post<{ Params: Params }>(
        `/automations/:id/${action}`,
        {
          config: { scope: 'automations:write' },
          schema: {
            operationId: action === 'activate' ? 'activateAutomation' : 'pauseAutomation',
            summary: action === 'activate' ? 'Activate an automation' : 'Pause an automation',
            description:
              action === 'activate'
                ? 'Its trigger starts runs from now on; runs that waited while it was paused go on.'
                : 'No new runs start; running ones wait before their next step until it is active again.',
            tags,
            params: AutomationParams,
            response: { 200: Automation },
          },
        },
        async (request) =>
          action === 'activate'
            ? service.activate(request.tenant, request.params.id)
            : service.pause(request.tenant, request.params.id),
      )
    }

    app.post<{ Params: Params; Body: Static<typeof TriggerBody> }>(
      '/automations/:id/trigger',
      {
        config: { scope: 'automations:write', idempotent: true },
        schema: {
          operationId: 'triggerAutomation',
          summary: 'Start a run for a contact',
          description:
            'Accepts Idempotency-Key. 202 with the run id; 404 for an unknown automation or contact; 409 automation_not_active unless the automation is active. `data` is available to branch conditions (field).',
          tags,
          params: AutomationParams,
          body: TriggerBody,
          response: {
            ...errorResponses({
              404: 'not_found: the automation or the contact is missing or belongs to another account',
              409: 'automation_not_active: only an active automation is triggered',
            }),
            202: TriggeredRun,
          },
        },
      },
      async (request, reply) =>
        reply.code(202).send(await service.trigger(request.tenant, request.params.id, request.body)),
    )

    app.get<{ Params: Params; Querystring: Query }>(
      '/automations/:id/runs',
      {
        config: { scope: 'automations:read' },
        schema: {
          operationId: 'listAutomationRuns',
          summary: 'Runs of an automation',
          description:
            'Newest first; each with its state (running, waiting, completed, failed, cancelled), current step and each step’s time, result and reason.',
          tags,
          params: AutomationParams,
          querystring: ListQuery,
          response: { 200: RunPage },
        },
      },
      async (request) => {
        const { items, ...page } = await service.runs(request.tenant, request.params.id, request.query)
        return { runs: items, ...page }
      },
    )

    app.get<{ Params: Static<typeof RunParams> }>(
      '/automations/:id/runs/:run_id',
      {
        config: { scope: 'automations:read' },
        schema: {
          operationId: 'getAutomationRun',
          summary: 'One run',
          tags,
          params: RunParams,
          response: { 200: Run },
        },
      },
      async (request) => service.run(request.tenant, request.params.id, request.params.run_id),
    )

    app.post<{ Params: Params }>(
      '/automations/:id/duplicate',
      {
        config: { scope: 'automations:write' },
        schema: {
          operationId: 'duplicateAutomation',
          summary: 'Duplicate an automation as a new draft',
          description:
            'Same intent, trigger and steps, named "<name> (copy)"; a draft with its own signing secret (shown once, as on create) and, for a webhook trigger, its own incoming address. Nothing runs until it is activated.',
          tags,
          params: AutomationParams,
          response: { 201: CreatedAutomation },
        },
      },
      async (request, reply) => reply.code(201).send(await service.duplicate(request.tenant, request.params.id)),
    )

    app.post<{ Params: Static<typeof RunParams> }>(
      '/automations/:id/runs/:run_id/cancel',
      {
        config: { scope: 'automations:write' },
        schema: {
          operationId: 'cancelAutomationRun',
          summary: 'Cancel a run',
          description:
            'A running or waiting run ends as cancelled (reason cancelled_by_user): its next step never happens. What it did before stays done. 409 run_finished when it has ended already.',
          tags,
          params: RunParams,
          response: { ...errorResponses({ 409: 'run_finished: the run has ended already' }), 200: Run },
        },
      },
      async (request) => service.cancelRun(request.tenant, request.params.id, request.params.run_id),
    )

    app.get<{ Params: Params; Querystring: Static<typeof StatisticsQuery> }>(
      '/automations/:id/statistics',
      {
        config: { scope: 'stats:read' },
        schema: {
          operationId: 'getAutomationStatistics',
          summary: "An automation's statistics",
          description:
            'For the range (7d, 30d, 90d: 24-hour periods up to now; all): the runs begun in it by their state now, the completion rate, by what started them, failure and cancel reasons, and the template sends of those runs by the furthest status they reached. Scope stats:read.',
          tags,
          params: AutomationParams,
          querystring: StatisticsQuery,
          response: { 200: AutomationStatistics },
        },
      },
      async (request) => service.statistics(request.tenant, request.params.id, request.query.range),
    )

    app.get(
      '/automations/building-blocks',
      {
        config: { scope: 'automations:read' },
        schema: {
          operationId: 'listAutomationBuildingBlocks',
          summary: 'What an automation can be built from',
          description:
            'Every intent, trigger and step type with what it does and its fields (each with its JSON Schema and limits), as POST /automations takes them.',
          tags,
          response: { 200: BuildingBlocks },
        },
      },
      async () => buildingBlocks(),
    )

    app.get<{ Querystring: Query }>(
      '/automation-webhooks',
      {
        config: { scope: 'webhooks:read' },
        schema: {
          operationId: 'listAutomationWebhooks',
          summary: 'Webhook addresses of automations',
          description:
            'Read-only. Every trigger source: an incoming webhook address (its url contains the secret), a calendar feed, or Herold itself (internal). state is running, waiting_for_first_event, not_connected (the automation is not active) or internal; German aliases of section 9 (zustand, art, verbindung, erstes_ereignis, letztes_ereignis, anzahl_ereignisse, letzter_fehler) are returned beside the English names.',
          tags: ['automations', 'webhooks'],
          querystring: ListQuery,
          response: { 200: AutomationWebhookPage },
        },
      },
      async (request) => {
        const { items, ...page } = await service.addresses(request.tenant, request.query)
        return { automation_webhooks: items, ...page }
      },
    )
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
