import { v1 } from '../../api/client.ts'
import { apiQuery } from '../../ui/query.ts'

/** A conversation's messages, however many are shown. */
export const messagesKey = (id: string) => ['messages', id] as const

/** The inbox's list: conversations by latest activity with each contact's name, phone and e-mail. */
export { inboxPageQuery as conversationsQuery } from '../../ui/inbox-query.ts'

export const messagesQuery = (id: string, limit: number) =>
  apiQuery(['messages', id, limit], () =>
    v1.GET('/v1/inbox/conversations/{id}/messages', { params: { path: { id }, query: { limit, offset: 0 } } }),
  )
