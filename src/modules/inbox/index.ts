import type { MemberLeft } from '../../platform/auth/member-left.ts'
import { systemClock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import type { HeroldModule, PlatformDeps } from '../../platform/module.ts'
import { storageOf } from '../../platform/storage/storage.ts'
import type { ContactCleanup } from '../contacts/index.ts'
import { inboxAppRoutes } from './inbox.app.ts'
import { AWAY_QUEUE, awayJob, type FreeTextSender } from './inbox.away.ts'
import { unassignLeavingMember } from './inbox.leaving.ts'
import { liveRoutes, publishInboxChanges } from './inbox.live.ts'
import { deleteContactMessages, markForPerson } from './inbox.repository.ts'
import { inboxRoutes, mediaRoutes } from './inbox.routes.ts'
import { routingOnInbound } from './inbox.routing.ts'
import {
  type ChatOptOut,
  type InboundListener,
  type InboxService,
  inboxService,
  type MessageStatusListener,
} from './inbox.service.ts'
import { WAKE_QUEUE, wakeJob } from './inbox.snooze.ts'

/**
 * What other modules react to in the inbox with, as the composition root collected their reactions: an inbound
 * message (`inbound`, inside the transaction that stores it: the consent module's keywords, the AI), the one chat
 * opt-out path (`chatOptOut`, the consent module's, shared by provider opt-outs and STOP) and provider statuses of
 * outbound messages (`messageStatus`).
 */
export interface InboxReactions {
  inboundListeners: readonly InboundListener[]
  chatOptOut: ChatOptOut | null
  statusListeners: readonly MessageStatusListener[]
}

/** The inbox service of a process: storage in the data directory, media addresses under HEROLD_PUBLIC_URL. */
export function createInboxService({ config, database, clock }: PlatformDeps, reactions: InboxReactions) {
  return inboxService({
    db: database.orm,
    clock,
    storage: storageOf(config),
    publicUrl: config.publicUrl,
    inboundListeners: reactions.inboundListeners,
    ...(reactions.chatOptOut ? { chatOptOut: reactions.chatOptOut } : {}),
    statusListeners: reactions.statusListeners,
    // PGlite runs one transaction at a time: a second batch would only wait for the first
    inboundBatchesInFlight: database.kind === 'postgres' ? 2 : 1,
  })
}

export const DELETE_MEDIA_QUEUE = 'inbox.delete_media'

/** The storage key inside one of our media addresses: `<account id>/<file id>`. */
export function mediaKeyOf(url: string): string | null {
  const match = url.match(/\/public\/media\/([0-9a-f-]{36}\/[0-9a-f-]{36})$/)
  return match ? match[1] : null
}

/**
 * DELETE /contacts/{id} removes the contact's conversations and messages and counts them in `removed`; their media
 * files go after the commit, through a durable job (a rolled-back deletion keeps them).
 */
async function deleteContactConversations(tx: Db, accountId: string, contactId: string) {
  const removed = await deleteContactMessages(tx, accountId, contactId)
  const keys = removed.mediaUrls.map(mediaKeyOf).filter((key): key is string => key !== null)
  // due at once whatever clock the workers read (the cleanup hook is not given one)
  const runAt = new Date(0)
  if (keys.length > 0)
    await enqueue(tx, systemClock, { accountId, queue: DELETE_MEDIA_QUEUE, payload: { keys }, runAt })
  return removed.counts
}

export const inboxModule: HeroldModule<
  { inbox: InboxService; messaging: FreeTextSender },
  { contactCleanup: ContactCleanup; inbound: InboundListener; memberLeft: MemberLeft }
> = {
  name: 'inbox',
  reactions: {
    contactCleanup: deleteContactConversations,
    // its own routing of a customer's message: automatic assignment and the away message (inbox.routing.ts)
    inbound: routingOnInbound,
    // a member removed or made a viewer: their conversations go back to nobody (inbox.leaving.ts)
    memberLeft: unassignLeavingMember,
  },
  tools: [...inboxTools, ...routingTools],
  routes: (_deps, { inbox }) => inboxRoutes(inbox),
  // the web app's inbox functions (GET /app/conversations/{id}, close, reopen, assignee, read; messages; activity)
  // and GET /app/events, the live stream of the inbox's changes (inbox.live.ts)
  appRoutes:
    (deps, { inbox }) =>
    async (app) => {
      await app.register(inboxAppRoutes(inbox))
      await app.register(liveRoutes(deps))
    },
  publicRoutes: ({ config }) => mediaRoutes(storageOf(config)),
  jobs: ({ config, database, clock }, { messaging }) => ({
    handlers: {
      [AWAY_QUEUE]: { run: awayJob({ db: database.orm, clock, sender: messaging }), maxAttempts: 3 },
      // a snoozed conversation's wake-up at its time (inbox.snooze.ts)
      [WAKE_QUEUE]: { run: wakeJob({ db: database.orm, clock }) },
      [DELETE_MEDIA_QUEUE]: {
        async run(job) {
          const storage = storageOf(config)
          for (const key of (job.payload as { keys: string[] }).keys) await storage.delete(key)
        },
      },
    },
  }),
}

export { Message } from './inbox.schemas.ts'
export type {
  ChatOptOut,
  InboundListener,
  InboundStored,
  InboxService,
  IncomingMessage,
  IncomingStatus,
  MessageStatusListener,
} from './inbox.service.ts'

import { inboxTools, routingTools } from './inbox.tools.ts'

export { type InboxChange, publishInboxChanges } from './inbox.live.ts'
/** A path that frees a member's room (snooze, member removal) hands the waiting conversations out in its transaction. */
export { handOutWaitingConversations } from './inbox.routing.ts'
export { inboxService, messageView, statusAdvances } from './inbox.service.ts'
/** Automations' branch condition "within opening hours", on the inbox's definition of them. */
export { withinOpeningHours } from './inbox.settings.ts'
/**
 * The knowledge module's AI marks a conversation it could not answer for a person (inside its transaction; the
 * account's open consoles hear of it at the commit).
 */
export async function markConversationForPerson(tx: Db, accountId: string, conversationId: string, reason: string) {
  await markForPerson(tx, accountId, conversationId, reason)
  await publishInboxChanges(tx, accountId, [{ type: 'conversation', conversation_id: conversationId }])
}
