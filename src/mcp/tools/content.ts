import { Type } from 'typebox'
import {
  CreateBody as NewsletterCreateBody,
  UpdateBody as NewsletterUpdateBody,
} from '../../modules/newsletters/newsletters.schemas.ts'
import {
  CreateBody as TemplateCreateBody,
  ListQuery as TemplateListQuery,
  PreviewBody as TemplatePreviewBody,
  SendsQuery as TemplateSendsQuery,
  UpdateBody as TemplateUpdateBody,
} from '../../modules/templates/templates.schemas.ts'
import { requireScope } from '../../platform/auth/authenticate.ts'
import { out } from '../outputs.ts'
import { defineTool, restRule } from '../tool.ts'
import { ContactId, paging, Uuid } from './common.ts'

/** Templates and newsletters beyond the named tools: every REST operation of /templates and /newsletters. */

const TemplateId = Uuid('the template id, from list_templates')
const NewsletterId = Uuid('the newsletter id, from list_newsletters')

export const filterTemplates = defineTool({
  name: 'filter_templates',
  title: 'Find templates',
  description:
    'Templates newest first, filtered by channel (chat, email), state (draft, pending, approved, rejected, paused, disabled) or sendable, with paging.',
  scope: 'templates:read',
  rest: 'GET /templates',
  output: out.filter_templates,
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
  output: out.get_template,
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
  output: out.create_template_with_options,
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
  output: out.update_template,
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
  output: out.submit_template,
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
  output: out.delete_template,
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

export const createNewsletter = defineTool({
  name: 'create_newsletter',
  title: 'Create a newsletter draft',
  description:
    'Create a chat newsletter as a draft (it is never sent by creation): subject and content required, content may use {{name}}. Schedule it with schedule_newsletter.',
  scope: 'newsletters:write',
  rest: 'POST /newsletters',
  output: out.create_newsletter,
  kind: 'write',
  input: Type.Object(NewsletterCreateBody.properties),
  async run(ctx, args) {
    const body = restRule(NewsletterCreateBody, args, 'body')
    return { newsletter: await ctx.services.newsletters.create(ctx.tenant, body) }
  },
})

export const getNewsletter = defineTool({
  name: 'get_newsletter',
  title: 'Get a newsletter',
  description: 'One newsletter with its status, phase, segment, button, scheduled time and estimated recipients.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters/{id}',
  output: out.get_newsletter,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return { newsletter: await ctx.services.newsletters.get(ctx.tenant, args.newsletter_id) }
  },
})

export const updateNewsletter = defineTool({
  name: 'update_newsletter',
  title: 'Change a newsletter’s button or segment',
  description:
    'Set or remove (null) the call-to-action button {text, url} and the recipient segment {tags_any, tags_all, tags_exclude}; at least one of them. Not while sending or sent; segment tags must exist.',
  scope: 'newsletters:write',
  rest: 'PATCH /newsletters/{id}',
  output: out.update_newsletter,
  kind: 'write',
  idempotent: true,
  input: Type.Object({ newsletter_id: NewsletterId, ...NewsletterUpdateBody.properties }),
  async run(ctx, args) {
    const { newsletter_id, ...change } = args
    const body = restRule(NewsletterUpdateBody, change, 'body')
    return { newsletter: await ctx.services.newsletters.update(ctx.tenant, newsletter_id, body) }
  },
})

export const deleteNewsletter = defineTool({
  name: 'delete_newsletter',
  title: 'Delete a newsletter',
  description:
    'Delete a draft or scheduled newsletter (its queued sends are removed first); not while sending or sent.',
  scope: 'newsletters:delete',
  rest: 'DELETE /newsletters/{id}',
  output: out.delete_newsletter,
  kind: 'destructive',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async preview(ctx, args) {
    const newsletter = await ctx.services.newsletters.get(ctx.tenant, args.newsletter_id)
    return {
      action: 'delete a newsletter',
      newsletter: {
        id: newsletter.id,
        name: newsletter.name,
        subject: newsletter.subject,
        status: newsletter.status,
        scheduled_at: newsletter.scheduled_at,
      },
    }
  },
  async run(ctx, args) {
    return { ...(await ctx.services.newsletters.remove(ctx.tenant, args.newsletter_id)) }
  },
})

export const cancelNewsletter = defineTool({
  name: 'cancel_newsletter',
  title: 'Cancel a scheduled newsletter',
  description: 'Take a scheduled newsletter back to draft; nothing goes out. Only while it is scheduled.',
  scope: 'newsletters:schedule',
  rest: 'POST /newsletters/{id}/cancel',
  output: out.cancel_newsletter,
  kind: 'write',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return { newsletter: await ctx.services.newsletters.cancel(ctx.tenant, args.newsletter_id) }
  },
})

export const getNewsletterStatus = defineTool({
  name: 'get_newsletter_status',
  title: 'Newsletter delivery status',
  description:
    'How a newsletter’s sending goes: counts per status (queued, sent, delivered, read, failed, skipped), skip and failure reasons, and the phase.',
  scope: 'newsletters:read',
  rest: 'GET /newsletters/{id}/status',
  output: out.get_newsletter_status,
  kind: 'read',
  input: Type.Object({ newsletter_id: NewsletterId }),
  async run(ctx, args) {
    return { ...(await ctx.services.newsletters.status(ctx.tenant, args.newsletter_id)) }
  },
})

export const duplicateTemplate = defineTool({
  name: 'duplicate_template',
  title: 'Duplicate a template',
  description:
    'Copy a template into a new draft named "<name> copy" with the same content, channel, purpose, language, buttons and header image; the copy is not submitted (submit_template does that). System templates cannot be copied.',
  scope: 'templates:write',
  rest: 'POST /templates/{id}/duplicate',
  output: out.duplicate_template,
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
  output: out.preview_template,
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
  output: out.refresh_template_status,
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
  output: out.list_template_sends,
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
  output: out.list_template_usages,
  kind: 'read',
  input: Type.Object({ template_id: TemplateId }),
  async run(ctx, args) {
    return await ctx.services.templates.usages(ctx.tenant, args.template_id)
  },
})

export const contentTools = [
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
  createNewsletter,
  getNewsletter,
  updateNewsletter,
  deleteNewsletter,
  cancelNewsletter,
  getNewsletterStatus,
]
