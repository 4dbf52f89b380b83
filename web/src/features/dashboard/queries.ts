import { app, v1 } from '../../api/client.ts'
import { apiQuery } from '../../ui/query.ts'

export const statsQuery = (range: '7d' | '30d' | '90d') =>
  apiQuery(['stats', range], () => v1.GET('/v1/stats', { params: { query: { range } } }))

/** The four first steps of a new account, each done or not (GET /app/first-steps). */
export const firstStepsQuery = apiQuery(['first-steps'], () => app.GET('/app/first-steps'))
