import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { ConsentSettings, ConsentSettingsBody } from './consent.schemas.ts'
import type { ConsentService } from './consent.service.ts'

/** The services the consent operations call. */
export interface ConsentServices {
  consent: ConsentService
}

const operation = operationsUsing<ConsentServices>()

export const getConsentSettingsOperation = operation({
  method: 'GET',
  path: '/settings/consent',
  scope: 'settings:read',
  operationId: 'getConsentSettings',
  summary: 'Consent settings',
  description:
    'The keywords of the chat double opt-in and opt-out, the stop confirmation, the landing page consent text and address, and whether an approved opt-in confirmation template exists.',
  tags: ['settings'],
  response: ConsentSettings,
  handle: ({ consent }, { tenant }) => consent.settings(tenant),
})

export const updateConsentSettingsOperation = operation({
  method: 'PATCH',
  path: '/settings/consent',
  scope: 'settings:write',
  operationId: 'updateConsentSettings',
  summary: 'Change the consent settings',
  description:
    'Only given fields change; null restores a default. Keywords are trimmed and deduplicated case-insensitively; a keyword in both lists gives 400 (key keywords_overlap). Changing these settings never changes an opt-in.',
  tags: ['settings'],
  body: ConsentSettingsBody,
  response: ConsentSettings,
  errors: {
    400: 'bad_request (with field): a keyword list or text is empty or too long; keywords_overlap (with keywords): a keyword would both start and stop; media_unavailable: the media library is not available',
    404: 'not_found (key media_not_found): landing_logo.media_id names no media of this account',
  },
  handle: ({ consent }, { tenant, body }) => consent.updateSettings(tenant, body),
})

export function consentRoutes(consent: ConsentService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { consent }, [getConsentSettingsOperation, updateConsentSettingsOperation])
  }
}
