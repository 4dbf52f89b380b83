import { v1 } from '../../api/client.ts'
import { apiQuery, firstPage } from '../../ui/query.ts'

export const webhooksQuery = apiQuery(['webhooks'], () =>
  v1.GET('/v1/webhook-subscriptions', { params: { query: firstPage(100) } }),
)

export const deliveriesQuery = (id: string) =>
  apiQuery(['webhook-deliveries', id], () =>
    v1.GET('/v1/webhook-subscriptions/{id}/deliveries', { params: { path: { id }, query: firstPage(50) } }),
  )
