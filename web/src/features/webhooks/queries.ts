import { queryOptions } from '@tanstack/react-query'
import { call, v1 } from '../../api/client.ts'

export const webhooksQuery = queryOptions({
  queryKey: ['webhooks'],
  queryFn: () => call(v1.GET('/v1/webhook-subscriptions', { params: { query: { limit: 100, offset: 0 } } })),
})

export const deliveriesQuery = (id: string) =>
  queryOptions({
    queryKey: ['webhook-deliveries', id],
    queryFn: () =>
      call(
        v1.GET('/v1/webhook-subscriptions/{id}/deliveries', {
          params: { path: { id }, query: { limit: 50, offset: 0 } },
        }),
      ),
  })
