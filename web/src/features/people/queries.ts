import { queryOptions } from '@tanstack/react-query'
import { app, call, v1 } from '../../api/client.ts'

export const keysQuery = queryOptions({
  queryKey: ['keys'],
  queryFn: () => call(app.GET('/app/keys')),
})

export const teamQuery = queryOptions({
  queryKey: ['team'],
  queryFn: () => call(v1.GET('/v1/team', { params: { query: { limit: 200, offset: 0 } } })),
})
