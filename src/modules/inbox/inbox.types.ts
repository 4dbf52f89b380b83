import type { SQL } from 'drizzle-orm'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { Storage } from '../../platform/storage/storage.ts'
import { recordOptinChange } from '../contacts/index.ts'

/** the account, and who acts (a member's session names them in the live events) */
export type InboxTenant = Pick<TenantContext, 'accountId'> & { actor?: Pick<TenantContext['actor'], 'userId'> }
export type Channel = 'chat' | 'email'
export type MessageStatus = 'sent' | 'delivered' | 'read' | 'failed'

/** An inbound message as any provider hands it over, media bytes already fetched. */
export interface IncomingMessage {
  channel: Channel
  providerMessageId: string
  /** E.164 phone (chat) or e-mail address */
  from: string
  name: string
  type: string
  text: string
  media: { data: Buffer; mime: string } | null
}

export interface IncomingStatus {
  channel: Channel
  providerMessageId: string
  status: MessageStatus
  /** provider error code, for failed */
  errorCode: string | null
  /** the customer opted out of marketing (131050): chat opt-in becomes opted_out with a consent record */
  optedOut: boolean
}

/** A stored inbound message, handed to listeners inside the transaction that stores it. */
export interface InboundStored {
  accountId: string
  contactId: string
  conversationId: string
  channel: Channel
  messageId: string
  providerMessageId: string
  type: string
  text: string
}

/**
 * Reacts to an inbound message in the transaction that stores it (the consent module's keywords and confirm
 * button): what it writes or enqueues commits with the message, or not at all.
 */
export interface InboundListener {
  /**
   * What the listener reads for every message, as a scalar SQL expression (jsonb) the inbox folds into its own
   * first statement of the transaction; its value comes to `run` as `preloaded`.
   */
  preload?(accountId: string): SQL
  run(tx: Db, clock: Clock, message: InboundStored, preloaded?: { value: unknown }): Promise<void>
}

/**
 * Opts a contact out of chat after the provider refused a send with 131050 (the customer stopped marketing
 * messages at WhatsApp), in the caller's transaction. The consent module declares the one opt-out path it shares
 * with the stop keyword (its reactions.chatOptOut); without it, the opt-in change alone is recorded.
 */
export type ChatOptOut = (
  tx: Db,
  clock: Clock,
  input: { accountId: string; contactId: string; source: string; evidence: Record<string, unknown> },
) => Promise<void>

export const recordChatOptOut: ChatOptOut = async (tx, clock, input) => {
  await recordOptinChange(tx, clock, { ...input, channel: 'chat', to: 'opted_out' })
}

/**
 * Told, inside applyStatuses' transaction, of every provider status that arrived for a known outbound message (also
 * the ones that did not move the message: a listener keeps its own forward-only order).
 */
export type MessageStatusListener = (
  tx: Db,
  accountId: string,
  updates: Array<{ messageId: string; status: MessageStatus; errorCode: string | null; at: Date }>,
) => Promise<void>

export interface InboxServiceDeps {
  db: Db
  clock: Clock
  storage: Storage
  /** modules that follow outbound messages (template send records) */
  statusListeners?: readonly MessageStatusListener[]
  /** the base of media_url: `${publicUrl}/public/media/` */
  publicUrl: string
  /** called for every newly stored inbound message, inside its transaction */
  inboundListeners?: readonly InboundListener[]
  /** how a provider opt-out (131050) is applied; default: the opt-in change alone */
  chatOptOut?: ChatOptOut
  /**
   * Inbound batches of one account and channel that may be in flight at once (default 1). With 2 (PostgreSQL) the
   * next batch starts once the one before holds the account's message clock: its read overlaps the other's commit.
   */
  inboundBatchesInFlight?: number
}
