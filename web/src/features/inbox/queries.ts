import { v1 } from '../../api/client.ts'
import { apiQuery } from '../../ui/query.ts'

/** A conversation's messages, however many are shown. */
export const messagesKey = (id: string) => ['messages', id] as const

export const conversationsQuery = apiQuery(['conversations'], () =>
  v1.GET('/v1/inbox/conversations', { params: { query: { limit: 100, offset: 0, sort: 'last_message_at' } } }),
)

export const messagesQuery = (id: string, limit: number) =>
  apiQuery(['messages', id, limit], () =>
    v1.GET('/v1/inbox/conversations/{id}/messages', { params: { path: { id }, query: { limit, offset: 0 } } }),
  )
