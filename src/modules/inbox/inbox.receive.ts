import { randomUUID } from 'node:crypto'
import { sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { handOnEvents, recordEvent } from '../../platform/events/events.ts'
import { acceptsSql, emitSignals } from '../../platform/events/signals.ts'
import { storeReceived } from '../../platform/storage/serving.ts'
import { findOrCreateInboundContact, inboundContactsSql } from '../contacts/index.ts'
import { publishInboxChanges } from './inbox.live.ts'
import * as outbound from './inbox.outbound.ts'
import * as repo from './inbox.repository.ts'
import {
  type InboxServiceDeps,
  type IncomingMessage,
  type IncomingStatus,
  type MessageStatus,
  type MessageStatusListener,
  recordChatOptOut,
} from './inbox.types.ts'
import { messageEventData, messageView, previewOf, statusAdvances } from './inbox.views.ts'

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

/**
 * Receiving: inbound messages stored in batches per account and channel (receive), provider statuses applied
 * (applyStatuses) and provider opt-outs (optOut).
 */
export function inboundReceiving(deps: InboxServiceDeps) {
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
      const byId = new Map(rows.map((r) => [r.id, r.conversationId]))
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
      // one notification for the batch (a campaign's statuses come by the thousand), none when nothing moved
      await publishInboxChanges(
        tx,
        accountId,
        [...changes.values()].map((c) => ({
          type: 'message_status',
          conversation_id: byId.get(c.id) ?? '',
          message_id: c.id,
        })),
      )
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
        // the open consoles of the account hear of them at the commit (before the message clock is taken: the
        // batch is stored whole or rolled back, and a rolled-back notification is never heard)
        await publishInboxChanges(
          tx,
          accountId,
          drafts.map((d) => ({ type: 'message', conversation_id: d.conversationId, message_id: d.id })),
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
  }
}
