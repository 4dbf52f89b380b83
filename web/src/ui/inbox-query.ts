import { app } from '../api/client.ts'
import { apiQuery } from './query.ts'

/** The inbox page (GET /app/conversations): the inbox and the frame's unread count share it. */
export const inboxPageQuery = apiQuery(['inbox-page'], () =>
  app.GET('/app/conversations', { params: { query: { limit: 100 } } }),
)
