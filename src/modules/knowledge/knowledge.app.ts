import type { FastifyInstance } from 'fastify'
import { type Static, Type } from 'typebox'
import type { Db } from '../../platform/db/client.ts'
import { badRequest, notFound } from '../../platform/http/errors.ts'
import { paginationQuery } from '../../platform/http/pagination.ts'
import type { AiService } from './knowledge.ai.ts'
import { passagesOf } from './knowledge.repository.ts'
import { PromptPassage } from './knowledge.schemas.ts'

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

export const AskBody = Type.Object(
  {
    question: Type.String({
      minLength: 1,
      maxLength: 2000,
      description: 'the test question, as a customer would write it',
    }),
  },
  { additionalProperties: false },
)
export const AskResponse = Type.Object({
  outcome: Type.Union([Type.Literal('answer'), Type.Literal('declined')], {
    description: 'answer: the AI would send `answer`; declined: it would send nothing and hand over to a person',
  }),
  answer: Type.Union([Type.String(), Type.Null()], { description: 'the reply the AI would send' }),
  reason: Type.Union([Type.String(), Type.Null()], {
    description:
      'why it declines: no_passages (nothing in the documents touches the question; no model was asked), not_answered (the model said the passages do not answer it), unparseable_answer, answer_not_grounded (no passage cited), answer_too_long',
  }),
  detail: Type.Union([Type.String(), Type.Null()], { description: "the model's own words on why it declined" }),
  passages: Type.Array(PromptPassage, { description: 'the passages the prompt held, best first; `used`: cited' }),
  model: Type.Union([Type.String(), Type.Null()]),
})

/**
 * The web app's view of a knowledge document's extracted passages (GET /app/knowledge/documents/{id}/passages),
 * which the REST API does not offer; the same scope as the other knowledge routes (`knowledge:write`).
 */
export function knowledgeAppRoutes(db: Db, ai: AiService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Body: Static<typeof AskBody> }>(
      '/knowledge/ask',
      {
        config: { scope: 'knowledge:write' },
        schema: {
          operationId: 'askKnowledge',
          summary: 'A test question answered from the knowledge, as an AI reply would be',
          description:
            "The question goes through exactly what an inbound chat text goes through when AI replies are on: the best five passages (none: declined with reason no_passages, no model is asked), the same prompt to the configured model, the same strict reading of its answer. Nothing is sent, stored or marked for a person, and it works while AI replies are switched off. 409 ai_unavailable when the installation has no AI endpoint or model (key ai_not_configured or ai_model_missing); 502 ai_call_failed when the call fails (key ai_timeout after HEROLD_AI_TIMEOUT_MS, ai_unreachable, ai_dns_failed, ai_status, ai_not_json, ai_no_message), which is logged but not recorded as the account's last_failure. Scope knowledge:write, as every knowledge route (members, admins, owners).",
          tags: ['app'],
          body: AskBody,
          response: { 200: AskResponse },
        },
      },
      async (request) => {
        const question = request.body.question.trim()
        if (question === '') throw badRequest('question must not be empty', 'question_empty')
        return ai.ask(request.tenant.accountId, question)
      },
    )

    app.get<{ Params: Static<typeof Params>; Querystring: Static<typeof Query> }>(
      '/knowledge/documents/:id/passages',
      {
        config: { scope: 'knowledge:write' },
        schema: {
          operationId: 'listKnowledgeDocumentPassages',
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
