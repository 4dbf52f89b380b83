import { randomUUID } from 'node:crypto'
import { type SQL, sql } from 'drizzle-orm'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { handOnEvents, recordEvent, recordEvents } from '../../platform/events/events.ts'
import { acceptsSql, emitSignals } from '../../platform/events/signals.ts'
import { notFound } from '../../platform/http/errors.ts'
import { type Page, toPage } from '../../platform/http/pagination.ts'
import { storeReceived } from '../../platform/storage/serving.ts'
import type { Storage } from '../../platform/storage/storage.ts'
import { contactNames, findOrCreateInboundContact, inboundContactsSql, recordOptinChange } from '../contacts/index.ts'
import * as outbound from './inbox.outbound.ts'
import * as repo from './inbox.repository.ts'
import type { SentTemplate } from './inbox.tables.ts'

export type InboxTenant = Pick<TenantContext, 'accountId'>
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

const recordChatOptOut: ChatOptOut = async (tx, clock, input) => {
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

/** The Message of section 2. */
export function messageView(row: repo.MessageRow) {
  return {
    id: row.id,
    conversation_id: row.conversationId,
    contact_id: row.contactId,
    channel: row.channel,
    direction: row.direction,
    type: row.type,
    text: row.text,
    media_url: row.mediaUrl,
    media_mime: row.mediaMime,
    status: row.status,
    template: row.template ?? null,
    created_at: row.createdAt.toISOString(),
  }
}

function historyView(row: repo.MessageRow) {
  return { ...messageView(row), automated: row.automated, ai: row.ai }
}

/** The data of message.received: exactly the Message fields of section 2. */
function messageEventData(row: repo.MessageRow): Record<string, unknown> {
  const { status: _status, template: _template, ...fields } = messageView(row)
  return fields
}

class DuplicateMessage extends Error {}

/** An inbound message waiting for its batch (receive). */
interface Receipt {
  accountId: string
  language: string
  incoming: IncomingMessage
  mediaKey: string | null
  resolve(message: repo.MessageRow | null): void
  reject(error: unknown): void
}

/** At most this many inbound messages are stored in one transaction. */
const RECEIVE_BATCH = 100

const STATUS_RANK: Record<MessageStatus, number> = { sent: 1, delivered: 2, read: 3, failed: 4 }

/**
 * Statuses arrive in any order; a message's status only moves forward (sent < delivered < read). `failed`
 * replaces sent and delivered, never read; nothing replaces read or failed.
 */
export function statusAdvances(current: MessageStatus | null, next: MessageStatus): boolean {
  if (current === null) return true
  if (current === 'read' || current === 'failed') return false
  return STATUS_RANK[next] > STATUS_RANK[current]
}

export function previewOf(type: string, text: string): string {
  const body = text.replace(/\s+/g, ' ').trim()
  if (body) return body.length > 120 ? `${body.slice(0, 119)}…` : body
  return `[${type}]`
}

export function inboxService(deps: InboxServiceDeps) {
  const { db, clock, storage } = deps
  const chatOptOut = deps.chatOptOut ?? recordChatOptOut
  const mediaUrl = (key: string) => `${deps.publicUrl}/public/media/${key}`

  async function applyStatusesIn(tx: Db, accountId: string, updates: IncomingStatus[]): Promise<number> {
    let changed = 0
    for (const channel of new Set(updates.map((u) => u.channel))) {
      const ofChannel = updates.filter((u) => u.channel === channel)
      const rows = await repo.outboundByProviderIds(
        tx,
        accountId,
        channel,
        ofChannel.map((u) => u.providerMessageId),
      )
      const current = new Map(rows.map((r) => [r.providerMessageId, r]))
      const heard: Parameters<MessageStatusListener>[2] = []
      // the status changes are written together, one statement for the batch (the last change of a message wins:
      // a status only moves forward)
      const changes = new Map<string, { id: string; status: MessageStatus; errorCode: string | null }>()
      for (const update of ofChannel) {
        const row = current.get(update.providerMessageId)
        if (!row) continue
        heard.push({ messageId: row.id, status: update.status, errorCode: update.errorCode, at: clock.now() })
        if (update.optedOut) {
          await chatOptOut(tx, clock, {
            accountId,
            contactId: row.contactId,
            source: 'provider_opt_out',
            evidence: { provider_code: update.errorCode, provider_message_id: update.providerMessageId },
          })
        }
        if (!statusAdvances(row.status, update.status)) continue
        changes.set(row.id, { id: row.id, status: update.status, errorCode: update.errorCode })
        current.set(update.providerMessageId, { ...row, status: update.status })
        changed++
      }
      await outbound.setMessageStatuses(tx, accountId, [...changes.values()])
      if (heard.length > 0) for (const listener of deps.statusListeners ?? []) await listener(tx, accountId, heard)
    }
    return changed
  }

  /**
   * Inbound messages waiting for their account and channel's transaction: one transaction at a time per account and
   * channel in this process (they take turns on the account's message clock anyway), and whatever arrived meanwhile
   * goes into the next one, so a burst costs a few statements per batch instead of per message. On PostgreSQL the
   * next batch may start once the running one holds the clock (inboundBatchesInFlight): its BEGIN, read and new
   * contacts overlap the other's listeners and commit, and its own write waits for that commit on the clock row, so
   * created_at still increases in commit order. What the overlap can meet is what two processes' batches meet (a copy
   * stored meanwhile, a new sender created by both, a deadlock): the batch is stored again message by message.
   */
  const inFlightLimit = Math.max(1, deps.inboundBatchesInFlight ?? 1)
  const receiving = new Map<string, Line>()
  interface Line {
    waiting: Receipt[]
    /** batches started and not yet settled */
    inFlight: number
    /** a started batch does not hold the clock yet: no other starts */
    opening: boolean
    /** a pump is scheduled for the next turn of the event loop */
    scheduled: boolean
  }

  function pump(key: string, line: Line) {
    while (line.waiting.length > 0 && line.inFlight < inFlightLimit && !line.opening) {
      const batch = line.waiting.splice(0, RECEIVE_BATCH)
      line.inFlight++
      line.opening = true
      let opened = false
      const open = () => {
        if (opened) return
        opened = true
        line.opening = false
        pump(key, line)
      }
      void receiveBatch(batch, open)
        .catch(async (error) => {
          if (batch.length === 1) {
            batch[0].reject(error)
            return
          }
          // one message's trouble (a concurrent copy in another process or batch, an invalid sender, a deadlock
          // with another batch) must not cost the others: each on its own, as a batch of one
          for (const receipt of batch) await receiveBatch([receipt]).catch((e) => receipt.reject(e))
        })
        .finally(() => {
          line.inFlight--
          open()
          pump(key, line)
          if (line.inFlight === 0 && line.waiting.length === 0 && !line.scheduled) receiving.delete(key)
        })
    }
  }

  /**
   * Stores inbound messages of one account and channel in one transaction: one statement reads the copies already
   * stored, the senders' contacts and conversations (locked) and what the listeners read; new senders get their
   * contact and conversation (with their events); the automation triggers hear message.received; one statement
   * writes every message in order with its clock, conversations and events, handed on to the webhook deliveries; then the
   * listeners run. Settles every receipt (null for a duplicate) or throws, having settled none.
   */
  async function receiveBatch(batch: Receipt[], holdsClock: () => void = () => {}): Promise<void> {
    const { accountId, incoming: first } = batch[0]
    const channel = first.channel
    const listeners = deps.inboundListeners ?? []
    const signalAccepts = acceptsSql(accountId, ['message.received'])
    const addressOf = (m: IncomingMessage) => (m.channel === 'chat' ? { phone: m.from } : { email: m.from })
    // the same provider message id twice in the batch: the later copy is a duplicate
    const seen = new Set<string>()
    const copies = new Set<Receipt>()
    for (const receipt of batch) {
      if (seen.has(receipt.incoming.providerMessageId)) copies.add(receipt)
      seen.add(receipt.incoming.providerMessageId)
    }
    const stored = await db
      .transaction(async (tx) => {
        const known = await repo.resolveInbound(tx, {
          accountId,
          channel,
          providerMessageIds: [...seen],
          contacts: inboundContactsSql(
            accountId,
            batch.map((r) => addressOf(r.incoming)),
          ),
          extras: [signalAccepts.sql, ...listeners.map((l) => l.preload?.(accountId) ?? sql`NULL::jsonb`)],
        })
        const fresh = batch.filter((r) => !copies.has(r) && !known.duplicates.has(r.incoming.providerMessageId))
        const drafts: Array<repo.InboundDraft & { receipt: Receipt; data: Record<string, unknown> }> = []
        for (const receipt of fresh) {
          const { incoming, language } = receipt
          const address = addressOf(incoming)
          const knownContact = known.contactIds.get(batch.indexOf(receipt))
          const contactId =
            knownContact ??
            (await findOrCreateInboundContact(tx, clock, { accountId, language, name: incoming.name, ...address }))
              .contactId
          let conversationId = knownContact ? known.conversationIds.get(knownContact) : undefined
          if (!conversationId) {
            const { conversation, created } = await repo.findOrCreateConversation(tx, {
              accountId,
              id: randomUUID(),
              contactId,
              channel,
              createdAt: clock.now(),
            })
            conversationId = conversation.id
            if (created) {
              await recordEvent(tx, clock, {
                accountId,
                name: 'conversation.created',
                contactId,
                data: {
                  id: conversation.id,
                  contact_id: contactId,
                  channel: conversation.channel,
                  created_at: conversation.createdAt.toISOString(),
                },
              })
            }
          }
          const draft = {
            accountId,
            id: randomUUID(),
            conversationId,
            contactId,
            channel,
            direction: 'inbound' as const,
            type: incoming.type,
            text: incoming.text,
            mediaUrl: receipt.mediaKey ? mediaUrl(receipt.mediaKey) : '',
            mediaMime: incoming.media?.mime ?? '',
            providerMessageId: incoming.providerMessageId,
          }
          // created_at is added by insertInboundMessagesInOrder, which writes the event with the message
          const data = messageEventData({
            ...draft,
            status: null,
            template: null,
            errorCode: null,
            automated: false,
            ai: false,
            createdAt: new Date(0),
          })
          const { created_at: _unknownYet, ...eventData } = data
          drafts.push({
            ...draft,
            preview: previewOf(incoming.type, incoming.text),
            eventId: randomUUID(),
            eventData,
            receipt,
            data,
          })
        }
        // the automation triggers hear them before the account's message clock is taken (held to the commit)
        await emitSignals(
          tx,
          clock,
          drafts.map((d) => ({ accountId, name: 'message.received' as const, contactId: d.contactId, data: d.data })),
          signalAccepts.read(known.preloaded[0]),
        )
        const messages = await repo.insertInboundMessagesInOrder(tx, {
          accountId,
          channel,
          drafts,
          now: clock.now(),
        })
        holdsClock()
        // a concurrent copy of a webhook (in another process) stored one first: undo the contacts, conversations and
        // events of the batch too, and store its messages again one by one
        if (messages.length < drafts.length) throw new DuplicateMessage()
        // what the events' consumers owe for them (webhook deliveries and their jobs), in this transaction, in order
        await handOnEvents(
          tx,
          clock,
          drafts.map((d) => ({ accountId, id: d.eventId, name: 'message.received' as const })),
        )
        for (const [at, message] of messages.entries()) {
          for (const [i, listener] of listeners.entries()) {
            await listener.run(
              tx,
              clock,
              {
                accountId,
                contactId: message.contactId,
                conversationId: message.conversationId,
                channel,
                messageId: message.id,
                providerMessageId: drafts[at].providerMessageId,
                type: message.type,
                text: message.text,
              },
              listener.preload ? { value: known.preloaded[i + 1] } : undefined,
            )
          }
        }
        return new Map(messages.map((m, at) => [drafts[at].receipt, m]))
      })
      .catch((error) => {
        if (error instanceof DuplicateMessage && batch.length === 1) return new Map<Receipt, repo.MessageRow>()
        throw error
      })
    for (const receipt of batch) receipt.resolve(stored.get(receipt) ?? null)
  }

  return {
    /**
     * Stores one inbound message: contact and conversation found or created, message stored once per provider
     * message id, media kept in our storage, message.received (and conversation.created) in the same
     * transaction. Returns null for a duplicate. Messages of one account and channel that arrive while its
     * previous transaction runs are stored together in the next one (see receiveBatch).
     */
    async receive(accountId: string, language: string, incoming: IncomingMessage) {
      // a copy of a media message is known before its file is kept (a text message's copy is found in the transaction)
      if (
        incoming.media &&
        (await repo.messageByProviderId(db, accountId, incoming.channel, incoming.providerMessageId))
      ) {
        return null
      }
      const mediaKey = incoming.media ? await storeReceived(storage, accountId, incoming.media) : null
      const stored = await new Promise<repo.MessageRow | null>((resolve, reject) => {
        const key = `${accountId}/${incoming.channel}`
        let line = receiving.get(key)
        if (!line) {
          line = { waiting: [], inFlight: 0, opening: false, scheduled: false }
          receiving.set(key, line)
        }
        line.waiting.push({ accountId, language, incoming, mediaKey, resolve, reject })
        if (!line.scheduled && !line.opening && line.inFlight < inFlightLimit) {
          line.scheduled = true
          const scheduled = line
          // after the other requests already read by this turn of the event loop (PGlite runs a query at once,
          // inside the call: started here, it would finish before any other webhook is even parsed)
          setImmediate(() => {
            scheduled.scheduled = false
            pump(key, scheduled)
            if (scheduled.inFlight === 0 && scheduled.waiting.length === 0) receiving.delete(key)
          })
        }
      })
      // A concurrent copy of the same webhook won: its media is the one kept.
      if (!stored && mediaKey) await storage.delete(mediaKey)
      return stored ? messageView(stored) : null
    },

    /** Records a message Herold sent through a provider, in the contact's conversation (created when missing). */
    async recordOutbound(
      accountId: string,
      input: {
        channel: Channel
        contactId: string
        type: string
        text: string
        /** null when the provider refused the send */
        providerMessageId: string | null
        automated?: boolean
        /** written by the built-in AI */
        ai?: boolean
        /** `failed` with the provider's error code when the provider refused the send */
        failure?: { errorCode: string }
        /** a template message: the template and the buttons the customer saw */
        template?: SentTemplate | null
      },
    ) {
      return db.transaction(async (tx) => {
        const { conversation, created } = await repo.findOrCreateConversation(tx, {
          accountId,
          id: randomUUID(),
          contactId: input.contactId,
          channel: input.channel,
          createdAt: clock.now(),
        })
        if (created) {
          await recordEvent(tx, clock, {
            accountId,
            name: 'conversation.created',
            contactId: input.contactId,
            data: {
              id: conversation.id,
              contact_id: input.contactId,
              channel: conversation.channel,
              created_at: conversation.createdAt.toISOString(),
            },
          })
        }
        const message = await repo.insertMessageInOrder(
          tx,
          {
            accountId,
            id: randomUUID(),
            conversationId: conversation.id,
            contactId: input.contactId,
            channel: input.channel,
            direction: 'outbound',
            type: input.type,
            text: input.text,
            providerMessageId: input.providerMessageId,
            status: input.failure ? 'failed' : 'sent',
            errorCode: input.failure?.errorCode ?? null,
            automated: input.automated ?? false,
            ai: input.ai ?? false,
            template: input.template ?? null,
          },
          { now: clock.now(), preview: previewOf(input.type, input.text) },
        )
        return message ? messageView(message) : null
      })
    },

    /**
     * recordOutbound for many messages of one account (a batch of template sends), in one transaction of a few
     * statements: the conversations found or created together, conversation.created for the new ones, then every
     * message in order in one statement. Answers the stored message id per input, in order (null: not stored).
     */
    async recordOutboundMany(
      accountId: string,
      inputs: Array<{
        channel: Channel
        contactId: string
        type: string
        text: string
        providerMessageId: string | null
        automated?: boolean
        ai?: boolean
        failure?: { errorCode: string }
        template?: SentTemplate | null
      }>,
    ): Promise<Array<string | null>> {
      if (inputs.length === 0) return []
      const ids = inputs.map(() => randomUUID())
      const stored = await db.transaction(async (tx) => {
        let kept = new Set<string>()
        for (const channel of new Set(inputs.map((i) => i.channel))) {
          const ofChannel = inputs.flatMap((input, at) => (input.channel === channel ? [{ input, id: ids[at] }] : []))
          const { byContact, created } = await outbound.findOrCreateConversations(tx, {
            accountId,
            channel,
            contactIds: ofChannel.map((o) => o.input.contactId),
            now: clock.now(),
            newId: randomUUID,
          })
          await recordEvents(
            tx,
            clock,
            created.map((conversation) => ({
              accountId,
              name: 'conversation.created' as const,
              contactId: conversation.contactId,
              data: {
                id: conversation.id,
                contact_id: conversation.contactId,
                channel: conversation.channel,
                created_at: conversation.createdAt.toISOString(),
              },
            })),
          )
          const written = await outbound.insertOutboundMessagesInOrder(tx, {
            accountId,
            channel,
            now: clock.now(),
            drafts: ofChannel.flatMap(({ input, id }) => {
              const conversation = byContact.get(input.contactId)
              if (!conversation) return []
              return [
                {
                  id,
                  conversationId: conversation.id,
                  contactId: input.contactId,
                  type: input.type,
                  text: input.text,
                  providerMessageId: input.providerMessageId,
                  status: input.failure ? ('failed' as const) : ('sent' as const),
                  errorCode: input.failure?.errorCode ?? null,
                  automated: input.automated ?? false,
                  ai: input.ai ?? false,
                  template: input.template ?? null,
                  preview: previewOf(input.type, input.text),
                },
              ]
            }),
          })
          kept = new Set([...kept, ...written])
        }
        return kept
      })
      return ids.map((id) => (stored.has(id) ? id : null))
    },

    /** Applies provider status updates; a status never moves backwards. Unknown message ids are ignored. */
    async applyStatuses(accountId: string, updates: IncomingStatus[]): Promise<number> {
      if (updates.length === 0) return 0
      return db.transaction((tx) => applyStatusesIn(tx, accountId, updates))
    },

    /** applyStatuses inside the caller's transaction (a batch of status jobs finished in the same commit). */
    applyStatusesIn,

    /** Marks the contact opted out of chat after the provider refused a send with 131050. */
    async optOut(accountId: string, contactId: string, evidence: Record<string, unknown>): Promise<void> {
      await db.transaction((tx) =>
        chatOptOut(tx, clock, { accountId, contactId, source: 'provider_opt_out', evidence }),
      )
    },

    lastInboundAt: (accountId: string, contactId: string, channel: Channel) =>
      repo.lastInboundAt(db, accountId, contactId, channel),

    async listConversations(
      tenant: InboxTenant,
      query: {
        channel?: Channel
        needs_person?: boolean
        sort?: 'created_at' | 'last_message_at'
        limit: number
        offset: number
      },
    ): Promise<Page<ReturnType<typeof conversationView>>> {
      const rows = await repo.listConversations(db, tenant.accountId, { ...query, sort: query.sort ?? 'created_at' })
      const page = toPage(rows, query.limit, query.offset)
      const names = await contactNames(
        db,
        tenant.accountId,
        page.items.map((r) => r.contactId),
      )
      return { ...page, items: page.items.map((r) => conversationView(r, names.get(r.contactId) ?? '')) }
    },

    /** The newest `limit` messages after `offset` from the newest end, oldest first within the page. */
    async conversationMessages(tenant: InboxTenant, id: string, query: { limit: number; offset: number }) {
      const conversation = UUID.test(id) ? await repo.findConversation(db, tenant.accountId, id) : undefined
      if (!conversation) throw notFound('conversation')
      const page = toPage(await repo.conversationMessages(db, tenant.accountId, id, query), query.limit, query.offset)
      return { ...page, items: page.items.reverse().map(historyView) }
    },

    async listMessages(
      tenant: InboxTenant,
      query: {
        direction: 'inbound' | 'outbound'
        created_after?: string
        conversation_id?: string
        limit: number
        offset: number
      },
    ) {
      const rows = await repo.listMessages(db, tenant.accountId, {
        direction: query.direction,
        createdAfter: query.created_after ? new Date(query.created_after) : undefined,
        conversationId: query.conversation_id,
        limit: query.limit,
        offset: query.offset,
      })
      const page = toPage(rows, query.limit, query.offset)
      return { ...page, items: page.items.map(messageView) }
    },
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function conversationView(row: repo.ConversationRow, contactName: string) {
  return {
    id: row.id,
    contact: { id: row.contactId, name: contactName },
    contact_id: row.contactId,
    channel: row.channel,
    last_message: {
      preview: row.lastMessagePreview,
      direction: row.lastMessageDirection,
      at: row.lastMessageAt.toISOString(),
    },
    automated_only: row.automatedOnly,
    unread_count: row.unreadCount,
    needs_person: row.needsPerson,
    needs_person_reason: row.needsPersonReason,
    status: row.status,
    closed_at: row.closedAt ? row.closedAt.toISOString() : null,
    assignee_id: row.assigneeId,
    created_at: row.createdAt.toISOString(),
    last_message_at: row.lastMessageAt.toISOString(),
  }
}

export type InboxService = ReturnType<typeof inboxService>
