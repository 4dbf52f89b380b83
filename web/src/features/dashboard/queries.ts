import { queryOptions } from '@tanstack/react-query'
import { call, v1 } from '../../api/client.ts'

export const statsQuery = (range: '7d' | '30d' | '90d') =>
  queryOptions({
    queryKey: ['stats', range],
    queryFn: () => call(v1.GET('/v1/stats', { params: { query: { range } } })),
  })
