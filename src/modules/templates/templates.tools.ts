import { Type } from 'typebox'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { StatisticsQuery } from '../../platform/http/statistics.ts'
import { ContactId, paging, StatisticsRange, Uuid } from '../../platform/tools/common.ts'
import { restRule, type ToolContext, toolsUsing } from '../../platform/tools/tool.ts'
import { checkDraft, CheckBody as TemplateCheckBody, CheckResponse as TemplateCheckResponse } from './templates.app.ts'
import {
  CreatedResponse,
  DeleteResponse,
  HeaderMedia,
  ListResponse,
  PreviewResponse,
  RefreshResponse,
  SendsPage,
  SubmitResponse,
  Template,
  TemplateButton,
  CreateBody as TemplateCreateBody,
  TemplateDetail,
  TemplateIssue,
  ListQuery as TemplateListQuery,
  PreviewBody as TemplatePreviewBody,
  TemplateResponse,
  SendsQuery as TemplateSendsQuery,
  TemplateStatistics,
  UpdateBody as TemplateUpdateBody,
  UpdatedResponse,
  UsagesResponse,
} from './templates.schemas.ts'
import type { TemplatesService } from './templates.service.ts'

/** The module services these tools call (the tool server hands them in). */
interface Services {
  templates: TemplatesService
}

// the schemas its routes register (app.addSchema), named with Type.Ref in the outputs
const defineTool = toolsUsing<Services>([TemplateButton, HeaderMedia, TemplateIssue, Template, TemplateDetail])

const TemplateId = Uuid('the template id, from list_templates')

const db = (ctx: ToolContext<Services>) => ctx.platform.database.orm

export const listTemplates = defineTool({
  name: 'list_templates',
  title: 'List templates',
  description:
    'Message templates with their state, whether they can be sent now (sendable), their variables and the variables a caller may set (settable_variables).',
  scope: 'templates:read',
  rest: 'GET /templates',
  output: ListResponse,
  kind: 'read',
  input: Type.Object({}),
  async run(ctx) {
    const { items, ...page } = await ctx.services.templates.list(ctx.tenant, { limit: 100, offset: 0 })
    return { templates: items, ...page }
  },
})

export const createTemplate = defineTool({
  name: 'create_template',
  title: 'Create a template',
  description:
    'Create a chat template as a draft (nothing goes to the provider). Variables in double curly braces, such as {{name}} or {{code}}. The answer lists issues that would stop a submission.',
  scope: 'templates:write',
  rest: 'POST /templates',
  output: CreatedResponse,
  kind: 'write',
  input: Type.Object({
    name: Type.String({ minLength: 1, maxLength: 120 }),
    text: Type.String({ minLength: 1, maxLength: 1024, description: 'the message text' }),
    language: Type.Optional(
      Type.String({ minLength: 2, maxLength: 10, description: 'such as de or en_US; default the account language' }),
    ),
  }),
  async run(ctx, args) {
    const body = restRule(
      TemplateCreateBody,
      { name: args.name, content: args.text, language: args.language, channel: 'chat' },
      'body',
    )
    return { ok: true, template: await ctx.services.templates.create(ctx.tenant, body) }
  },
})

export const filterTemplates = defineTool({
  name: 'filter_templates',
  title: 'Find templates',
  description:
    'Templates newest first, filtered by channel (chat, email), state (draft, pending, approved, rejected, paused, disabled) or sendable, with paging.',
  scope: 'templates:read',
  rest: 'GET /templates',
  output: ListResponse,
  kind: 'read',
  input: Type.Object({
    channel: Type.Optional(Type.Union([Type.Literal('chat'), Type.Literal('email')])),
    state: Type.Optional(
      Type.Union(['draft', 'pending', 'approved', 'rejected', 'paused', 'disabled'].map((s) => Type.Literal(s))),
    ),
    sendable: Type.Optional(Type.Boolean({ description: 'true: only templates send_template can send now' })),
    ...paging(200, 100),
  }),
  async run(ctx, args) {
    const query = restRule(TemplateListQuery, args, 'query')
    const { items, ...page } = await ctx.services.templates.list(ctx.tenant, query)
    return { templates: items, ...page }
  },
})

export const getTemplate = defineTool({
  name: 'get_template',
  title: 'Get a template',
  description:
    'One template with its state, provider status, whether it can be submitted (submittable) and the issues that stop it, in English.',
  scope: 'templates:read',
  rest: 'GET /templates/{id}',
  output: TemplateResponse,
  kind: 'read',
  input: Type.Object({ template_id: TemplateId }),
  async run(ctx, args) {
    return { template: await ctx.services.templates.get(ctx.tenant, args.template_id) }
  },
})

export const createTemplateWithOptions = defineTool({
  name: 'create_template_with_options',
  title: 'Create a template (all options)',
  description:
    'Create a draft template with every option of the API: channel chat or email (email needs a subject), purpose (marketing, utility, optin_confirm), language, up to 20 buttons (QUICK_REPLY or URL, text at most 25 characters) and a header image. Nothing goes to the provider.',
  scope: 'templates:write',
  rest: 'POST /templates',
  output: CreatedResponse,
  kind: 'write',
  input: Type.Object(TemplateCreateBody.properties),
  async run(ctx, args) {
    const body = restRule(TemplateCreateBody, args, 'body')
    return { ok: true, template: await ctx.services.templates.create(ctx.tenant, body) }
  },
})

export const updateTemplate = defineTool({
  name: 'update_template',
  title: 'Change a template',
  description:
    'Change a template’s name, content, subject, language, buttons or header image; only given fields change. Any content change of a chat template resets its provider status: it must be submitted again.',
  scope: 'templates:write',
  rest: 'PATCH /templates/{id}',
  output: UpdatedResponse,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ template_id: TemplateId, ...TemplateUpdateBody.properties }),
  async run(ctx, args) {
    const { template_id, ...change } = args
    const body = restRule(TemplateUpdateBody, change, 'body')
    const result = await ctx.services.templates.update(ctx.tenant, template_id, body)
    return { ok: true, template: result.template, provider_status_reset: result.providerStatusReset }
  },
})

export const submitTemplate = defineTool({
  name: 'submit_template',
  title: 'Submit a template for approval',
  description:
    'Submit a chat template to WhatsApp for approval. The deterministic check runs first: a template with issues is not submitted (400 with the reasons). Already at the provider: already true.',
  scope: 'templates:submit',
  rest: 'POST /templates/{id}/submit',
  output: SubmitResponse,
  kind: 'write',
  idempotent: true,
  openWorld: true,
  input: Type.Object({ template_id: TemplateId }),
  async preview(ctx, args) {
    const template = await ctx.services.templates.get(ctx.tenant, args.template_id)
    return {
      action: 'submit a template to the provider (WhatsApp) for approval',
      template: {
        id: template.id,
        name: template.name,
        language: template.language,
        purpose: template.purpose,
        content: template.content,
        state: template.state,
        provider_status: template.provider_status,
      },
      submittable: template.submittable,
      issues: template.issues,
    }
  },
  async run(ctx, args) {
    return { ok: true, ...(await ctx.services.templates.submit(ctx.tenant, args.template_id)) }
  },
})

export const deleteTemplate = defineTool({
  name: 'delete_template',
  title: 'Delete a template',
  description:
    'Delete a template, also at the provider when it is known there. Refused (template_in_use) while a follow-up step or an automation uses it.',
  scope: 'templates:delete',
  rest: 'DELETE /templates/{id}',
  output: DeleteResponse,
  kind: 'destructive',
  openWorld: true,
  input: Type.Object({ template_id: TemplateId }),
  async preview(ctx, args) {
    const template = await ctx.services.templates.get(ctx.tenant, args.template_id)
    return {
      action: 'delete a template (also at the provider)',
      template: {
        id: template.id,
        name: template.name,
        language: template.language,
        state: template.state,
        provider_status: template.provider_status,
      },
    }
  },
  async run(ctx, args) {
    const result = await ctx.services.templates.delete(ctx.tenant, args.template_id)
    return { ok: true, deleted: true, removed_at_provider: result.removedAtProvider, notice: result.notice }
  },
})

export const duplicateTemplate = defineTool({
  name: 'duplicate_template',
  title: 'Duplicate a template',
  description:
    'Copy a template into a new draft named "<name> copy" with the same content, channel, purpose, language, buttons and header image; the copy is not submitted (submit_template does that). System templates cannot be copied.',
  scope: 'templates:write',
  rest: 'POST /templates/{id}/duplicate',
  output: CreatedResponse,
  kind: 'write',
  input: Type.Object({ template_id: TemplateId }),
  async run(ctx, args) {
    return { ok: true, template: await ctx.services.templates.duplicate(ctx.tenant, args.template_id) }
  },
})

export const previewTemplate = defineTool({
  name: 'preview_template',
  title: 'Preview a template for a contact',
  description:
    'The template’s text and URL buttons as one contact would get them: contact variables ({{name}}, {{email}}, …) from the contact, the others from variables (checked as send_template checks them). Variables without a value are listed and text is null. Needs contacts:read as well. Sends nothing.',
  scope: 'templates:read',
  rest: 'POST /app/templates/{id}/preview',
  output: PreviewResponse,
  kind: 'read',
  input: Type.Object({
    template_id: TemplateId,
    contact_id: ContactId,
    variables: TemplatePreviewBody.properties.variables,
  }),
  async run(ctx, args) {
    requireScope(ctx.tenant, 'contacts:read')
    const { template_id, ...body } = args
    const checked = restRule(TemplatePreviewBody, body, 'body')
    return await ctx.services.templates.preview(ctx.tenant, template_id, checked.contact_id, checked.variables ?? {})
  },
})

export const refreshTemplateStatus = defineTool({
  name: 'refresh_template_status',
  title: 'Refresh a template’s provider status',
  description:
    'Ask the provider (WhatsApp) for a submitted template’s status now instead of waiting for its webhook or the next poll, and record it: approved, rejected (with the reason), pending, paused, disabled. Answers whether it changed.',
  scope: 'templates:write',
  rest: 'POST /templates/{id}/refresh',
  output: RefreshResponse,
  kind: 'write',
  idempotent: true,
  openWorld: true,
  input: Type.Object({ template_id: TemplateId }),
  async run(ctx, args) {
    return await ctx.services.templates.refreshStatus(ctx.tenant, args.template_id)
  },
})

export const listTemplateSends = defineTool({
  name: 'list_template_sends',
  title: 'List a template’s sends',
  description:
    'The send records of one template, newest first: contact, status (queued, sending, sent, delivered, read, failed, skipped) with its reason, origin (api, newsletter, followup, automation) and the times. Filter by status or origin; page with limit and offset.',
  scope: 'templates:read',
  rest: 'GET /templates/{id}/sends',
  output: SendsPage,
  kind: 'read',
  input: Type.Object({
    template_id: TemplateId,
    status: TemplateSendsQuery.properties.status,
    origin: TemplateSendsQuery.properties.origin,
    ...paging(100, 25),
  }),
  async run(ctx, args) {
    const { template_id, ...rest } = args
    const query = restRule(TemplateSendsQuery, rest, 'query')
    const { items, ...page } = await ctx.services.templates.sends(ctx.tenant, template_id, query)
    return { sends: items, ...page }
  },
})

export const listTemplateUsages = defineTool({
  name: 'list_template_usages',
  title: 'Where a template is used',
  description:
    'The follow-up steps and automations that send a template; while any does, delete_template is refused. Check it before changing or deleting a template.',
  scope: 'templates:read',
  rest: 'GET /templates/{id}/usages',
  output: UsagesResponse,
  kind: 'read',
  input: Type.Object({ template_id: TemplateId }),
  async run(ctx, args) {
    return await ctx.services.templates.usages(ctx.tenant, args.template_id)
  },
})

export const getTemplateStatistics = defineTool({
  name: 'get_template_statistics',
  title: 'Statistics of a template',
  description:
    'How one template performs in the last 7, 30 or 90 days (or all): its sends by the furthest status reached (sent, delivered, read, failed, skipped, still queued), delivery and read rate, and how many came from the API, newsletters, follow-ups and automations.',
  scope: 'stats:read',
  rest: 'GET /templates/{id}/statistics',
  output: TemplateStatistics,
  kind: 'read',
  input: Type.Object({ template_id: Uuid('the template id, from list_templates'), range: StatisticsRange }),
  async run(ctx, args) {
    const { range } = restRule(StatisticsQuery, { range: args.range }, 'query')
    return await ctx.services.templates.statistics(ctx.tenant, args.template_id, range)
  },
})

export const checkTemplateTool = defineTool({
  name: 'check_template',
  title: 'Check a template draft',
  description:
    'The deterministic check of a template as written, without saving it: every rule it breaks (name, language, content length, variables and their placement, buttons, header image, a provider name another chat template of the account already has), its provider name and variables. An empty issues list means it can be submitted.',
  scope: 'templates:read',
  rest: 'POST /app/templates/check',
  output: TemplateCheckResponse,
  kind: 'read',
  input: Type.Object({
    template_id: Type.Optional(Uuid('the template being changed (its own name is no clash)')),
    name: Type.String({ maxLength: 1000 }),
    content: Type.String({ maxLength: 40000 }),
    channel: Type.Optional(Type.Union([Type.Literal('chat'), Type.Literal('email')])),
    subject: Type.Optional(Type.Union([Type.String({ maxLength: 1000 }), Type.Null()])),
    purpose: Type.Optional(
      Type.Union([Type.Literal('marketing'), Type.Literal('utility'), Type.Literal('optin_confirm')]),
    ),
    language: Type.Optional(Type.String({ maxLength: 20, description: 'default the account language' })),
    buttons: Type.Optional(
      Type.Array(
        Type.Object(
          {
            type: Type.Union([Type.Literal('QUICK_REPLY'), Type.Literal('URL')]),
            text: Type.String({ maxLength: 200 }),
            url: Type.Optional(Type.Union([Type.String({ maxLength: 4000 }), Type.Null()])),
          },
          { additionalProperties: false },
        ),
        { maxItems: 20 },
      ),
    ),
  }),
  async run(ctx, args) {
    const { template_id, ...draft } = args
    const body = restRule(TemplateCheckBody, { ...draft, ...(template_id ? { id: template_id } : {}) }, 'body')
    return await checkDraft(db(ctx), ctx.tenant, body)
  },
})

/** In the order the tool server lists them. */
export const templatesTools = [
  listTemplates,
  createTemplate,
  filterTemplates,
  getTemplate,
  createTemplateWithOptions,
  updateTemplate,
  submitTemplate,
  deleteTemplate,
  duplicateTemplate,
  previewTemplate,
  refreshTemplateStatus,
  listTemplateSends,
  listTemplateUsages,
  getTemplateStatistics,
  checkTemplateTool,
]
