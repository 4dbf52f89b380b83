import type { HeroldModule } from '../../platform/module.ts'
import { templatesRoutes } from './templates.routes.ts'
import {
  type TemplateHooks,
  type TemplateProviderPort,
  type TemplateUsageCheck,
  templatesService,
} from './templates.service.ts'

const hooks: TemplateHooks = { usageChecks: [], provider: null }

/**
 * Modules that attach templates (follow-up steps, automations) register here, from their own index.ts, how to find
 * the uses of a template; DELETE /templates/{id} answers 409 template_in_use while any is reported.
 */
export function registerTemplateUsageCheck(check: TemplateUsageCheck): () => void {
  hooks.usageChecks.push(check)
  return () => {
    hooks.usageChecks = hooks.usageChecks.filter((c) => c !== check)
  }
}

/** The channels module registers the chat provider's template operations (removal at the provider on delete). */
export function registerTemplateProvider(port: TemplateProviderPort | null): void {
  hooks.provider = port
}

export const templatesModule: HeroldModule = {
  name: 'templates',
  routes: ({ database, clock }) => templatesRoutes(templatesService({ db: database.orm, clock, hooks })),
}

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
export type {
  ProviderTemplateRef,
  TemplateProviderPort,
  TemplatesService,
  TemplatesTenant,
  TemplateUsageCheck,
  TemplateView,
} from './templates.service.ts'
export { templatesService } from './templates.service.ts'
export {
  contactVariables,
  invalidVariablesMessage,
  remainingPlaceholders,
  renderTemplate,
  settableVariables,
  validateVariableValues,
} from './templates.variables.ts'
