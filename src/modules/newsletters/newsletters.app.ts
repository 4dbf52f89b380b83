import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import type { NewslettersServices } from './newsletters.routes.ts'
import {
  ContentBody,
  EstimateBody,
  EstimateResponse,
  NewsletterParams,
  NewsletterResponse,
} from './newsletters.schemas.ts'

const tags = ['app']
const operation = operationsUsing<NewslettersServices>()

export const estimateNewsletterRecipients = operation({
  method: 'POST',
  path: '/newsletters/estimate',
  mount: 'app',
  scope: 'newsletters:read',
  operationId: 'estimateNewsletterRecipients',
  summary: 'Estimate the recipients of a segment before saving it',
  description:
    'How many contacts with a confirmed chat opt-in the segment selects now (null: every confirmed contact). Tags no contact carries are a 400 (key segment_unknown_tags), as on PATCH /newsletters/{id}. Nothing is stored. Scope newsletters:read.',
  tags,
  body: EstimateBody,
  response: EstimateResponse,
  async handle({ newsletters }, { tenant, body }) {
    return newsletters.estimate(tenant, body.segment ?? null)
  },
})

export const updateNewsletterContent = operation({
  method: 'PATCH',
  path: '/newsletters/{id}/content',
  mount: 'app',
  scope: 'newsletters:write',
  operationId: 'updateNewsletterContent',
  summary: "Change a draft's name, subject or text",
  description:
    'At least one of name, subject and content. Only a draft (400 newsletter_not_draft; a scheduled one: cancel its schedule first). The REST API changes only the call to action, segment and header image (PATCH /v1/newsletters/{id}). Scope newsletters:write.',
  tags,
  params: NewsletterParams,
  body: ContentBody,
  response: NewsletterResponse,
  async handle({ newsletters }, { tenant, params, body }) {
    return { newsletter: await newsletters.updateContent(tenant, params.id, body) }
  },
})

/** The web app's newsletter functions under /app: the recipient estimate of a segment while it is being edited. */
export function newsletterAppRoutes(services: NewslettersServices) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, services, [estimateNewsletterRecipients, updateNewsletterContent])
  }
}
