import { queryOptions } from '@tanstack/react-query'
import { app, call, v1 } from '../../api/client.ts'

export const automationCheckQuery = (definition: string) =>
  queryOptions({
    queryKey: ['automation-check', definition],
    queryFn: () => call(app.POST('/app/automations/check', { body: JSON.parse(definition) as never })),
  })

export const automationsQuery = queryOptions({
  queryKey: ['automations'],
  queryFn: () => call(v1.GET('/v1/automations', { params: { query: { limit: 100, offset: 0 } } })),
})

export const automationRunsQuery = (id: string) =>
  queryOptions({
    queryKey: ['automation-runs', id],
    queryFn: () =>
      call(v1.GET('/v1/automations/{id}/runs', { params: { path: { id }, query: { limit: 25, offset: 0 } } })),
  })

export const automationSourcesQuery = queryOptions({
  queryKey: ['automation-webhooks'],
  queryFn: () => call(v1.GET('/v1/automation-webhooks', { params: { query: { limit: 100, offset: 0 } } })),
})
