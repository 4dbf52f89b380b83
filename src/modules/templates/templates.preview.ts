import type { FastifyInstance } from 'fastify'
import type { Static } from 'typebox'
import { PreviewBody, PreviewResponse, TemplateId } from './templates.schemas.ts'
import type { TemplatesService } from './templates.service.ts'

/** The web app's template preview under /app: the texts one contact would get, nothing sent. */
export function templatePreviewRoutes(service: TemplatesService) {
  return async (app: FastifyInstance): Promise<void> => {
    app.post<{ Params: Static<typeof TemplateId>; Body: Static<typeof PreviewBody> }>(
      '/templates/:id/preview',
      {
        config: { scope: ['templates:read', 'contacts:read'] },
        schema: {
          operationId: 'previewTemplate',
          summary: 'Preview a template for one contact',
          description:
            "The content and URL buttons as this contact would get them: contact variables from the contact, the others from `variables` (checked as POST /messages checks them: 422 invalid_variables for an unknown name, a contact variable or a bad value); a variable without a value is listed in missing_variables and text is null. Scopes templates:read and contacts:read. Another account's template or contact is a 404. Nothing is sent.",
          tags: ['app'],
          params: TemplateId,
          body: PreviewBody,
          response: { 200: PreviewResponse },
        },
      },
      async (request) => {
        return service.preview(request.tenant, request.params.id, request.body.contact_id, request.body.variables ?? {})
      },
    )
  }
}
