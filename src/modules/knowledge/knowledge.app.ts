import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { badRequest } from '../../platform/http/errors.ts'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { paginationQuery } from '../../platform/http/pagination.ts'
import type { KnowledgeServices } from './knowledge.routes.ts'
import { PromptPassage } from './knowledge.schemas.ts'

const operation = operationsUsing<KnowledgeServices>()

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

export const askKnowledge = operation({
  method: 'POST',
  path: '/knowledge/ask',
  mount: 'app',
  scope: 'knowledge:write',
  operationId: 'askKnowledge',
  summary: 'A test question answered from the knowledge, as an AI reply would be',
  description:
    "The question goes through exactly what an inbound chat text goes through when AI replies are on: the best five passages (none: declined with reason no_passages, no model is asked), the same prompt to the configured model, the same strict reading of its answer. Nothing is sent, stored or marked for a person, and it works while AI replies are switched off. 409 ai_unavailable when the installation has no AI endpoint or model (key ai_not_configured or ai_model_missing); 502 ai_call_failed when the call fails (key ai_timeout after HEROLD_AI_TIMEOUT_MS, ai_unreachable, ai_dns_failed, ai_status, ai_not_json, ai_no_message), which is logged but not recorded as the account's last_failure. Scope knowledge:write, as every knowledge route (members, admins, owners).",
  tags: ['app'],
  body: AskBody,
  response: AskResponse,
  async handle({ ai }, { tenant, body }) {
    const question = body.question.trim()
    if (question === '') throw badRequest('question must not be empty', 'question_empty')
    return ai.ask(tenant.accountId, question)
  },
})

/**
 * The web app's view of a knowledge document's extracted passages, which the REST API does not offer; the same scope
 * as the other knowledge routes (`knowledge:write`).
 */
export const listKnowledgeDocumentPassages = operation({
  method: 'GET',
  path: '/knowledge/documents/{id}/passages',
  mount: 'app',
  scope: 'knowledge:write',
  operationId: 'listKnowledgeDocumentPassages',
  summary: "A knowledge document's passages, in order",
  description:
    'Each passage with its position, page (PDF) and heading, as the search indexes them; paginated (limit 1–200, default 50). Another account’s document is a 404.',
  tags: ['app'],
  params: Params,
  query: Query,
  response: PassagesResponse,
  async handle({ knowledge }, { tenant, params, query }) {
    return knowledge.passages(tenant, params.id, query)
  },
})

/** The web app's knowledge functions under /app: a document's passages and a test question to the AI. */
export function knowledgeAppRoutes(services: KnowledgeServices) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, services, [askKnowledge, listKnowledgeDocumentPassages])
  }
}
