import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { EstimateBody, EstimateResponse } from './newsletters.schemas.ts'
import type { NewslettersService } from './newsletters.service.ts'

const tags = ['app']

/** The web app's newsletter functions under /app: the recipient estimate of a segment while it is being edited. */
export function newsletterAppRoutes(service: NewslettersService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Body: Static<typeof EstimateBody> }>(
      '/newsletters/estimate',
      {
        schema: {
          summary: 'Estimate the recipients of a segment before saving it',
          description:
            'How many contacts with a confirmed chat opt-in the segment selects now (null: every confirmed contact). Tags no contact carries are a 400 (key segment_unknown_tags), as on PATCH /newsletters/{id}. Nothing is stored. Scope newsletters:read.',
          tags,
          body: EstimateBody,
          response: { 200: EstimateResponse },
        },
      },
      async (request) => {
        requireScope(request.tenant, 'newsletters:read')
        return service.estimate(request.tenant, request.body.segment ?? null)
      },
    )
  }
}
