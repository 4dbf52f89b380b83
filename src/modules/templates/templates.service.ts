import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Static } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { type Page, toPage } from '../../platform/http/pagination.ts'
import { fieldDefinitionsOf } from '../contacts/index.ts'
import {
  type CheckedTemplate,
  type HeaderMedia,
  isSendable,
  providerName,
  type TemplateButton,
  templateTexts,
} from './templates.check.ts'
import { checkDraft } from './templates.draft-check.ts'
import { customFieldTexts, mayUseCustomFields, valueLanguage } from './templates.fields.ts'
import type {
  CreateInput,
  HeaderMediaInput,
  ListInput,
  TemplatesServiceDeps,
  TemplatesTenant,
  UpdateInput,
} from './templates.ports.ts'
import * as repo from './templates.repository.ts'
import { templateReview } from './templates.review.ts'
import type { CheckBody } from './templates.schemas.ts'
import { templateSendsListing } from './templates.sends.ts'
import { invalidVariablesMessage, renderTemplate, validateVariableValues } from './templates.variables.ts'
import {
  customFieldKeys,
  customFieldKeysBatched,
  type TemplateDetailView,
  type TemplateView,
  templateDetail,
  templateView,
} from './templates.view.ts'

type PreviewContact = {
  name: string
  email: string
  phone: string
  language: string
  fields: Record<string, unknown> | null
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export type {
  CreateInput,
  HeaderMediaInput,
  ListInput,
  OptinTemplateApproved,
  ProviderFailure,
  ProviderTemplateRef,
  ProviderTemplateReport,
  ProviderTemplateSubmission,
  TemplateHooks,
  TemplateProviderPort,
  TemplatesServiceDeps,
  TemplatesTenant,
  TemplateUsageCheck,
  UpdateInput,
} from './templates.ports.ts'
export { TEMPLATE_POLL_INTERVAL_MS, TEMPLATE_POLL_QUEUE } from './templates.review.ts'
export { type TemplateDetailView, type TemplateView, templateView } from './templates.view.ts'

const checked = (row: repo.TemplateRow): CheckedTemplate => row

/** Input that is invalid whatever the provider's rules: the field is named, and nothing is stored. */
function assertCoherent(template: CheckedTemplate): void {
  if (template.channel === 'email') {
    if (!template.subject)
      throw badRequest('subject is required for email templates', 'bad_request', { field: 'subject' })
    if (template.buttons.length > 0) {
      throw badRequest('buttons are only for chat templates', 'bad_request', { field: 'buttons' })
    }
    if (template.headerMedia) {
      throw badRequest('header_media is only for chat templates', 'bad_request', { field: 'header_media' })
    }
    return
  }
  if (template.subject !== null) {
    throw badRequest('subject is only for email templates', 'bad_request', { field: 'subject' })
  }
  if (template.purpose === 'optin_confirm' && template.buttons.length > 0) {
    throw badRequest(
      "buttons: opt-in confirmation templates get a fixed confirm button in the template's language; custom buttons are rejected",
      'bad_request',
      { field: 'buttons' },
    )
  }
  template.buttons.forEach((button, index) => {
    if (button.type === 'QUICK_REPLY' && button.url !== undefined) {
      throw badRequest(`buttons/${index}/url is only for type URL`, 'bad_request', { field: `buttons/${index}/url` })
    }
    if (button.type === 'URL' && !button.url) {
      throw badRequest(`buttons/${index}/url is required for type URL`, 'bad_request', {
        field: `buttons/${index}/url`,
      })
    }
  })
}

const normalizeButtons = (buttons: readonly TemplateButton[] | undefined): TemplateButton[] =>
  (buttons ?? []).map((b) =>
    b.url === undefined ? { type: b.type, text: b.text } : { type: b.type, text: b.text, url: b.url },
  )

/** Whether a change touches what the provider approved: text, buttons, language, name or header image. */
function providerContentChanged(before: repo.TemplateRow, after: CheckedTemplate): boolean {
  return (
    before.name !== after.name ||
    before.content !== after.content ||
    before.language !== after.language ||
    JSON.stringify(before.buttons) !== JSON.stringify(after.buttons) ||
    JSON.stringify(before.headerMedia) !== JSON.stringify(after.headerMedia)
  )
}
export function templatesService(deps: TemplatesServiceDeps) {
  const { db, clock, hooks } = deps
  const { removeAtProvider, ...review } = templateReview(deps)
  const detail = templateDetail

  async function callerTemplate(
    tx: Db,
    tenant: TemplatesTenant,
    id: string,
    action: string,
  ): Promise<repo.TemplateRow> {
    const row = await repo.findTemplate(tx, tenant.accountId, id, { lock: true })
    if (!row) throw notFound('template')
    if (row.system) {
      throw badRequest(
        `System templates are managed by Herold and cannot be ${action} through the API`,
        'system_template',
      )
    }
    return row
  }

  /** A header image by media id or address (both or neither: 400); without the media module only an address. */
  async function headerMediaOf(accountId: string, input: HeaderMediaInput): Promise<HeaderMedia> {
    if (deps.resolveHeaderMedia) return deps.resolveHeaderMedia(accountId, input)
    if (input.url === undefined || input.media_id !== undefined) {
      throw badRequest('header_media needs a url', 'header_media_form', { field: 'header_media' })
    }
    return { url: input.url, ...(input.mime_type ? { mime_type: input.mime_type } : {}) }
  }

  return {
    /** POST /templates: a draft; nothing is sent to the provider. `system` is for Herold's own flows only. */
    async create(tenant: TemplatesTenant, input: CreateInput, options: { system?: boolean } = {}) {
      const headerMedia = input.header_media ? await headerMediaOf(tenant.accountId, input.header_media) : null
      const template: CheckedTemplate = {
        name: input.name,
        content: input.content,
        channel: input.channel ?? 'chat',
        subject: input.subject ?? null,
        purpose: input.purpose ?? 'marketing',
        language: input.language ?? tenant.account.language,
        buttons: normalizeButtons(input.buttons),
        headerMedia,
      }
      assertCoherent(template)
      const now = clock.now()
      const row = await repo.insertTemplate(db, {
        ...template,
        buttons: [...template.buttons],
        accountId: tenant.accountId,
        id: randomUUID(),
        providerName: providerName(template.name),
        system: options.system === true,
        createdAt: now,
        updatedAt: now,
      })
      return detail(db, row)
    },

    async list(tenant: TemplatesTenant, query: ListInput): Promise<Page<TemplateView>> {
      const filter = { channel: query.channel, state: query.state, sendable: query.sendable }
      const rows = await repo.listTemplates(db, tenant.accountId, filter, query.limit, query.offset)
      const page = toPage(rows, query.limit, query.offset)
      const fields = await customFieldKeys(db, tenant.accountId, page.items)
      return { ...page, items: page.items.map((row) => templateView(row, fields)) }
    },

    /** A template as the list shows it, 404 when missing; the lookups of requests that arrive together are one statement. */
    async view(tenant: TemplatesTenant, id: string): Promise<TemplateView> {
      const row = await repo.findTemplateBatched(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      return templateView(row, await customFieldKeysBatched(db, tenant.accountId, row))
    },

    async get(tenant: TemplatesTenant, id: string): Promise<TemplateDetailView> {
      const row = await repo.findTemplate(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      return detail(db, row)
    },

    /**
     * PATCH /templates/{id}: only given fields change. Any change of name, content, language, buttons or header image
     * of a chat template resets provider_status to null and the state to draft: it must be submitted again.
     */
    async update(tenant: TemplatesTenant, id: string, input: UpdateInput) {
      const headerMedia = input.header_media ? await headerMediaOf(tenant.accountId, input.header_media) : null
      return db.transaction(async (tx) => {
        const row = await callerTemplate(tx, tenant, id, 'changed')
        const next: CheckedTemplate = {
          ...checked(row),
          name: input.name ?? row.name,
          content: input.content ?? row.content,
          subject: input.subject ?? row.subject,
          language: input.language ?? row.language,
          buttons: input.buttons === undefined ? row.buttons : normalizeButtons(input.buttons),
          headerMedia: input.header_media === undefined ? row.headerMedia : headerMedia,
        }
        assertCoherent(next)
        const reset = next.channel === 'chat' && providerContentChanged(row, next)
        const changed = reset || next.subject !== row.subject
        if (!changed) return { template: await detail(tx, row), providerStatusReset: false }
        const saved = await repo.updateTemplate(tx, tenant.accountId, id, {
          name: next.name,
          providerName: providerName(next.name),
          content: next.content,
          subject: next.subject,
          language: next.language,
          buttons: [...next.buttons],
          headerMedia: next.headerMedia,
          updatedAt: clock.now(),
          ...(reset ? { state: 'draft' as const, providerStatus: null, rejectionReason: null } : {}),
        })
        return { template: await detail(tx, saved!), providerStatusReset: reset }
      })
    },

    /**
     * DELETE /templates/{id}: 409 template_in_use while a usage check (a module's reactions.templateUsage) reports a use. The row is deleted
     * first; a template known to the provider is then removed there, and when that fails the reason is the notice.
     */
    async delete(tenant: TemplatesTenant, id: string) {
      const row = await db.transaction(async (tx) => {
        const found = await callerTemplate(tx, tenant, id, 'deleted')
        const uses: string[] = []
        for (const check of hooks.usageChecks) uses.push(...(await check(tx, tenant.accountId, id)))
        if (uses.length > 0) {
          throw new AppError(409, 'template_in_use', `The template is still used by ${uses.join(', ')}`, {
            details: { used_by: uses },
          })
        }
        await repo.deleteTemplate(tx, tenant.accountId, id)
        return found
      })
      return removeAtProvider(tenant.accountId, row)
    },

    /** POST /templates/{id}/duplicate: a draft copy named "<name> copy" (not submitted); system templates are not copied. */
    async duplicate(tenant: TemplatesTenant, id: string) {
      const source = await repo.findTemplate(db, tenant.accountId, id)
      if (!source) throw notFound('template')
      if (source.system) {
        throw badRequest('System templates are managed by Herold and cannot be copied', 'system_template')
      }
      const now = clock.now()
      const name = `${source.name.slice(0, 115)} copy`
      const row = await repo.insertTemplate(db, {
        accountId: tenant.accountId,
        id: randomUUID(),
        name,
        content: source.content,
        channel: source.channel,
        subject: source.subject,
        purpose: source.purpose,
        language: source.language,
        buttons: [...source.buttons],
        headerMedia: source.headerMedia,
        providerName: providerName(name),
        system: false,
        createdAt: now,
        updatedAt: now,
      })
      return detail(db, row)
    },

    /**
     * POST /app/templates/{id}/preview: the texts one contact would get (contact variables from the contact, the
     * others from `variables`), or what is missing. Reads only; nothing is sent.
     */
    async preview(tenant: TemplatesTenant, id: string, contactId: string, variables: Record<string, string>) {
      const row = await repo.findTemplate(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      if (!UUID.test(contactId)) throw notFound('contact')
      const found = await db.execute(sql`SELECT name, email, phone, language, fields FROM contacts
        WHERE account_id = ${tenant.accountId} AND id = ${contactId}`)
      const [contact] = (found as unknown as { rows: PreviewContact[] }).rows
      if (!contact) throw notFound('contact')
      const texts = templateTexts(row)
      const definitions = mayUseCustomFields(texts) ? await fieldDefinitionsOf(db, tenant.accountId) : []
      const fieldKeys = definitions.map((d) => d.key)
      // the values given are checked as POST /messages checks them; a value not given is shown as missing
      const invalid = validateVariableValues(texts, variables, fieldKeys).filter((i) => i.problem !== 'missing')
      if (invalid.length > 0) {
        throw new AppError(422, 'invalid_variables', invalidVariablesMessage(invalid), {
          key: 'invalid_variables',
          details: { variables: invalid.map((i) => ({ name: i.variable, problem: i.problem })) },
        })
      }
      const customFields = customFieldTexts(definitions, contact.fields, valueLanguage(contact.language, row.language))
      const rendered = renderTemplate({
        texts,
        language: row.language,
        contact: { name: contact.name, email: contact.email, phone: contact.phone, customFields },
        values: variables,
        customFields: fieldKeys,
      })
      const urlButtons = row.buttons.filter((b) => b.type === 'URL' && b.url)
      return {
        template_id: row.id,
        contact_id: contactId,
        subject: row.subject,
        text: rendered.ok ? rendered.texts[0] : null,
        buttons: row.buttons.map((b) => {
          const at = urlButtons.indexOf(b)
          return { ...b, ...(rendered.ok && at >= 0 ? { url: rendered.texts[at + 1] } : {}) }
        }),
        header_media: row.headerMedia ?? null,
        missing_variables: rendered.ok ? [] : rendered.missing,
        remaining_placeholders: rendered.ok ? [] : rendered.remaining,
        sendable: isSendable(row),
      }
    },

    /** GET /templates/{id}/usages: the follow-up steps and automations that send it (what makes DELETE a 409). */
    async usages(tenant: TemplatesTenant, id: string) {
      const row = await repo.findTemplate(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      const uses: string[] = []
      for (const check of hooks.usageChecks) uses.push(...(await check(db, tenant.accountId, id)))
      return { template_id: row.id, in_use: uses.length > 0, used_by: uses }
    },
    /** POST /app/templates/check: the deterministic check of a draft as typed (templates.draft-check.ts) */
    checkDraft: (tenant: TenantContext, body: Static<typeof CheckBody>) => checkDraft(db, tenant, body),
    ...review,
    ...templateSendsListing(deps),
  }
}

export type TemplatesService = ReturnType<typeof templatesService>
