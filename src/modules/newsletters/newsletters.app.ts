import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import {
  ContentBody,
  EstimateBody,
  EstimateResponse,
  NewsletterParams,
  NewsletterResponse,
} from './newsletters.schemas.ts'
import type { NewslettersService } from './newsletters.service.ts'

const tags = ['app']

/** The web app's newsletter functions under /app: the recipient estimate of a segment while it is being edited. */
export function newsletterAppRoutes(service: NewslettersService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Body: Static<typeof EstimateBody> }>(
      '/newsletters/estimate',
      {
        config: { scope: 'newsletters:read' },
        schema: {
          operationId: 'estimateNewsletterRecipients',
          summary: 'Estimate the recipients of a segment before saving it',
          description:
            'How many contacts with a confirmed chat opt-in the segment selects now (null: every confirmed contact). Tags no contact carries are a 400 (key segment_unknown_tags), as on PATCH /newsletters/{id}. Nothing is stored. Scope newsletters:read.',
          tags,
          body: EstimateBody,
          response: { 200: EstimateResponse },
        },
      },
      async (request) => {
        return service.estimate(request.tenant, request.body.segment ?? null)
      },
    )
    app.patch<{ Params: Static<typeof NewsletterParams>; Body: Static<typeof ContentBody> }>(
      '/newsletters/:id/content',
      {
        config: { scope: 'newsletters:write' },
        schema: {
          operationId: 'updateNewsletterContent',
          summary: "Change a draft's name, subject or text",
          description:
            'At least one of name, subject and content. Only a draft (400 newsletter_not_draft; a scheduled one: cancel its schedule first). The REST API changes only the call to action, segment and header image (PATCH /v1/newsletters/{id}). Scope newsletters:write.',
          tags,
          params: NewsletterParams,
          body: ContentBody,
          response: { 200: NewsletterResponse },
        },
      },
      async (request) => {
        return { newsletter: await service.updateContent(request.tenant, request.params.id, request.body) }
      },
    )
  }
}
