import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import { requireScope } from '../../platform/auth/authenticate.ts'
import type { Db } from '../../platform/db/client.ts'
import { notFound } from '../../platform/http/errors.ts'
import { paginationQuery } from '../../platform/http/pagination.ts'
import { passagesOf } from './knowledge.repository.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const Params = Type.Object({ id: Type.String({ description: 'document id (uuid)' }) })
const Query = Type.Object(paginationQuery({ maxLimit: 200, defaultLimit: 50, maxOffset: 100_000 }))
export const PassagesResponse = Type.Object({
  passages: Type.Array(
    Type.Object({
      position: Type.Integer({ description: 'from 1' }),
      page: Type.Union([Type.Integer(), Type.Null()], { description: 'the PDF page it starts on' }),
      heading: Type.String(),
      text: Type.String(),
    }),
  ),
  has_more: Type.Boolean(),
  limit: Type.Integer(),
  offset: Type.Integer(),
})

/**
 * The web app's view of a knowledge document's extracted passages (GET /app/knowledge/documents/{id}/passages),
 * which the REST API does not offer; the same scope as the other knowledge routes (`knowledge:write`).
 */
export function knowledgeAppRoutes(db: Db) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get<{ Params: Static<typeof Params>; Querystring: Static<typeof Query> }>(
      '/knowledge/documents/:id/passages',
      {
        schema: {
          summary: "A knowledge document's passages, in order",
          description:
            'Each passage with its position, page (PDF) and heading, as the search indexes them; paginated (limit 1–200, default 50). Another account’s document is a 404.',
          tags: ['app'],
          params: Params,
          querystring: Query,
          response: { 200: PassagesResponse },
        },
      },
      async (request) => {
        requireScope(request.tenant, 'knowledge:write')
        const found = UUID.test(request.params.id)
          ? await passagesOf(db, request.tenant.accountId, request.params.id, request.query)
          : undefined
        if (!found) throw notFound('document')
        const { limit, offset } = request.query
        return { passages: found.slice(0, limit), has_more: found.length > limit, limit, offset }
      },
    )
  }
}
