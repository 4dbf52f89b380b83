import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { CHAT_LANE, channelsServiceFor } from '../channels/index.ts'
import { contactsService, registerContactCleanup } from '../contacts/index.ts'
import { onMessageStatus } from '../inbox/index.ts'
import { templatesServiceFor } from '../templates/index.ts'
import { deleteContactLinks, deleteContactSends } from './messaging.repository.ts'
import { linkRoutes, messagingRoutes } from './messaging.routes.ts'
import { applySendStatuses, TEMPLATE_SEND_QUEUE, templateSends } from './messaging.sends.ts'
import { messagingService, newLinkId } from './messaging.service.ts'

registerContactCleanup(deleteContactLinks)
// DELETE /contacts/{id} removes the contact's send records; the waiting ones are counted as send_jobs
registerContactCleanup(deleteContactSends)
// provider statuses (webhook, sandbox) move template send records forward
onMessageStatus(applySendStatuses)

/** The template sends of a process: checks and queueing for POST /messages, and the worker's delivery. */
export function templateSendsFor(deps: PlatformDeps) {
  const { config, database, clock } = deps
  const db = database.orm
  return templateSends({
    db,
    database,
    clock,
    // only get() is used: contact deletion is not reached from here
    contacts: contactsService({ db, clock, deletion: { cleanups: [], confirmation: null } }),
    channels: channelsServiceFor(deps),
    templates: templatesServiceFor(deps),
    serviceName: config.serviceName,
    publicUrl: config.publicUrl,
    newLinkId,
  })
}

export function messagingServiceFor(deps: PlatformDeps) {
  const { config, database, clock } = deps
  const db = database.orm
  return messagingService({
    db,
    clock,
    // only get() is used: contact deletion is not reached from here
    contacts: contactsService({ db, clock, deletion: { cleanups: [], confirmation: null } }),
    channels: channelsServiceFor(deps),
    serviceName: config.serviceName,
    publicUrl: config.publicUrl,
    sends: templateSendsFor(deps),
  })
}

export const messagingModule: HeroldModule = {
  name: 'messaging',
  // sends are never deleted here, but their rows are rewritten as each send moves on
  retention: { churn: ['template_sends'] },
  tools: messagingTools,
  routes: (deps) => messagingRoutes(messagingServiceFor(deps)),
  publicRoutes: (deps) => linkRoutes(messagingServiceFor(deps)),
  jobs: (deps) => {
    const sends = templateSendsFor(deps)
    return {
      handlers: {
        // queued template sends, a claim at a time: re-checked, quota reserved, sent at most once (messaging.sends.ts);
        // claimed fairly across accounts, each account's at its number's pace (the chat lane), one-at-a-time sends first
        [TEMPLATE_SEND_QUEUE]: {
          lane: CHAT_LANE,
          run: (job, context) => sends.deliver(job, context),
          runBatch: (jobs, context) => sends.deliverBatch(jobs, context),
        },
      },
    }
  },
}

export { queueAutomationTemplateSend } from './messaging.automation-queue.ts'
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
