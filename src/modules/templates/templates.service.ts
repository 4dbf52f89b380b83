import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Static } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { type Page, toPage } from '../../platform/http/pagination.ts'
import { rangeStart, type StatisticsRange, sendFunnel } from '../../platform/http/statistics.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import {
  type CheckedTemplate,
  type HeaderMedia,
  isSendable,
  optinConfirmButton,
  providerCategory,
  providerName,
  rejectionReasonText,
  stateForProviderStatus,
  submissionReadiness,
  type TemplateButton,
  templateTexts,
  templateVariables,
} from './templates.check.ts'
import * as repo from './templates.repository.ts'
import type { CreateBody, ListQuery, UpdateBody } from './templates.schemas.ts'
import {
  invalidVariablesMessage,
  renderTemplate,
  settableVariables,
  validateVariableValues,
} from './templates.variables.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** What the templates service needs of the tenant: the account and its language (the default template language). */
export type TemplatesTenant = Pick<TenantContext, 'accountId'> & { account: Pick<TenantContext['account'], 'language'> }

export type CreateInput = Static<typeof CreateBody>
export type UpdateInput = Static<typeof UpdateBody>
export type ListInput = Static<typeof ListQuery>

/**
 * Where a template is still used (a follow-up step, an automation): answers a short English description of each use,
 * such as `follow-up "Welcome" step 2`, or nothing. Runs inside the deletion's transaction.
 */
export type TemplateUsageCheck = (tx: Db, accountId: string, templateId: string) => Promise<string[]>

/** The template as the provider knows it. */
export interface ProviderTemplateRef {
  providerName: string
  language: string
  providerTemplateId: string | null
}

/** A chat template as it is submitted: the provider identifies it by (name, language). */
export interface ProviderTemplateSubmission {
  providerName: string
  language: string
  /** templates.check.ts providerCategory: optin_confirm and utility are UTILITY, marketing is MARKETING */
  category: 'UTILITY' | 'MARKETING'
  content: string
  buttons: TemplateButton[]
}

/** What the provider reports about a template: its status word (APPROVED, PENDING, REJECTED, …) and reason. */
export interface ProviderTemplateReport {
  status: string
  reason: string | null
  providerTemplateId?: string
}

/**
 * Why a provider call did not happen or did not succeed: `not_connected` when the account has no connected chat
 * number, `unreachable` when the provider was not reached or answered with an error.
 */
export type ProviderFailure = { ok: false; kind: 'not_connected' | 'unreachable'; reason: string }

/**
 * The channel provider's side of templates. templates' index.ts builds it from the channels module's exported
 * functions; tests may replace it through registerTemplateProvider.
 */
export interface TemplateProviderPort {
  deleteAtProvider(
    accountId: string,
    template: ProviderTemplateRef,
  ): Promise<{ ok: true } | { ok: false; reason: string }>
  submitAtProvider?(
    accountId: string,
    template: ProviderTemplateSubmission,
  ): Promise<({ ok: true } & ProviderTemplateReport) | ProviderFailure>
  readAtProvider?(
    accountId: string,
    template: ProviderTemplateRef,
  ): Promise<{ ok: true; report: ProviderTemplateReport | null } | ProviderFailure>
}

/**
 * Told, in the transaction that records it, that the provider approved an opt-in confirmation template (the consent
 * module then sends it to the contacts whose double opt-in waited for one).
 */
export type OptinTemplateApproved = (tx: Db, clock: Clock, accountId: string) => Promise<void>

export interface TemplateHooks {
  usageChecks: TemplateUsageCheck[]
  provider: TemplateProviderPort | null
  optinApproved?: OptinTemplateApproved[]
}

export interface TemplatesServiceDeps {
  db: Db
  clock: Clock
  hooks: TemplateHooks
  /** the channels module's template operations; hooks.provider, when registered, takes precedence */
  channelProvider?: TemplateProviderPort | null
  /** a header image given by media id becomes the library file's address (the media module's resolveHeaderImage) */
  resolveHeaderMedia?: (accountId: string, input: HeaderMediaInput) => Promise<HeaderMedia>
}

export type HeaderMediaInput = NonNullable<CreateInput['header_media']>

/** The durable job that reads a pending template's status from the provider, payload { template_id }. */
export const TEMPLATE_POLL_QUEUE = 'templates.poll_status'
/** How long after a submission (and after each still-pending answer) the provider is asked again. */
export const TEMPLATE_POLL_INTERVAL_MS = 15 * 60 * 1000

/** Contacts have no custom fields yet; once they do, their names come from the contact and stop being settable. */
const CUSTOM_FIELDS: readonly string[] = []

/** A template as GET /templates lists it. */
export function templateView(row: repo.TemplateRow) {
  return {
    id: row.id,
    name: row.name,
    provider_name: row.providerName,
    content: row.content,
    channel: row.channel,
    subject: row.subject,
    purpose: row.purpose,
    provider_category: row.channel === 'chat' ? providerCategory(row.purpose) : null,
    language: row.language,
    buttons: row.buttons,
    confirm_button: row.purpose === 'optin_confirm' && row.channel === 'chat' ? optinConfirmButton(row.language) : null,
    header_media: row.headerMedia,
    state: row.state,
    provider_status: row.providerStatus,
    provider_template_id: row.providerTemplateId,
    rejection_reason: row.rejectionReason,
    system: row.system,
    variables: templateVariables(row),
    settable_variables: settableVariables(templateTexts(row), CUSTOM_FIELDS),
    sendable: isSendable(row),
    submitted_at: row.submittedAt,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}
export type TemplateView = ReturnType<typeof templateView>

export type TemplateDetailView = TemplateView &
  ReturnType<typeof submissionReadiness> & {
    rejection_reason_text: string | null
  }

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
  const provider = (): TemplateProviderPort | null => hooks.provider ?? deps.channelProvider ?? null

  async function detail(dbOrTx: Db, row: repo.TemplateRow): Promise<TemplateDetailView> {
    const taken =
      row.channel === 'chat' &&
      row.providerName !== '' &&
      (await repo.providerNameTaken(dbOrTx, row.accountId, {
        id: row.id,
        providerName: row.providerName,
        language: row.language,
      }))
    return {
      ...templateView(row),
      ...submissionReadiness(row, { providerNameTaken: taken }),
      rejection_reason_text: row.providerStatus === 'rejected' ? rejectionReasonText(row.rejectionReason) : null,
    }
  }

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

  /**
   * Records what the provider reports about a template (after submission, by its webhook or by polling) and moves the
   * state (stateForProviderStatus). Returns null for an unknown template.
   */
  async function applyProviderStatus(
    accountId: string,
    id: string,
    report: { status: string; rejectionReason?: string | null; providerTemplateId?: string; submitted?: boolean },
    tx: Db = db,
  ): Promise<repo.TemplateRow | null> {
    const status = report.status.toLowerCase()
    const now = clock.now()
    const listeners = status === 'approved' ? (hooks.optinApproved ?? []) : []
    const record = async (t: Db) => {
      const row = await repo.updateTemplate(t, accountId, id, {
        providerStatus: status,
        state: stateForProviderStatus(status),
        rejectionReason: status === 'rejected' ? (report.rejectionReason ?? null) : null,
        providerStatusAt: now,
        ...(report.providerTemplateId === undefined ? {} : { providerTemplateId: report.providerTemplateId }),
        ...(report.submitted ? { submittedAt: now } : {}),
      })
      if (row?.purpose === 'optin_confirm') for (const listener of listeners) await listener(t, clock, accountId)
      return row
    }
    // the approval and what waited for it commit together
    return listeners.length > 0 ? tx.transaction(record) : record(tx)
  }

  /** Queues the next read of the template's status at the provider, one interval from now. */
  const schedulePoll = (tx: Db, accountId: string, templateId: string) =>
    enqueue(tx, clock, {
      accountId,
      queue: TEMPLATE_POLL_QUEUE,
      payload: { template_id: templateId },
      concurrencyKey: templateId,
      runAt: new Date(clock.now().getTime() + TEMPLATE_POLL_INTERVAL_MS),
    })

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
      return { ...page, items: page.items.map(templateView) }
    },

    /** A template as the list shows it, 404 when missing; the lookups of requests that arrive together are one statement. */
    async view(tenant: TemplatesTenant, id: string): Promise<TemplateView> {
      const row = await repo.findTemplateBatched(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      return templateView(row)
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
     * DELETE /templates/{id}: 409 template_in_use while a registered usage check reports a use. The row is deleted
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

    /**
     * POST /templates/{id}/submit. Already pending or approved at the provider: `already` with a notice, nothing sent.
     * The deterministic check failing, or no chat number connected: 400 with the reasons, nothing sent. The provider
     * not reached (or answering with an error): 502 provider_unreachable with the reason. Otherwise the provider's
     * answer moves the state (pending, or approved/rejected when it decides at once).
     */
    async submit(tenant: TemplatesTenant, id: string) {
      const row = await repo.findTemplate(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      if (row.system) {
        throw badRequest('System templates are managed by Herold and are not submitted by callers', 'system_template')
      }
      if (row.channel !== 'chat') {
        throw badRequest('Only chat templates are submitted to the provider', 'template_not_chat')
      }
      if (row.providerStatus === 'pending' || row.providerStatus === 'approved') {
        const notice =
          row.providerStatus === 'pending'
            ? "The template is already waiting for the provider's decision; nothing was submitted"
            : 'The provider has already approved the template; nothing was submitted'
        return { already: true as const, notice, template: await detail(db, row) }
      }
      const readiness = (await detail(db, row)).issues
      if (readiness.length > 0) {
        throw badRequest(
          `The template cannot be submitted: ${readiness.map((i) => i.message).join('; ')}`,
          'template_not_submittable',
          { issues: readiness },
        )
      }
      const port = provider()
      const result = port?.submitAtProvider
        ? await port
            .submitAtProvider(tenant.accountId, {
              providerName: row.providerName,
              language: row.language,
              category: providerCategory(row.purpose),
              content: row.content,
              // opt-in confirmation templates carry the fixed confirm button in the template's language
              buttons: row.purpose === 'optin_confirm' ? [optinConfirmButton(row.language)] : row.buttons,
            })
            .catch(
              (error: unknown): ProviderFailure => ({
                ok: false,
                kind: 'unreachable',
                reason: error instanceof Error ? error.message : String(error),
              }),
            )
        : ({ ok: false, kind: 'not_connected', reason: 'No chat provider is configured' } as ProviderFailure)
      if (!result.ok) {
        if (result.kind === 'not_connected') {
          throw badRequest(`The template cannot be submitted: ${result.reason}`, 'chat_not_connected', {
            issues: [{ code: 'chat_not_connected', field: 'id', message: result.reason }],
          })
        }
        throw new AppError(502, 'provider_unreachable', `The submission did not reach the provider: ${result.reason}`)
      }
      // a template still pending at the provider is polled until its decision (or the webhook) arrives
      const saved = await db.transaction(async (tx) => {
        const updated = await applyProviderStatus(
          tenant.accountId,
          id,
          {
            status: result.status,
            rejectionReason: result.reason,
            providerTemplateId: result.providerTemplateId,
            submitted: true,
          },
          tx,
        )
        if (updated?.state === 'pending') await schedulePoll(tx, tenant.accountId, id)
        return updated
      })
      if (!saved) throw notFound('template')
      return { already: false as const, notice: null, template: await detail(db, saved) }
    },

    /**
     * A provider's decision arriving by its webhook: the template is found by its provider id, else by (provider
     * name, language); unknown templates are ignored (null).
     */
    async applyProviderDecision(
      accountId: string,
      update: {
        providerTemplateId: string | null
        name: string
        language: string
        status: string
        reason: string | null
      },
    ): Promise<TemplateView | null> {
      const row = await repo.findByProviderRef(db, accountId, {
        providerTemplateId: update.providerTemplateId,
        providerName: update.name,
        language: update.language,
      })
      if (!row) return null
      const saved = await applyProviderStatus(accountId, row.id, {
        status: update.status,
        rejectionReason: update.reason,
        ...(update.providerTemplateId ? { providerTemplateId: update.providerTemplateId } : {}),
      })
      return saved ? templateView(saved) : null
    },

    /**
     * The polling job: reads a template that is still pending from the provider. Still pending: asked again one
     * interval later. Decided: the state moves. Gone, changed since, or no chat number any more: polling stops.
     * The provider not reached: throws, so the job is retried with backoff.
     */
    async pollProviderStatus(accountId: string, templateId: string): Promise<'decided' | 'pending' | 'stopped'> {
      const row = await repo.findTemplate(db, accountId, templateId)
      if (row?.providerStatus !== 'pending') return 'stopped'
      const port = provider()
      if (!port?.readAtProvider) return 'stopped'
      const result = await port.readAtProvider(accountId, {
        providerName: row.providerName,
        language: row.language,
        providerTemplateId: row.providerTemplateId,
      })
      if (!result.ok) {
        if (result.kind === 'not_connected') return 'stopped'
        throw new Error(`The provider was not reached: ${result.reason}`)
      }
      if (!result.report) return 'stopped'
      const report = result.report
      if (stateForProviderStatus(report.status) === 'pending') {
        await schedulePoll(db, accountId, templateId)
        return 'pending'
      }
      return db.transaction(async (tx) => {
        // only a template still pending takes the answer: a webhook or an edit may have come first
        const current = await repo.findTemplate(tx, accountId, templateId, { lock: true })
        if (current?.providerStatus !== 'pending') return 'stopped' as const
        await applyProviderStatus(accountId, templateId, { status: report.status, rejectionReason: report.reason }, tx)
        return 'decided' as const
      })
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
      const found = await db.execute(sql`SELECT name, email, phone FROM contacts
        WHERE account_id = ${tenant.accountId} AND id = ${contactId}`)
      const [contact] = (found as unknown as { rows: Array<{ name: string; email: string; phone: string }> }).rows
      if (!contact) throw notFound('contact')
      const texts = templateTexts(row)
      // the values given are checked as POST /messages checks them; a value not given is shown as missing
      const invalid = validateVariableValues(texts, variables).filter((i) => i.problem !== 'missing')
      if (invalid.length > 0) {
        throw new AppError(422, 'invalid_variables', invalidVariablesMessage(invalid), {
          key: 'invalid_variables',
          details: { variables: invalid.map((i) => ({ name: i.variable, problem: i.problem })) },
        })
      }
      const rendered = renderTemplate({ texts, language: row.language, contact, values: variables })
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

    /**
     * POST /templates/{id}/refresh: reads the template's status at the provider now (instead of waiting for its
     * webhook or the next poll) and records it. Answers the template and whether the status changed.
     */
    async refreshStatus(tenant: TemplatesTenant, id: string) {
      const row = await repo.findTemplate(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      if (row.channel !== 'chat' || row.providerStatus === null) {
        throw badRequest('The template was never submitted to the provider', 'template_not_submitted')
      }
      const port = provider()
      const refused = () =>
        new AppError(409, 'chat_not_connected', 'No chat number is connected', { key: 'chat_not_connected' })
      if (!port?.readAtProvider) throw refused()
      const result = await port.readAtProvider(tenant.accountId, {
        providerName: row.providerName,
        language: row.language,
        providerTemplateId: row.providerTemplateId,
      })
      if (!result.ok) {
        if (result.kind === 'not_connected') throw refused()
        throw new AppError(502, 'provider_unreachable', `The provider was not reached: ${result.reason}`)
      }
      if (!result.report) {
        throw new AppError(409, 'template_not_at_provider', 'The provider does not know this template (any more)', {
          key: 'template_not_at_provider',
        })
      }
      const before = row.providerStatus
      const status = result.report.status.toLowerCase()
      const changed = status !== before
      if (changed) {
        await applyProviderStatus(tenant.accountId, id, { status, rejectionReason: result.report.reason })
      }
      const fresh = await repo.findTemplate(db, tenant.accountId, id)
      return { changed, previous_status: before, template: await detail(db, fresh as repo.TemplateRow) }
    },

    /** GET /templates/{id}/sends: its send records newest first, by status or origin. */
    async sends(
      tenant: TemplatesTenant,
      id: string,
      query: { status?: string; origin?: string; limit: number; offset: number },
    ) {
      const row = await repo.findTemplate(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      const result = await db.execute(sql`SELECT id, contact_id, status, reason, origin, origin_id, created_at,
          sent_at, delivered_at, read_at, failed_at, skipped_at FROM template_sends
        WHERE account_id = ${tenant.accountId} AND template_id = ${row.id}
          ${query.status ? sql`AND status = ${query.status}` : sql``}
          ${query.origin ? sql`AND origin = ${query.origin}` : sql``}
        ORDER BY created_at DESC, id DESC LIMIT ${query.limit + 1} OFFSET ${query.offset}`)
      const list = (result as unknown as { rows: Array<Record<string, unknown>> }).rows
      const date = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string))
      const page = toPage(list, query.limit, query.offset)
      return {
        ...page,
        items: page.items.map((r) => ({
          send_id: String(r.id),
          contact_id: String(r.contact_id),
          status: String(r.status),
          reason: (r.reason as string | null) ?? null,
          origin: String(r.origin),
          origin_id: (r.origin_id as string | null) ?? null,
          created_at: date(r.created_at) as Date,
          sent_at: date(r.sent_at),
          delivered_at: date(r.delivered_at),
          read_at: date(r.read_at),
          failed_at: date(r.failed_at),
          skipped_at: date(r.skipped_at),
        })),
      }
    },

    /** GET /templates/{id}/statistics: its sends in the range by the furthest status reached, and by origin. */
    async statistics(tenant: TemplatesTenant, id: string, range: StatisticsRange) {
      const row = await repo.findTemplate(db, tenant.accountId, id)
      if (!row) throw notFound('template')
      const since = rangeStart(clock.now(), range)
      const result = await db.execute(sql`SELECT origin, status, count(*)::int AS n FROM template_sends
        WHERE account_id = ${tenant.accountId} AND template_id = ${row.id}
          ${since ? sql`AND created_at >= ${since.toISOString()}::timestamptz` : sql``}
        GROUP BY origin, status`)
      const list = (result as unknown as { rows: Array<{ origin: string; status: string; n: number }> }).rows
      const byStatus: Record<string, number> = {}
      const byOrigin: Record<string, number> = { api: 0, newsletter: 0, followup: 0, automation: 0 }
      for (const r of list) {
        byStatus[r.status] = (byStatus[r.status] ?? 0) + Number(r.n)
        byOrigin[r.origin] = (byOrigin[r.origin] ?? 0) + Number(r.n)
      }
      return {
        template_id: row.id,
        name: row.name,
        range,
        since,
        sends: sendFunnel(byStatus),
        by_origin: byOrigin,
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

    /** For the provider layer (webhook, polling): see applyProviderStatus above. */
    async applyProviderStatus(
      accountId: string,
      id: string,
      report: { status: string; rejectionReason?: string | null; providerTemplateId?: string; submitted?: boolean },
    ): Promise<TemplateView | null> {
      const saved = await applyProviderStatus(accountId, id, report)
      return saved ? templateView(saved) : null
    },
  }

  async function removeAtProvider(accountId: string, row: repo.TemplateRow) {
    const known = row.providerTemplateId !== null || row.providerStatus !== null
    if (!known) return { removedAtProvider: false, notice: null }
    const ref = { providerName: row.providerName, language: row.language, providerTemplateId: row.providerTemplateId }
    const port = provider()
    if (!port) {
      return { removedAtProvider: false, notice: 'No chat provider is configured; the template was only deleted here' }
    }
    const result = await port.deleteAtProvider(accountId, ref).catch((error: unknown) => ({
      ok: false as const,
      reason: error instanceof Error ? error.message : String(error),
    }))
    if (result.ok) return { removedAtProvider: true, notice: null }
    return {
      removedAtProvider: false,
      notice: `The template was deleted here but could not be removed at the provider: ${result.reason}`,
    }
  }
}

export type TemplatesService = ReturnType<typeof templatesService>
