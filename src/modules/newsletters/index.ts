import { sql } from 'drizzle-orm'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import { AppError } from '../../platform/http/errors.ts'
import type { JobHandlers } from '../../platform/jobs/runner.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import type { ChannelsService } from '../channels/index.ts'
import { type MediaUsageCheck, resolveHeaderImage } from '../media/index.ts'
import { newsletterAppRoutes } from './newsletters.app.ts'
import { newslettersRoutes } from './newsletters.routes.ts'
import { type NewslettersService, type NewsletterTemplates, newslettersService } from './newsletters.service.ts'
import type { NewsletterHeaderMedia } from './newsletters.tables.ts'
import { newslettersTools } from './newsletters.tools.ts'
import { EMBEDDED_BULK_SLICE, NEWSLETTER_PROGRESS_QUEUE, NEWSLETTER_START_QUEUE } from './newsletters.worker.ts'

/** A media library file that is a newsletter's header image cannot be deleted: DELETE /media/{id} is a 409. */
const newsletterMediaUses: MediaUsageCheck = async (db, accountId, item) => {
  const result = await db.execute(sql`SELECT id, name FROM newsletters WHERE account_id = ${accountId}
    AND (header_media->>'media_id' = ${item.id} OR header_media->>'url' = ${item.url})`)
  return (result as unknown as { rows: Array<{ id: string; name: string }> }).rows.map(
    (n) => `newsletter ${n.name} (${n.id})`,
  )
}

/** What newsletters need of other modules: the newsletter's template, and the chat number's state and window. */
export interface NewslettersNeeds {
  templates: NewsletterTemplates
  channels: Pick<ChannelsService, 'requireChatConnected' | 'dailyWindow'>
}

export function createNewslettersService(
  deps: PlatformDeps,
  { templates, channels }: NewslettersNeeds,
  options: { feedAhead?: number; bulkSlice?: number } = {},
) {
  return newslettersService({
    db: deps.database.orm,
    clock: deps.clock,
    publicUrl: deps.config.publicUrl,
    resolveHeaderMedia: (accountId, input) =>
      resolveHeaderImage(deps.database.orm, deps.config.publicUrl, accountId, input) as Promise<NewsletterHeaderMedia>,
    templates,
    async requireSendingPossible(accountId) {
      const account = await getAccount(deps.database.orm, accountId)
      if (account.sendingPaused) throw new AppError(403, 'subscription_locked', 'Sending is paused for this account')
      await channels.requireChatConnected(accountId)
    },
    dailyWindow: (accountId) => channels.dailyWindow(accountId),
    // the embedded database's one connection: short bulk statements, so requests go between them
    ...(deps.database.kind === 'pglite' ? { bulkSlice: EMBEDDED_BULK_SLICE } : {}),
    ...options,
  })
}

export const newslettersModule: HeroldModule<{ newsletters: NewslettersService }, { mediaUsage: MediaUsageCheck }> = {
  name: 'newsletters',
  reactions: { mediaUsage: newsletterMediaUses },
  tools: newslettersTools,
  routes: (_deps, services) => newslettersRoutes(services),
  appRoutes: (_deps, services) => newsletterAppRoutes(services),
  jobs: (_deps, { newsletters }) => newslettersJobs(newsletters),
}

/** The newsletter's queues: its start (fan-out) and its progress checks, which also feed its send jobs. */
export function newslettersJobs(service: Pick<NewslettersService, 'start' | 'progress'>) {
  return {
    handlers: {
      // the fan-out and the feed are bulk work: on the embedded database a request's statements go before theirs
      [NEWSLETTER_START_QUEUE]: { run: (job, context) => service.start(job, context), perKey: 1, bulk: true },
      [NEWSLETTER_PROGRESS_QUEUE]: { run: (job, context) => service.progress(job, context), bulk: true },
    } satisfies JobHandlers,
  }
}
