import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import { notFound } from '../../platform/http/errors.ts'
import { storedFileHeaders } from '../../platform/storage/serving.ts'
import type { Storage } from '../../platform/storage/storage.ts'
import {
  ConversationPage,
  ConversationParams,
  ConversationsQuery,
  HistoryPage,
  HistoryQuery,
  MessagePage,
  MessagesQuery,
} from './inbox.schemas.ts'
import type { InboxService } from './inbox.service.ts'

const tags = ['inbox']

export function inboxRoutes(service: InboxService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Querystring: Static<typeof ConversationsQuery> }>(
      '/inbox/conversations',
      {
        config: { scope: 'inbox:read' },
        schema: {
          operationId: 'listConversations',
          summary: 'List conversations',
          description:
            "Newest first: created_at descending, then id (the spec's order); `sort=last_message_at` (an addition) orders by the latest activity instead, then id. One conversation per contact and channel. An offset past the end is an empty page.",
          tags,
          querystring: ConversationsQuery,
          response: { 200: ConversationPage },
        },
      },
      async (request) => {
        const { items, ...page } = await service.listConversations(request.tenant, request.query)
        return { conversations: items, ...page }
      },
    )

    app.get<{ Params: Static<typeof ConversationParams>; Querystring: Static<typeof HistoryQuery> }>(
      '/inbox/conversations/:id/messages',
      {
        config: { scope: 'inbox:read' },
        schema: {
          operationId: 'listConversationMessages',
          summary: "A conversation's messages",
          description:
            'The newest `limit` messages, oldest first within the page; `offset` pages backwards from the newest end (offset 25 gives the 25 before those). 404 for a missing conversation or one of another account.',
          tags,
          params: ConversationParams,
          querystring: HistoryQuery,
          response: { 200: HistoryPage },
        },
      },
      async (request) => {
        const { items, ...page } = await service.conversationMessages(request.tenant, request.params.id, request.query)
        return { messages: items, ...page }
      },
    )

    app.get<{ Querystring: Static<typeof MessagesQuery> }>(
      '/messages',
      {
        config: { scope: 'inbox:read' },
        schema: {
          operationId: 'listMessages',
          summary: 'The account-wide message list',
          description:
            'Newest first: created_at descending, then id. The polling alternative to webhooks: created_at is strictly increasing per account in commit order, so polling with created_after = the newest created_at seen never misses a message, even one committed in the same millisecond.',
          tags,
          querystring: MessagesQuery,
          response: { 200: MessagePage },
        },
      },
      async (request) => {
        const q = request.query
        const direction = q.direction === 'in' || q.direction === 'inbound' ? 'inbound' : 'outbound'
        const { items, ...page } = await service.listMessages(request.tenant, { ...q, direction })
        return { messages: items, ...page }
      },
    )
  }
}

/**
 * Stored files (inbound media, the media library) served from Herold's storage; the address is an unguessable
 * capability (two random uuids). Served so that no browser runs them on Herold's origin (storedFileHeaders).
 */
export function mediaRoutes(storage: Storage) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Params: { account: string; file: string } }>(
      '/public/media/:account/:file',
      { config: { public: true }, schema: { hide: true } },
      async (request, reply) => {
        const stored = await storage.open(`${request.params.account}/${request.params.file}`)
        if (!stored) throw notFound('media')
        return reply
          .headers(storedFileHeaders(stored.mime, request.params.file))
          .header('content-length', stored.size)
          .header('cache-control', 'private, max-age=31536000, immutable')
          .send(stored.stream)
      },
    )
  }
}
