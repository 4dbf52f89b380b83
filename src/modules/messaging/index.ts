import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { CHAT_LANE } from '../channels/index.ts'
import type { ContactCleanup } from '../contacts/index.ts'
import type { MessageStatusListener } from '../inbox/index.ts'
import type { TemplateSendsDeps } from './messaging.ports.ts'
import { deleteContactLinks, deleteContactSends } from './messaging.repository.ts'
import { linkRoutes, messagingRoutes } from './messaging.routes.ts'
import { applySendStatuses, TEMPLATE_SEND_QUEUE, type TemplateSends, templateSends } from './messaging.sends.ts'
import { type MessagingService, type MessagingServiceDeps, messagingService, newLinkId } from './messaging.service.ts'

/** What messaging needs of other modules: the contact, the chat number, the template. */
export type TemplateSendsNeeds = Pick<TemplateSendsDeps, 'contacts' | 'channels' | 'templates'>
export type MessagingNeeds = Pick<MessagingServiceDeps, 'contacts' | 'channels' | 'sends'>

/** The template sends of a process: checks and queueing for POST /messages, and the worker's delivery. */
export function createTemplateSends(deps: PlatformDeps, needs: TemplateSendsNeeds) {
  const { config, database, clock } = deps
  return templateSends({
    db: database.orm,
    database,
    clock,
    ...needs,
    serviceName: config.serviceName,
    publicUrl: config.publicUrl,
    newLinkId,
  })
}

export function createMessagingService(deps: PlatformDeps, needs: MessagingNeeds) {
  const { config, database, clock } = deps
  return messagingService({
    db: database.orm,
    clock,
    ...needs,
    serviceName: config.serviceName,
    publicUrl: config.publicUrl,
  })
}

export const messagingModule: HeroldModule<
  { messaging: MessagingService; templateSends: Pick<TemplateSends, 'deliver' | 'deliverBatch'> },
  { contactCleanup: ContactCleanup[]; messageStatus: MessageStatusListener }
> = {
  name: 'messaging',
  reactions: {
    // DELETE /contacts/{id} removes the contact's tracked links and clicks, and its send records (the waiting ones
    // are counted as send_jobs)
    contactCleanup: [deleteContactLinks, deleteContactSends],
    // provider statuses (webhook, sandbox) move template send records forward
    messageStatus: applySendStatuses,
  },
  // sends are never deleted here, but their rows are rewritten as each send moves on
  retention: { churn: ['template_sends'] },
  tools: messagingTools,
  routes: (_deps, { messaging }) => messagingRoutes(messaging),
  publicRoutes: (_deps, { messaging }) => linkRoutes(messaging),
  jobs: (_deps, { templateSends: sends }) => ({
    handlers: {
      // queued template sends, a claim at a time: re-checked, quota reserved, sent at most once (messaging.sends.ts);
      // claimed fairly across accounts, each account's at its number's pace (the chat lane), one-at-a-time sends first
      [TEMPLATE_SEND_QUEUE]: {
        lane: CHAT_LANE,
        run: (job, context) => sends.deliver(job, context),
        runBatch: (jobs, context) => sends.deliverBatch(jobs, context),
      },
    },
  }),
}

export { queueAutomationTemplateSends } from './messaging.automation-queue.ts'
export { countSends, type SendCountFilter, type SendCountKey } from './messaging.counts.ts'
export { type HandedSend, handOffSendsSql, skipQueuedSends } from './messaging.handoff.ts'
export { dropQueuedSends, queueSendJobsSql, queueSendsSql } from './messaging.queue.ts'
/** The monthly message quota, for other modules' own sends (the built-in AI's replies). */
export {
  monthIn,
  releaseUnit as releaseMessageUnit,
  reserveUnit as reserveMessageUnit,
  usedIn as messagesUsedIn,
} from './messaging.quota.ts'

import { messagingTools } from './messaging.tools.ts'

export { SEND_WAIT_RETRY_MS, TEMPLATE_SEND_QUEUE, WAIT_REASONS } from './messaging.sends.ts'
export type { MessagingService } from './messaging.service.ts'
