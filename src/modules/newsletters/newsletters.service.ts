import { estimateRecipients, listRecipients, previewForContact } from './newsletters.audience.ts'
import type { NewslettersDeps } from './newsletters.context.ts'
import {
  createDraft,
  duplicateAsDraft,
  getNewsletter,
  listNewsletterPage,
  removeNewsletter,
  updateDraftContent,
  updateSettings,
} from './newsletters.drafts.ts'
import { cancelSchedule, checkSchedulable, scheduleNewsletter } from './newsletters.scheduling.ts'
import { listClicks, newsletterStatistics, sendingStatus } from './newsletters.statistics.ts'
import { newsletterDelivery } from './newsletters.worker.ts'

export type {
  NewsletterRow,
  NewslettersDeps,
  NewslettersTenant,
  NewsletterTemplates,
} from './newsletters.context.ts'

type Args<F> = F extends (deps: NewslettersDeps, ...args: infer A) => unknown ? A : never

/**
 * The newsletters' service: its drafts and their content (newsletters.drafts.ts), scheduling and the template check
 * (newsletters.scheduling.ts), the recipients and estimates (newsletters.audience.ts), the sending status and
 * statistics (newsletters.statistics.ts) and the delivery jobs (newsletters.worker.ts), over the same dependencies.
 */
export function newslettersService(deps: NewslettersDeps) {
  const delivery = newsletterDelivery(deps)
  return {
    list: (...args: Args<typeof listNewsletterPage>) => listNewsletterPage(deps, ...args),
    create: (...args: Args<typeof createDraft>) => createDraft(deps, ...args),
    get: (...args: Args<typeof getNewsletter>) => getNewsletter(deps, ...args),
    update: (...args: Args<typeof updateSettings>) => updateSettings(deps, ...args),
    updateContent: (...args: Args<typeof updateDraftContent>) => updateDraftContent(deps, ...args),
    duplicate: (...args: Args<typeof duplicateAsDraft>) => duplicateAsDraft(deps, ...args),
    remove: (...args: Args<typeof removeNewsletter>) => removeNewsletter(deps, ...args),
    schedule: (...args: Args<typeof scheduleNewsletter>) => scheduleNewsletter(deps, ...args),
    cancel: (...args: Args<typeof cancelSchedule>) => cancelSchedule(deps, ...args),
    check: (...args: Args<typeof checkSchedulable>) => checkSchedulable(deps, ...args),
    preview: (...args: Args<typeof previewForContact>) => previewForContact(deps, ...args),
    estimate: (...args: Args<typeof estimateRecipients>) => estimateRecipients(deps, ...args),
    recipients: (...args: Args<typeof listRecipients>) => listRecipients(deps, ...args),
    clicks: (...args: Args<typeof listClicks>) => listClicks(deps, ...args),
    statistics: (...args: Args<typeof newsletterStatistics>) => newsletterStatistics(deps, ...args),
    status: (...args: Args<typeof sendingStatus>) => sendingStatus(deps, ...args),
    start: delivery.start,
    progress: delivery.progress,
  }
}

export type NewslettersService = ReturnType<typeof newslettersService>
