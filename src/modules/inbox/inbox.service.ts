import { inboxManaging } from './inbox.manage.ts'
import { inboxNotes } from './inbox.notes.ts'
import { inboxReading } from './inbox.read.ts'
import { inboundReceiving } from './inbox.receive.ts'
import { outboundRecording } from './inbox.record.ts'
import { inboxRouting } from './inbox.routing.ts'
import type { InboxServiceDeps } from './inbox.types.ts'

export type {
  Channel,
  ChatOptOut,
  InboundListener,
  InboundStored,
  InboxServiceDeps,
  InboxTenant,
  IncomingMessage,
  IncomingStatus,
  MessageStatus,
  MessageStatusListener,
} from './inbox.types.ts'
export { conversationView, messageView, previewOf, statusAdvances } from './inbox.views.ts'

/**
 * The inbox: receiving inbound messages and statuses (inbox.receive.ts), recording what Herold sent
 * (inbox.record.ts), reading conversations and messages (inbox.read.ts) and managing a conversation's handling
 * (inbox.manage.ts), the team's internal notes and mentions (inbox.notes.ts), and routing it: automatic assignment, opening hours and the away message (inbox.routing.ts).
 */
export function inboxService(deps: InboxServiceDeps) {
  return {
    ...inboundReceiving(deps),
    ...outboundRecording(deps),
    ...inboxReading(deps),
    ...inboxManaging(deps),
    ...inboxNotes(deps),
    ...inboxRouting(deps),
  }
}

export type InboxService = ReturnType<typeof inboxService>
