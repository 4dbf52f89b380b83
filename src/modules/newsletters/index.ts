import { getAccount } from '../../platform/auth/accounts.service.ts'
import { AppError } from '../../platform/http/errors.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { channelsServiceFor } from '../channels/index.ts'
import { templatesServiceFor } from '../templates/index.ts'
import { newslettersRoutes } from './newsletters.routes.ts'
import {
  NEWSLETTER_PROGRESS_QUEUE,
  NEWSLETTER_START_QUEUE,
  type NewsletterTemplates,
  newslettersService,
} from './newsletters.service.ts'

export function newslettersServiceFor(deps: PlatformDeps) {
  const templates = templatesServiceFor(deps)
  const channels = channelsServiceFor(deps)
  return newslettersService({
    db: deps.database.orm,
    clock: deps.clock,
    publicUrl: deps.config.publicUrl,
    templates: templates as unknown as NewsletterTemplates,
    async requireSendingPossible(accountId) {
      const account = await getAccount(deps.database.orm, accountId)
      if (account.sendingPaused) throw new AppError(403, 'subscription_locked', 'Sending is paused for this account')
      await channels.requireChatConnected(accountId)
    },
    dailyWindow: (accountId) => channels.dailyWindow(accountId),
  })
}

export const newslettersModule: HeroldModule = {
  name: 'newsletters',
  routes: (deps) => newslettersRoutes(newslettersServiceFor(deps)),
  jobs: (deps) => {
    const service = newslettersServiceFor(deps)
    return {
      handlers: {
        [NEWSLETTER_START_QUEUE]: { run: (job, context) => service.start(job, context), perKey: 1 },
        [NEWSLETTER_PROGRESS_QUEUE]: { run: (job, context) => service.progress(job, context) },
      },
    }
  },
}
