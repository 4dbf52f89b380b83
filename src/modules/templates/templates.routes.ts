import type { FastifyInstance } from 'fastify'
import { mountOperations, operationsUsing } from '../../platform/http/operation.ts'
import { namedPage } from '../../platform/http/pagination.ts'
import { StatisticsQuery } from '../../platform/http/statistics.ts'
import {
  CreateBody,
  CreatedResponse,
  DeleteResponse,
  HeaderMedia,
  ListQuery,
  ListResponse,
  RefreshResponse,
  SendsPage,
  SendsQuery,
  SubmitResponse,
  Template,
  TemplateButton,
  TemplateDetail,
  TemplateId,
  TemplateIssue,
  TemplateResponse,
  TemplateStatistics,
  UpdateBody,
  UpdatedResponse,
  UsagesResponse,
} from './templates.schemas.ts'
import type { TemplatesService } from './templates.service.ts'

const tags = ['templates']
/** The services the templates' operations call. */
export interface TemplatesServices {
  templates: TemplatesService
}

const operation = operationsUsing<TemplatesServices>()

/** The schemas the operations name with Type.Ref (registered with app.addSchema). */
export const templateSchemas = [TemplateButton, HeaderMedia, TemplateIssue, Template, TemplateDetail]

export const listTemplates = operation({
  method: 'GET',
  path: '/templates',
  scope: 'templates:read',
  operationId: 'listTemplates',
  summary: 'List templates, newest first',
  description:
    'Each template with sendable, variables, settable_variables, language, state and provider_status. ' +
    'Paged with limit and offset (newest first: created_at descending, then id).',
  tags,
  query: ListQuery,
  response: ListResponse,
  handle: async ({ templates }, { tenant, query }) => namedPage('templates', await templates.list(tenant, query)),
})

export const createTemplate = operation({
  method: 'POST',
  path: '/templates',
  scope: 'templates:write',
  idempotent: true,
  operationId: 'createTemplate',
  summary: 'Create a template as a draft',
  description:
    'Nothing is sent to the provider. language defaults to the account language. 400 names the field: ' +
    'subject is required for email and refused for chat; buttons and header_media are for chat only; url only ' +
    'for (and required by) URL buttons; optin_confirm templates take no custom buttons. The provider rules a ' +
    'draft still breaks are listed in issues.',
  tags,
  body: CreateBody,
  status: 201,
  response: CreatedResponse,
  errors: {
    400: 'bad_request (with field): subject, buttons or header_media do not fit the channel or purpose; header_media_form: give either media_id or url; header_media_not_image: the media is not an image',
    404: 'not_found (key media_not_found): header_media.media_id names no media of this account',
  },
  async handle({ templates }, { tenant, body }) {
    return { ok: true, template: await templates.create(tenant, body) }
  },
})

export const getTemplate = operation({
  method: 'GET',
  path: '/templates/{id}',
  scope: 'templates:read',
  operationId: 'getTemplate',
  summary: 'One template, with submittable, issues and rejection_reason_text',
  tags,
  params: TemplateId,
  response: TemplateResponse,
  async handle({ templates }, { tenant, params }) {
    return { template: await templates.get(tenant, params.id) }
  },
})

export const updateTemplate = operation({
  method: 'PATCH',
  path: '/templates/{id}',
  scope: 'templates:write',
  operationId: 'updateTemplate',
  summary: 'Change a template; only given fields change',
  description:
    'Any change of name, content, language, buttons or header image of a chat template resets provider_status ' +
    'to null and state to draft: the template must be submitted again. header_media null removes the image. ' +
    'System templates give 400 (key system_template).',
  tags,
  params: TemplateId,
  body: UpdateBody,
  response: UpdatedResponse,
  errors: {
    400: 'bad_request (with field): subject, buttons or header_media do not fit the channel or purpose; system_template: system templates cannot be changed; header_media_form: give either media_id or url; header_media_not_image: the media is not an image',
    404: 'not_found (key media_not_found): header_media.media_id names no media of this account',
  },
  async handle({ templates }, { tenant, params, body }) {
    const result = await templates.update(tenant, params.id, body)
    return { ok: true, template: result.template, provider_status_reset: result.providerStatusReset }
  },
})

export const submitTemplate = operation({
  method: 'POST',
  path: '/templates/{id}/submit',
  scope: 'templates:submit',
  idempotent: true,
  operationId: 'submitTemplate',
  summary: 'Submit a chat template to the provider for approval',
  description:
    'templates:write is not enough. The provider identifies the template by (provider_name, language); purpose ' +
    'maps to the category (optin_confirm and utility: UTILITY; marketing: MARKETING). 200 with the template in ' +
    'its new state: pending, or approved/rejected when the provider decides at once. 200 with already: true and ' +
    'a notice (German alias hinweis) when it is already pending or approved at the provider; nothing is sent. ' +
    '400 bad_request with the reasons in issues when the deterministic check fails (key ' +
    'template_not_submittable) or no chat number is connected (key chat_not_connected); nothing is submitted. ' +
    '502 provider_unreachable when the submission did not reach the provider or the provider answered with an ' +
    'error; the reason is in the message and the template is unchanged.',
  tags,
  params: TemplateId,
  response: SubmitResponse,
  errors: {
    400: 'system_template: system templates are not submitted; template_not_chat: only chat templates are submitted; template_not_submittable (with issues): the template check found problems; chat_not_connected: no chat number is connected',
    502: 'provider_unreachable: the submission did not reach the provider; nothing was submitted',
  },
  germanAliases: ['notice'],
  async handle({ templates }, { tenant, params }) {
    return { ok: true, ...(await templates.submit(tenant, params.id)) }
  },
})

export const deleteTemplate = operation({
  method: 'DELETE',
  path: '/templates/{id}',
  scope: 'templates:delete',
  operationId: 'deleteTemplate',
  summary: 'Delete a template',
  description:
    '409 template_in_use (with used_by) while the template is attached to a follow-up step or an automation. ' +
    'A template known to the provider is removed there too; when that fails, the local delete happens anyway ' +
    'and notice (German alias hinweis) gives the reason. System templates give 400 (key system_template). ' +
    'templates:write is not enough.',
  tags,
  params: TemplateId,
  response: DeleteResponse,
  errors: {
    400: 'system_template: system templates cannot be deleted',
    409: 'template_in_use (with uses): an automation, follow-up or newsletter still uses the template',
  },
  germanAliases: ['notice'],
  async handle({ templates }, { tenant, params }) {
    const result = await templates.delete(tenant, params.id)
    return { ok: true, deleted: true, removed_at_provider: result.removedAtProvider, notice: result.notice }
  },
})

export const duplicateTemplate = operation({
  method: 'POST',
  path: '/templates/{id}/duplicate',
  scope: 'templates:write',
  operationId: 'duplicateTemplate',
  summary: 'Duplicate a template as a new draft',
  description:
    'Same content, channel, purpose, language, buttons and header image, named "<name> copy"; a draft that is not submitted. System templates give 400 (key system_template).',
  tags,
  params: TemplateId,
  status: 201,
  response: CreatedResponse,
  errors: { 400: 'system_template: system templates cannot be copied' },
  async handle({ templates }, { tenant, params }) {
    return { ok: true, template: await templates.duplicate(tenant, params.id) }
  },
})

export const refreshTemplate = operation({
  method: 'POST',
  path: '/templates/{id}/refresh',
  scope: 'templates:write',
  operationId: 'refreshTemplate',
  summary: "Read a template's status at the provider now",
  description:
    "Instead of waiting for the provider's webhook or the next poll: the status the provider reports is recorded (the state moves as it would by the webhook). 400 template_not_submitted for a template never submitted, 409 chat_not_connected without a chat number, 409 template_not_at_provider when the provider does not know it, 502 when the provider is not reached.",
  tags,
  params: TemplateId,
  response: RefreshResponse,
  errors: {
    400: 'template_not_submitted: the template was never submitted to the provider',
    409: 'chat_not_connected: no chat number is connected; template_not_at_provider: the provider does not know the template (any more)',
    502: 'provider_unreachable: the provider was not reached',
  },
  handle: ({ templates }, { tenant, params }) => templates.refreshStatus(tenant, params.id),
})

export const listTemplateSends = operation({
  method: 'GET',
  path: '/templates/{id}/sends',
  scope: 'templates:read',
  operationId: 'listTemplateSends',
  summary: "A template's sends",
  description:
    'Its send records newest first, optionally by status or origin (api, newsletter, followup, automation): the contact, the status with its reason and the times.',
  tags,
  params: TemplateId,
  query: SendsQuery,
  response: SendsPage,
  handle: async ({ templates }, { tenant, params, query }) =>
    namedPage('sends', await templates.sends(tenant, params.id, query)),
})

export const getTemplateStatistics = operation({
  method: 'GET',
  path: '/templates/{id}/statistics',
  scope: 'stats:read',
  operationId: 'getTemplateStatistics',
  summary: "A template's statistics",
  description:
    'Its sends in the range (7d, 30d, 90d: 24-hour periods up to now; all) by the furthest status they reached (a read send counts as sent, delivered and read), delivery and read rate, and by origin (api, newsletter, followup, automation). Scope stats:read.',
  tags,
  params: TemplateId,
  query: StatisticsQuery,
  response: TemplateStatistics,
  handle: ({ templates }, { tenant, params, query }) => templates.statistics(tenant, params.id, query.range),
})

export const listTemplateUsages = operation({
  method: 'GET',
  path: '/templates/{id}/usages',
  scope: 'templates:read',
  operationId: 'listTemplateUsages',
  summary: 'Where a template is used',
  description:
    'The follow-up steps and automation steps that send it; while any does, DELETE /templates/{id} is a 409 (template_in_use).',
  tags,
  params: TemplateId,
  response: UsagesResponse,
  handle: ({ templates }, { tenant, params }) => templates.usages(tenant, params.id),
})

export const templateOperations = [
  listTemplates,
  createTemplate,
  getTemplate,
  updateTemplate,
  submitTemplate,
  deleteTemplate,
  duplicateTemplate,
  refreshTemplate,
  listTemplateSends,
  getTemplateStatistics,
  listTemplateUsages,
]

export function templatesRoutes(service: TemplatesService) {
  return async (app: FastifyInstance): Promise<void> => {
    for (const schema of templateSchemas) app.addSchema(schema)
    mountOperations(app, { templates: service }, templateOperations)
  }
}
