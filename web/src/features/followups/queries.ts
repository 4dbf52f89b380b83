import { queryOptions } from '@tanstack/react-query'
import { app, call, v1 } from '../../api/client.ts'

export const followupsQuery = queryOptions({
  queryKey: ['followups'],
  queryFn: () => call(v1.GET('/v1/followups', { params: { query: { limit: 100, offset: 0 } } })),
})

export const followupCheckQuery = (settled: string) =>
  queryOptions({
    queryKey: ['followup-check', settled],
    queryFn: () => call(app.POST('/app/followups/check', { body: { text: settled } })),
  })

export const followupQuery = (id: string) =>
  queryOptions({
    queryKey: ['followup', id],
    queryFn: () => call(v1.GET('/v1/followups/{id}', { params: { path: { id } } })),
    // enrollments and sends move by themselves while it is active,
  })
