import type { SignalListener } from '../../platform/events/signals.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { memoryRateLimiter, redisRateLimiter } from '../../platform/rate-limit/rate-limiter.ts'
import { secretBoxFor } from '../../platform/secrets.ts'
import { startOptin } from '../consent/index.ts'
import type { ContactCleanup } from '../contacts/index.ts'
import { enrollContact, sequenceExists } from '../followups/index.ts'
import { queueAutomationTemplateSends } from '../messaging/index.ts'
import type { TemplateUsageCheck } from '../templates/index.ts'
import { checkSubscriptionUrl, generateSigningSecret, signatureHeader, USER_AGENT } from '../webhooks/index.ts'
import { automationAppRoutes } from './automations.app.ts'
import { deleteContactRuns } from './automations.repository.ts'
import { automationHookRoutes, automationsRoutes } from './automations.routes.ts'
import {
  type AutomationsDeps,
  type AutomationsService,
  automationsService,
  automationTemplateUses,
} from './automations.service.ts'
import { automationsTools } from './automations.tools.ts'
import {
  automationSignals,
  CALENDAR_POLL_QUEUE,
  CALENDAR_START_QUEUE,
  RUN_MAX_ATTEMPTS,
  RUN_QUEUE,
} from './automations.worker.ts'

/** Posts per minute to one incoming webhook address. */
export const HOOK_POSTS_PER_MINUTE = 120

/** What automations need of other modules (and the outbound client of their webhook steps, closed by the root). */
export type AutomationsNeeds = Pick<AutomationsDeps, 'templates' | 'messaging' | 'channels' | 'http'>

export function createAutomationsService(deps: PlatformDeps, needs: AutomationsNeeds) {
  const { config, database, clock } = deps
  return automationsService({
    db: database.orm,
    clock,
    secrets: secretBoxFor(config),
    publicUrl: config.publicUrl,
    allowPrivateTargets: config.allowPrivateTargets,
    ...needs,
    checkUrl: checkSubscriptionUrl,
    sign: signatureHeader,
    newSecret: generateSigningSecret,
    startOptin: (tx, clock, input) => startOptin(tx, clock, { ...input, source: 'automation', evidence: {} }),
    queueTemplateSends: queueAutomationTemplateSends,
    userAgent: USER_AGENT,
    followups: { exists: sequenceExists, enroll: enrollContact },
  })
}

export const automationsModule: HeroldModule<
  { automations: AutomationsService },
  { signals: SignalListener; templateUsage: TemplateUsageCheck; contactCleanup: ContactCleanup }
> = {
  name: 'automations',
  reactions: {
    // runs start inside the transaction of the change that triggers them (contact created, opt-in confirmed, tag
    // added, keyword received)
    signals: automationSignals,
    // DELETE /templates/{id} answers 409 template_in_use while a template-send step sends the template
    templateUsage: automationTemplateUses,
    // DELETE /contacts/{id} removes the contact's automation runs
    contactCleanup: async (tx, accountId, contactId) => ({
      automation_runs: await deleteContactRuns(tx, accountId, contactId),
    }),
  },
  retention: { churn: ['automation_runs'] },
  tools: automationsTools,
  routes: (_deps, { automations }) => automationsRoutes(automations),
  // the builder's dry run of the safety rules (POST /app/automations/check)
  appRoutes: (_deps, { automations }) => automationAppRoutes(automations),
  publicRoutes: (deps, { automations }) => {
    const limiter = deps.config.redisUrl
      ? redisRateLimiter(deps.config.redisUrl, HOOK_POSTS_PER_MINUTE, 60)
      : memoryRateLimiter(HOOK_POSTS_PER_MINUTE, 60)
    const routes = automationHookRoutes({ service: automations, limiter })
    return async (app) => {
      app.addHook('onClose', () => limiter.close())
      await routes(app)
    }
  },
  jobs: (_deps, { automations }) => ({
    handlers: {
      // runs step after step, a claim of them at once; a wait or a retry ends a run's job and schedules its next (one
      // at a time per run)
      [RUN_QUEUE]: {
        run: (job, context) => automations.runJob(job, context),
        runBatch: (jobs, context) => automations.runBatch(jobs, context),
        maxAttempts: RUN_MAX_ATTEMPTS,
      },
      [CALENDAR_POLL_QUEUE]: { run: (job) => automations.pollCalendar(job), maxAttempts: 5 },
      [CALENDAR_START_QUEUE]: { run: (job) => automations.startCalendarRun(job) },
    },
  }),
}
export { buildingBlocks } from './automations.blocks.ts'
