import type { FastifyInstance } from 'fastify'
import { notFound } from '../../platform/http/errors.ts'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
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

/** The services the inbox's operations call. */
export interface InboxServices {
  inbox: InboxService
}

const operation = operationsUsing<InboxServices>()

export const listConversations = operation({
  method: 'GET',
  path: '/inbox/conversations',
  scope: 'inbox:read',
  operationId: 'listConversations',
  summary: 'List conversations',
  description:
    "Newest first: created_at descending, then id (the spec's order); `sort=last_message_at` (an addition) orders by the latest activity instead, then id. One conversation per contact and channel. An offset past the end is an empty page.",
  tags,
  query: ConversationsQuery,
  response: ConversationPage,
  async handle({ inbox }, { tenant, query }) {
    const { items, ...page } = await inbox.listConversations(tenant, query)
    return { conversations: items, ...page }
  },
})

export const listConversationMessages = operation({
  method: 'GET',
  path: '/inbox/conversations/{id}/messages',
  scope: 'inbox:read',
  operationId: 'listConversationMessages',
  summary: "A conversation's messages",
  description:
    'The newest `limit` messages, oldest first within the page; `offset` pages backwards from the newest end (offset 25 gives the 25 before those). 404 for a missing conversation or one of another account.',
  tags,
  params: ConversationParams,
  query: HistoryQuery,
  response: HistoryPage,
  async handle({ inbox }, { tenant, params, query }) {
    const { items, ...page } = await inbox.conversationMessages(tenant, params.id, query)
    return { messages: items, ...page }
  },
})

export const listMessages = operation({
  method: 'GET',
  path: '/messages',
  scope: 'inbox:read',
  operationId: 'listMessages',
  summary: 'The account-wide message list',
  description:
    'Newest first: created_at descending, then id. The polling alternative to webhooks: created_at is strictly increasing per account in commit order, so polling with created_after = the newest created_at seen never misses a message, even one committed in the same millisecond.',
  tags,
  query: MessagesQuery,
  response: MessagePage,
  async handle({ inbox }, { tenant, query }) {
    const direction = query.direction === 'in' || query.direction === 'inbound' ? 'inbound' : 'outbound'
    const { items, ...page } = await inbox.listMessages(tenant, { ...query, direction })
    return { messages: items, ...page }
  },
})

/** The inbox's routes under /v1. */
export function inboxRoutes(inbox: InboxService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { inbox }, [listConversations, listConversationMessages, listMessages])
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
