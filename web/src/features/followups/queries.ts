import { app, v1 } from '../../api/client.ts'
import { apiQuery, firstPage } from '../../ui/query.ts'

export const followupsQuery = apiQuery(['followups'], () =>
  v1.GET('/v1/followups', { params: { query: firstPage(100) } }),
)

export const followupCheckQuery = (settled: string) =>
  apiQuery(['followup-check', settled], () => app.POST('/app/followups/check', { body: { text: settled } }))

export const followupQuery = (id: string) =>
  apiQuery(['followup', id], () => v1.GET('/v1/followups/{id}', { params: { path: { id } } }))
