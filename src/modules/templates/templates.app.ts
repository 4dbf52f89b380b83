import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import type { TemplatesServices } from './templates.routes.ts'
import { CheckBody, CheckResponse, PreviewBody, PreviewResponse, TemplateId } from './templates.schemas.ts'
import type { TemplatesService } from './templates.service.ts'

const operation = operationsUsing<TemplatesServices>()

/** The web app's live template check: the draft as typed, nothing stored. */
export const checkTemplate = operation({
  method: 'POST',
  path: '/templates/check',
  mount: 'app',
  scope: 'templates:read',
  operationId: 'checkTemplate',
  summary: "The deterministic check's issues of a template as typed, without saving it",
  description:
    'Needs templates:read. The same rules as issues of GET /v1/templates/{id} (templates.check.ts): name, ' +
    'language, content length, variables and their placement, buttons, header image, and whether another chat ' +
    'template of the account has the same provider name in that language. Changes nothing.',
  tags: ['app'],
  body: CheckBody,
  response: CheckResponse,
  handle: ({ templates }, { tenant, body }) => templates.checkDraft(tenant, body),
})

/** The web app's template preview: the texts one contact would get, nothing sent. */
export const previewTemplate = operation({
  method: 'POST',
  path: '/templates/{id}/preview',
  mount: 'app',
  scope: ['templates:read', 'contacts:read'],
  operationId: 'previewTemplate',
  summary: 'Preview a template for one contact',
  description:
    "The content and URL buttons as this contact would get them: contact variables from the contact, the others from `variables` (checked as POST /messages checks them: 422 invalid_variables for an unknown name, a contact variable or a bad value); a variable without a value is listed in missing_variables and text is null. Scopes templates:read and contacts:read. Another account's template or contact is a 404. Nothing is sent.",
  tags: ['app'],
  params: TemplateId,
  body: PreviewBody,
  response: PreviewResponse,
  handle: ({ templates }, { tenant, params, body }) =>
    templates.preview(tenant, params.id, body.contact_id, body.variables ?? {}),
})

/** The templates' web-app routes under /app. */
export function templatesAppRoutes(templates: TemplatesService) {
  return async (app: FastifyInstance): Promise<void> => {
    mountOperations(app, { templates }, [checkTemplate, previewTemplate])
  }
}
