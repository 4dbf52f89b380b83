import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import { optinConfirmButton, providerCategory, stateForProviderStatus } from './templates.check.ts'
import type { ProviderFailure, TemplateProviderPort, TemplatesServiceDeps, TemplatesTenant } from './templates.ports.ts'
import * as repo from './templates.repository.ts'
import { customFieldKeys, templateDetail as detail, type TemplateView, templateView } from './templates.view.ts'

/** The durable job that reads a pending template's status from the provider, payload { template_id }. */
export const TEMPLATE_POLL_QUEUE = 'templates.poll_status'
/** How long after a submission (and after each still-pending answer) the provider is asked again. */
export const TEMPLATE_POLL_INTERVAL_MS = 15 * 60 * 1000

/**
 * A chat template's review by the provider: its submission, the decision arriving by webhook, by polling or by a
 * refresh, and its removal at the provider after a deletion here.
 */
export function templateReview(deps: Pick<TemplatesServiceDeps, 'db' | 'clock' | 'hooks' | 'channelProvider'>) {
  const { db, clock, hooks } = deps
  const provider = (): TemplateProviderPort | null => deps.channelProvider ?? null

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

  return {
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
      return saved ? templateView(saved, await customFieldKeys(db, accountId, [saved])) : null
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

    /** For the provider layer (webhook, polling): see applyProviderStatus above. */
    async applyProviderStatus(
      accountId: string,
      id: string,
      report: { status: string; rejectionReason?: string | null; providerTemplateId?: string; submitted?: boolean },
    ): Promise<TemplateView | null> {
      const saved = await applyProviderStatus(accountId, id, report)
      return saved ? templateView(saved, await customFieldKeys(db, accountId, [saved])) : null
    },

    /** After a deletion here: removes a template the provider knows there; when that fails the reason is the notice. */
    async removeAtProvider(accountId: string, row: repo.TemplateRow) {
      const known = row.providerTemplateId !== null || row.providerStatus !== null
      if (!known) return { removedAtProvider: false, notice: null }
      const ref = { providerName: row.providerName, language: row.language, providerTemplateId: row.providerTemplateId }
      const port = provider()
      if (!port) {
        return {
          removedAtProvider: false,
          notice: 'No chat provider is configured; the template was only deleted here',
        }
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
    },
  }
}
