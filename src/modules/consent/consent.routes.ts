import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import { errorResponses } from '../../platform/http/errors.ts'
import { ConsentSettings, ConsentSettingsBody } from './consent.schemas.ts'
import type { ConsentService } from './consent.service.ts'

export function consentRoutes(service: ConsentService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get(
      '/settings/consent',
      {
        config: { scope: 'settings:read' },
        schema: {
          operationId: 'getConsentSettings',
          summary: 'Consent settings',
          description:
            'The keywords of the chat double opt-in and opt-out, the stop confirmation, the landing page consent text and address, and whether an approved opt-in confirmation template exists.',
          tags: ['settings'],
          response: { 200: ConsentSettings },
        },
      },
      async (request) => service.settings(request.tenant),
    )

    app.patch<{ Body: Static<typeof ConsentSettingsBody> }>(
      '/settings/consent',
      {
        config: { scope: 'settings:write' },
        schema: {
          operationId: 'updateConsentSettings',
          summary: 'Change the consent settings',
          description:
            'Only given fields change; null restores a default. Keywords are trimmed and deduplicated case-insensitively; a keyword in both lists gives 400 (key keywords_overlap). Changing these settings never changes an opt-in.',
          tags: ['settings'],
          body: ConsentSettingsBody,
          response: {
            ...errorResponses({
              400: 'bad_request (with field): a keyword list or text is empty or too long; keywords_overlap (with keywords): a keyword would both start and stop; media_unavailable: the media library is not available',
              404: 'not_found (key media_not_found): landing_logo.media_id names no media of this account',
            }),
            200: ConsentSettings,
          },
        },
      },
      async (request) => service.updateSettings(request.tenant, request.body),
    )
  }
}
