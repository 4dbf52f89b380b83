import { eq } from 'drizzle-orm'
import pino from 'pino'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { memoryRateLimiter, redisRateLimiter } from '../../platform/rate-limit/rate-limiter.ts'
import { secretBoxFor } from '../../platform/secrets.ts'
import type { ChatOptOut, InboundListener } from '../inbox/index.ts'
import { type MediaUsageCheck, resolveHeaderImage } from '../media/index.ts'
import { type OptinTemplateApproved, optinConfirmTemplateFor } from '../templates/index.ts'
import { consentAppRoutes } from './consent.app.ts'
import { publicConsentRoutes } from './consent.public.ts'
import { consentRoutes } from './consent.routes.ts'
import {
  CHAT_OPTIN_QUEUE,
  type ConsentService,
  type ConsentServiceDeps,
  consentOnInbound,
  consentService,
  consentSettingsPreload,
  EMAIL_OPTIN_QUEUE,
  LANDING_SIGNUP_QUEUE,
  optOutOfChat,
  STOP_CONFIRMATION_QUEUE,
  sendWaitingChatOptins,
} from './consent.service.ts'
import { consentSettings } from './consent.tables.ts'
import { consentTools } from './consent.tools.ts'

/** Form posts per account and client address and minute on the public pages. */
export const PUBLIC_POSTS_PER_MINUTE = 10

const logger = pino({ name: 'herold.consent', level: process.env.HEROLD_LOG_LEVEL ?? 'info' }, pino.destination(2))

/** The consent service of a process: sends through the channels module, templates from the templates module. */
export function createConsentService(deps: PlatformDeps, needs: Pick<ConsentServiceDeps, 'channels' | 'contacts'>) {
  const { config, database, clock } = deps
  const db = database.orm
  return consentService({
    db,
    clock,
    secrets: secretBoxFor(config),
    publicUrl: config.publicUrl,
    ...needs,
    optinTemplate: (accountId, language) => optinConfirmTemplateFor(deps, accountId, language),
    log: (level, message, data) => logger[level](data, message),
    resolveImage: (accountId, mediaId) => resolveHeaderImage(db, config.publicUrl, accountId, { media_id: mediaId }),
  })
}

/** DELETE /media/{id}: a 409 while the file is the landing page's logo. */
const landingLogoUses: MediaUsageCheck = async (db, accountId, item) => {
  const [row] = await db
    .select({ logo: consentSettings.landingLogo })
    .from(consentSettings)
    .where(eq(consentSettings.accountId, accountId))
  return row?.logo?.media_id === item.id ? ['the landing page (logo)'] : []
}

const contactOf = (payload: Record<string, unknown>) => String(payload.contact_id)

export const consentModule: HeroldModule<
  { consent: ConsentService },
  {
    inbound: InboundListener
    chatOptOut: ChatOptOut
    optinTemplateApproved: OptinTemplateApproved
    mediaUsage: MediaUsageCheck
  }
> = {
  name: 'consent',
  reactions: {
    // start and stop keywords and the confirm button act inside the transaction that stores the inbound message
    inbound: {
      preload: consentSettingsPreload,
      run: (tx, clock, message, preloaded) => consentOnInbound(tx, clock, message, preloaded),
    },
    // the provider's opt-out (131050) takes the same path as a stop keyword
    chatOptOut: optOutOfChat,
    // contacts whose double opt-in waited for an approved opt-in template get it once one is approved
    optinTemplateApproved: sendWaitingChatOptins,
    mediaUsage: landingLogoUses,
  },
  // e-mail opt-in tokens the retention period after they expired
  retention: {
    deletes: [
      {
        table: 'email_optin_tokens',
        statement: 'DELETE FROM email_optin_tokens WHERE expires_at < $1',
        cutoff: 'retention',
      },
    ],
    churn: ['email_optin_tokens'],
  },
  tools: consentTools,
  routes: (_deps, { consent }) => consentRoutes(consent),
  // the web app records a contact's opt-out and sends the opt-in request they asked for (/app/contacts/{id}/…)
  appRoutes: (_deps, { consent }) => consentAppRoutes(consent),
  publicRoutes: (deps, { consent }) => {
    const limiter = deps.config.redisUrl
      ? redisRateLimiter(deps.config.redisUrl, PUBLIC_POSTS_PER_MINUTE, 60)
      : memoryRateLimiter(PUBLIC_POSTS_PER_MINUTE, 60)
    const routes = publicConsentRoutes({
      service: consent,
      secrets: secretBoxFor(deps.config),
      clock: deps.clock,
      limiter,
      publicUrl: deps.config.publicUrl,
    })
    return async (app) => {
      app.addHook('onClose', () => limiter.close())
      await routes(app)
    }
  },
  jobs: (_deps, { consent }) => ({
    handlers: {
      [CHAT_OPTIN_QUEUE]: { run: (job) => consent.sendChatConfirmation(job.accountId, contactOf(job.payload)) },
      [STOP_CONFIRMATION_QUEUE]: {
        run: (job) => consent.sendStopConfirmation(job.accountId, contactOf(job.payload)),
      },
      [EMAIL_OPTIN_QUEUE]: { run: (job) => consent.sendEmailConfirmation(job.accountId, contactOf(job.payload)) },
      [LANDING_SIGNUP_QUEUE]: { run: (job) => consent.applySignup(job.accountId, job.payload) },
    },
  }),
}

export type { ConsentService } from './consent.service.ts'
export { consentService, isConsentKeyword, startOptin } from './consent.service.ts'
