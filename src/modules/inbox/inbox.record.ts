import { randomUUID } from 'node:crypto'
import { recordEvent, recordEvents } from '../../platform/events/events.ts'
import { publishInboxChanges } from './inbox.live.ts'
import * as outbound from './inbox.outbound.ts'
import * as repo from './inbox.repository.ts'
import type { SentTemplate } from './inbox.tables.ts'
import type { Channel, InboxServiceDeps } from './inbox.types.ts'
import { messageView, previewOf } from './inbox.views.ts'

/** A message Herold sent through a provider, to record in its contact's conversation. */
export interface OutboundRecord {
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
  /** a media message: the file's public address and type, kept as an inbound message's media is */
  media?: { url: string; mime: string } | null
}

/** Recording outbound: the messages Herold sent through a provider, in their contacts' conversations. */
export function outboundRecording(deps: InboxServiceDeps) {
  const { db, clock } = deps

  return {
    /** Records a message Herold sent through a provider, in the contact's conversation (created when missing). */
    async recordOutbound(accountId: string, input: OutboundRecord) {
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
        const id = randomUUID()
        // the account's open consoles hear of it at the commit; before the message clock is taken, which is held to
        // the commit (a copy of a provider message id is not stored: the consoles refetch for nothing)
        await publishInboxChanges(tx, accountId, [
          { type: 'message', conversation_id: conversation.id, message_id: id },
        ])
        const message = await repo.insertMessageInOrder(
          tx,
          {
            accountId,
            id,
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
            mediaUrl: input.media?.url ?? '',
            mediaMime: input.media?.mime ?? '',
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
    async recordOutboundMany(accountId: string, inputs: OutboundRecord[]): Promise<Array<string | null>> {
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
          // heard by the account's open consoles at the commit (one notification per channel of the batch; a big
          // batch names its conversations only, or asks for a resync); before the message clock is taken
          await publishInboxChanges(
            tx,
            accountId,
            ofChannel.flatMap(({ input, id }) => {
              const conversation = byContact.get(input.contactId)
              return conversation
                ? [{ type: 'message' as const, conversation_id: conversation.id, message_id: id }]
                : []
            }),
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
  }
}
