import { Type } from 'typebox'
import { Uuid } from '../../platform/tools/common.ts'
import { operationTools } from '../../platform/tools/from-operation.ts'
import { checkTemplate, previewTemplate } from './templates.app.ts'
import * as templates from './templates.routes.ts'
import type { TemplatesService } from './templates.service.ts'

const TemplateId = Uuid('the template id, from list_templates')
const tool = operationTools<templates.TemplatesServices>({
  references: templates.templateSchemas,
  id: { name: 'template_id', schema: TemplateId },
})

/** What a two-step tool shows of the template it will act on. */
async function templateAt(service: TemplatesService, tenant: Parameters<TemplatesService['get']>[0], id: string) {
  const { name, language, purpose, content, state, provider_status, submittable, issues } = await service.get(
    tenant,
    id,
  )
  return { template: { id, name, language, purpose, content, state, provider_status }, submittable, issues }
}

export const templatesTools = [
  tool(templates.listTemplates, {
    name: 'list_templates',
    title: 'List templates',
    description:
      'Message templates with their state, whether they can be sent now (sendable), their variables and the variables a caller may set (settable_variables).',
    pick: [],
    fixed: { query: { limit: 100, offset: 0 } },
  }),
  tool(templates.createTemplate, {
    name: 'create_template',
    title: 'Create a template',
    description:
      'Create a chat template as a draft (nothing goes to the provider). Variables in double curly braces, such as {{name}} or {{code}}. The answer lists issues that would stop a submission.',
    pick: ['name', 'content', 'language'],
    rename: { text: 'content' },
    // the spec's limits of this tool's arguments
    schemas: {
      text: Type.String({ minLength: 1, maxLength: 1024, description: 'the message text' }),
      language: Type.Optional(
        Type.String({ minLength: 2, maxLength: 10, description: 'such as de or en_US; default the account language' }),
      ),
    },
    fixed: { body: { channel: 'chat' } },
  }),
  tool(templates.listTemplates, {
    name: 'filter_templates',
    title: 'Find templates',
    description:
      'Templates newest first, filtered by channel (chat, email), state (draft, pending, approved, rejected, paused, disabled) or sendable, with paging.',
  }),
  tool(templates.getTemplate, {
    name: 'get_template',
    title: 'Get a template',
    description:
      'One template with its state, provider status, whether it can be submitted (submittable) and the issues that stop it, in English.',
  }),
  tool(templates.createTemplate, {
    name: 'create_template_with_options',
    title: 'Create a template (all options)',
    description:
      'Create a draft template with every option of the API: channel chat or email (email needs a subject), purpose (marketing, utility, optin_confirm), language, up to 20 buttons (QUICK_REPLY or URL, text at most 25 characters) and a header image. Nothing goes to the provider.',
  }),
  tool(templates.updateTemplate, {
    name: 'update_template',
    title: 'Change a template',
    description:
      'Change a template’s name, content, subject, language, buttons or header image; only given fields change. Any content change of a chat template resets its provider status: it must be submitted again.',
  }),
  tool(templates.submitTemplate, {
    name: 'submit_template',
    title: 'Submit a template for approval',
    description:
      'Submit a chat template to WhatsApp for approval. The deterministic check runs first: a template with issues is not submitted (400 with the reasons). Already at the provider: already true.',
    idempotent: true,
    openWorld: true,
    preview: async (ctx, { params }) => ({
      action: 'submit a template to the provider (WhatsApp) for approval',
      ...(await templateAt(ctx.services.templates, ctx.tenant, params.id)),
    }),
  }),
  tool(templates.deleteTemplate, {
    name: 'delete_template',
    description:
      'Delete a template, also at the provider when it is known there. Refused (template_in_use) while a follow-up step or an automation uses it.',
    openWorld: true,
    async preview(ctx, { params }) {
      const { template } = await templateAt(ctx.services.templates, ctx.tenant, params.id)
      const { id, name, language, state, provider_status } = template
      return {
        action: 'delete a template (also at the provider)',
        template: { id, name, language, state, provider_status },
      }
    },
  }),
  tool(templates.duplicateTemplate, {
    name: 'duplicate_template',
    title: 'Duplicate a template',
    description:
      'Copy a template into a new draft named "<name> copy" with the same content, channel, purpose, language, buttons and header image; the copy is not submitted (submit_template does that). System templates cannot be copied.',
  }),
  tool(previewTemplate, {
    name: 'preview_template',
    title: 'Preview a template for a contact',
    description:
      'The template’s text and URL buttons as one contact would get them: contact variables ({{name}}, {{email}}, …) from the contact, the others from variables (checked as send_template checks them). Variables without a value are listed and text is null. Needs contacts:read as well. Sends nothing.',
    describe: { contact_id: 'the contact id (uuid), from search_contacts or create_contact' },
    kind: 'read',
  }),
  tool(templates.refreshTemplate, {
    name: 'refresh_template_status',
    title: 'Refresh a template’s provider status',
    description:
      'Ask the provider (WhatsApp) for a submitted template’s status now instead of waiting for its webhook or the next poll, and record it: approved, rejected (with the reason), pending, paused, disabled. Answers whether it changed.',
    idempotent: true,
    openWorld: true,
  }),
  tool(templates.listTemplateSends, {
    name: 'list_template_sends',
    title: 'List a template’s sends',
    description:
      'The send records of one template, newest first: contact, status (queued, sending, sent, delivered, read, failed, skipped) with its reason, origin (api, newsletter, followup, automation) and the times. Filter by status or origin; page with limit and offset.',
  }),
  tool(templates.listTemplateUsages, {
    name: 'list_template_usages',
    description:
      'The follow-up steps and automations that send a template; while any does, delete_template is refused. Check it before changing or deleting a template.',
  }),
  tool(templates.getTemplateStatistics, {
    name: 'get_template_statistics',
    title: 'Statistics of a template',
    description:
      'How one template performs in the last 7, 30 or 90 days (or all): its sends by the furthest status reached (sent, delivered, read, failed, skipped, still queued), delivery and read rate, and how many came from the API, newsletters, follow-ups and automations.',
  }),
  tool(checkTemplate, {
    name: 'check_template',
    title: 'Check a template draft',
    description:
      'The deterministic check of a template as written, without saving it: every rule it breaks (name, language, content length, variables and their placement, buttons, header image, a provider name another chat template of the account already has), its provider name and variables. An empty issues list means it can be submitted.',
    omit: ['header_media'],
    rename: { template_id: 'id' },
    describe: { template_id: 'the template being changed (its own name is no clash)' },
    kind: 'read',
  }),
]
