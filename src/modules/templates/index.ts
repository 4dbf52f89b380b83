import { sql } from 'drizzle-orm'
import { inAccount } from '../../platform/db/account-rows.ts'
import { AppError } from '../../platform/http/errors.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import type { ChannelsService, TemplateStatusUpdate } from '../channels/index.ts'
import { type MediaUsageCheck, resolveHeaderImage } from '../media/index.ts'
import { templatesAppRoutes } from './templates.app.ts'
import { approvedOptinConfirmTemplates } from './templates.repository.ts'
import { templatesRoutes } from './templates.routes.ts'
import {
  type ProviderFailure,
  TEMPLATE_POLL_QUEUE,
  type TemplateHooks,
  type TemplateProviderPort,
  type TemplatesService,
  templatesService,
} from './templates.service.ts'
import { templates } from './templates.tables.ts'

/** A media library file used as a template's header image (by its url) cannot be deleted: DELETE /media/{id} is a 409. */
const templateMediaUses: MediaUsageCheck = async (db, accountId, item) => {
  const rows = await db
    .select({ id: templates.id, name: templates.name })
    .from(templates)
    .where(
      inAccount(
        templates,
        accountId,
        sql`(${templates.headerMedia}->>'media_id' = ${item.id} OR ${templates.headerMedia}->>'url' = ${item.url})`,
      ),
    )
  return rows.map((t) => `template ${t.name} (${t.id})`)
}

const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error))

/** A channels failure in the port's words: no connected chat number, or the provider not reached. */
function failure(error: unknown): ProviderFailure {
  if (error instanceof AppError && error.code === 'chat_not_connected') {
    return { ok: false, kind: 'not_connected', reason: 'No chat number is connected' }
  }
  return { ok: false, kind: 'unreachable', reason: reasonOf(error) }
}

/** What the templates service needs of the channels module: the chat provider's template operations. */
export type TemplateChannels = Pick<ChannelsService, 'submitTemplate' | 'readTemplate' | 'deleteTemplate'>

/** The chat provider's template operations, through the channels module's exported service. */
export function channelsTemplateProvider(channels: TemplateChannels): TemplateProviderPort {
  return {
    async submitAtProvider(accountId, template) {
      try {
        const status = await channels.submitTemplate(accountId, {
          name: template.providerName,
          language: template.language,
          category: template.category,
          content: template.content,
          buttons: template.buttons.map((b) =>
            b.url ? { type: b.type, text: b.text, url: b.url } : { type: b.type, text: b.text },
          ),
        })
        return { ok: true, ...status }
      } catch (error) {
        return failure(error)
      }
    },
    async readAtProvider(accountId, template) {
      try {
        const report = await channels.readTemplate(accountId, {
          name: template.providerName,
          language: template.language,
        })
        return { ok: true, report }
      } catch (error) {
        return failure(error)
      }
    },
    async deleteAtProvider(accountId, template) {
      try {
        await channels.deleteTemplate(accountId, {
          name: template.providerName,
          language: template.language,
          providerTemplateId: template.providerTemplateId,
        })
        return { ok: true }
      } catch (error) {
        return { ok: false, reason: failure(error).reason }
      }
    },
  }
}

/**
 * The templates service of a process, talking to the chat provider through the channels module. `hooks` is what
 * other modules react to in templates with, as the composition root collected it: how they find a template's uses
 * (`reactions.templateUsage`: DELETE /templates/{id} answers 409 template_in_use while any is reported) and what
 * happens when an opt-in confirmation template is approved (`reactions.optinTemplateApproved`, the consent module's).
 */
export function createTemplatesService(
  deps: PlatformDeps,
  needs: { channels: TemplateChannels; hooks: TemplateHooks },
) {
  return templatesService({
    db: deps.database.orm,
    clock: deps.clock,
    hooks: needs.hooks,
    channelProvider: channelsTemplateProvider(needs.channels),
    resolveHeaderMedia: (accountId, input) =>
      resolveHeaderImage(deps.database.orm, deps.config.publicUrl, accountId, input),
  })
}

/** Provider decisions arriving by the chat provider's webhook move the template's state (channels calls this). */
export function templateDecisions(templates: Pick<TemplatesService, 'applyProviderDecision'>) {
  return async (accountId: string, updates: TemplateStatusUpdate[]): Promise<void> => {
    for (const update of updates) await templates.applyProviderDecision(accountId, update)
  }
}

export const templatesModule: HeroldModule<{ templates: TemplatesService }, { mediaUsage: MediaUsageCheck }> = {
  name: 'templates',
  reactions: { mediaUsage: templateMediaUses },
  tools: templatesTools,
  routes: (_deps, { templates }) => templatesRoutes(templates),
  appRoutes: (_deps, { templates }) => templatesAppRoutes(templates),
  jobs: (_deps, { templates }) => ({
    handlers: {
      // reads a pending template's status from the provider until it is decided (templates.service.ts)
      [TEMPLATE_POLL_QUEUE]: {
        async run(job) {
          await templates.pollProviderStatus(job.accountId, String(job.payload.template_id))
        },
      },
    },
  }),
}

/** The opt-in confirmation template for a contact: approved, in the contact's language when there is one. */
export async function optinConfirmTemplateFor(
  deps: Pick<PlatformDeps, 'database'>,
  accountId: string,
  language: string,
) {
  const approved = await approvedOptinConfirmTemplates(deps.database.orm, accountId)
  const primary = (tag: string) => tag.split(/[_-]/)[0].toLowerCase()
  const chosen =
    approved.find((t) => t.language === language) ??
    approved.find((t) => primary(t.language) === primary(language)) ??
    approved[0]
  if (!chosen) return null
  return {
    id: chosen.id,
    name: chosen.providerName,
    displayName: chosen.name,
    language: chosen.language,
    content: chosen.content,
  }
}

export { formatFieldValue } from '../../common/field-format.ts'
export {
  checkTemplate,
  isSendable,
  optinConfirmButton,
  providerCategory,
  providerName,
  rejectionReasonText,
  stateForProviderStatus,
  submissionReadiness,
  type TemplateIssue,
  templateTexts,
  templateVariables,
} from './templates.check.ts'
export { customFieldTexts, mayUseCustomFields, valueLanguage } from './templates.fields.ts'
export { type TemplateRow, templateAsJsonSql, templateFromJson } from './templates.repository.ts'
export type {
  OptinTemplateApproved,
  ProviderFailure,
  ProviderTemplateRef,
  TemplateHooks,
  TemplateProviderPort,
  TemplatesService,
  TemplatesTenant,
  TemplateUsageCheck,
  TemplateView,
} from './templates.service.ts'
export { TEMPLATE_POLL_INTERVAL_MS, TEMPLATE_POLL_QUEUE, templatesService } from './templates.service.ts'
export {
  CONTACT_VARIABLES,
  contactVariables,
  extractVariables,
  invalidVariablesMessage,
  placeholders,
  remainingPlaceholders,
  renderTemplate,
  settableVariables,
  unfilledVariables,
  validateVariableValues,
  valueProblem,
} from './templates.variables.ts'
export { fieldDefinitionsBatched, templateView } from './templates.view.ts'

import { templatesTools } from './templates.tools.ts'
