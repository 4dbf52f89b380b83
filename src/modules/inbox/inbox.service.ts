import { inboxManaging } from './inbox.manage.ts'
import { inboxReading } from './inbox.read.ts'
import { inboundReceiving } from './inbox.receive.ts'
import { outboundRecording } from './inbox.record.ts'
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
 * (inbox.manage.ts).
 */
export function inboxService(deps: InboxServiceDeps) {
  return {
    ...inboundReceiving(deps),
    ...outboundRecording(deps),
    ...inboxReading(deps),
    ...inboxManaging(deps),
  }
}

export type InboxService = ReturnType<typeof inboxService>
