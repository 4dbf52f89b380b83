import { getAccount } from '../../platform/auth/accounts.service.ts'
import type { SignalListener } from '../../platform/events/signals.ts'
import { AppError } from '../../platform/http/errors.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import type { ChannelsService } from '../channels/index.ts'
import type { ContactCleanup } from '../contacts/index.ts'
import type { TemplateUsageCheck } from '../templates/index.ts'
import { followupAppRoutes } from './followups.app.ts'
import { followupsRoutes } from './followups.routes.ts'
import {
  deleteContactEnrollments,
  FOLLOWUP_STEP_QUEUE,
  type FollowupsService,
  type FollowupTemplates,
  followupSignals,
  followupsService,
  followupTemplateUses,
} from './followups.service.ts'
import { followupsTools } from './followups.tools.ts'

/** The body of a new sequence (POST /app/followups), which the CLI's sequence file is checked against too. */
export { CreateBody as SequenceBody } from './followups.schemas.ts'

/** What follow-ups need of other modules: the step templates, and whether the chat number can send. */
export interface FollowupsNeeds {
  templates: FollowupTemplates
  channels: Pick<ChannelsService, 'requireChatConnected'>
}

export function createFollowupsService(deps: PlatformDeps, { templates, channels }: FollowupsNeeds) {
  return followupsService({
    db: deps.database.orm,
    clock: deps.clock,
    templates,
    async sendingBlocked(accountId) {
      const account = await getAccount(deps.database.orm, accountId)
      if (account.status === 'blocked') return 'account_blocked'
      if (account.sendingPaused) return 'subscription_locked'
      try {
        await channels.requireChatConnected(accountId)
      } catch (error) {
        if (error instanceof AppError) return error.code
        throw error
      }
      return null
    },
  })
}

export const followupsModule: HeroldModule<
  { followups: FollowupsService },
  { signals: SignalListener; templateUsage: TemplateUsageCheck; contactCleanup: ContactCleanup }
> = {
  name: 'followups',
  reactions: {
    // confirmed chat opt-ins and added tags enroll contacts, in the transaction of the change
    signals: followupSignals,
    // DELETE /templates/{id} answers 409 template_in_use while a step sends the template
    templateUsage: followupTemplateUses,
    // DELETE /contacts/{id} removes the contact's enrollments and their pending step jobs
    contactCleanup: deleteContactEnrollments,
  },
  tools: followupsTools,
  routes: (_deps, { followups }) => followupsRoutes(followups),
  // the web app creates sequences and steps (POST /app/followups…)
  appRoutes: (_deps, { followups }) => followupAppRoutes(followups),
  jobs: (_deps, { followups }) => ({
    handlers: {
      // due steps, a claim at a time: re-checked together, queued into the template send pipeline, next ones scheduled
      [FOLLOWUP_STEP_QUEUE]: {
        run: (job, context) => followups.runStep(job, context),
        runBatch: (jobs, context) => followups.runSteps(jobs, context),
      },
    },
  }),
}

export type { FollowupsService, SequenceInput } from './followups.service.ts'
export { enrollContact, FOLLOWUP_STEP_QUEUE, sequenceExists } from './followups.service.ts'
