import type { Static } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { HeaderMedia, TemplateButton } from './templates.check.ts'
import type { CreateBody, ListQuery, UpdateBody } from './templates.schemas.ts'

// What the templates service is given and hands out: its tenant, inputs, hooks and the provider's side.

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
 * service (channelsTemplateProvider).
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

/** What other modules react to in templates with (their `reactions.templateUsage`, `reactions.optinTemplateApproved`). */
export interface TemplateHooks {
  usageChecks: readonly TemplateUsageCheck[]
  optinApproved?: readonly OptinTemplateApproved[]
}

export interface TemplatesServiceDeps {
  db: Db
  clock: Clock
  hooks: TemplateHooks
  /** the channels module's template operations */
  channelProvider?: TemplateProviderPort | null
  /** a header image given by media id becomes the library file's address (the media module's resolveHeaderImage) */
  resolveHeaderMedia?: (accountId: string, input: HeaderMediaInput) => Promise<HeaderMedia>
}

export type HeaderMediaInput = NonNullable<CreateInput['header_media']>
