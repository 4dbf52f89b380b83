import type { operations } from '../../api/app.ts'
import { app, v1 } from '../../api/client.ts'
import { apiQuery, firstPage } from '../../ui/query.ts'

/** A definition to dry-run as POST /app/automations/check takes it (what a save would take). */
type CheckDefinition = operations['checkAutomation']['requestBody']['content']['application/json']

export const automationCheckQuery = (definition: CheckDefinition) =>
  apiQuery(['automation-check', definition], () => app.POST('/app/automations/check', { body: definition }))

export const automationsQuery = apiQuery(['automations'], () =>
  v1.GET('/v1/automations', { params: { query: firstPage(100) } }),
)

export const automationQuery = (id: string) =>
  apiQuery(['automation', id], () => v1.GET('/v1/automations/{id}', { params: { path: { id } } }))

export const automationRunsQuery = (id: string) =>
  apiQuery(['automation-runs', id], () =>
    v1.GET('/v1/automations/{id}/runs', { params: { path: { id }, query: firstPage(25) } }),
  )

export const automationSourcesQuery = apiQuery(['automation-webhooks'], () =>
  v1.GET('/v1/automation-webhooks', { params: { query: firstPage(100) } }),
)
