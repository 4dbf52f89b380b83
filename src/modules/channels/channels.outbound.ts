import { randomUUID } from 'node:crypto'
import { AppError } from '../../platform/http/errors.ts'
import { countProviderError, countSends, type SendOrigin } from '../../platform/metrics/metrics.ts'
import { span } from '../../platform/tracing/tracing.ts'
import type { ChannelAccess } from './channels.access.ts'
import type {
  BatchSendOutcome,
  ChannelsServiceDeps,
  EmailCredentials,
  SendOutcome,
  ShownTemplate,
  TemplateSendInput,
} from './channels.ports.ts'
import {
  type ChatProvider,
  type EmailProvider,
  type MappedError,
  mediaKindOf,
  type TemplateAtProvider,
  type TemplateMessage,
  takesCaption,
} from './channels.provider.ts'
import * as repo from './channels.repository.ts'
import { effectiveRate } from './pacer.ts'
import { sandboxEmailProvider } from './sandbox.provider.ts'

/**
 * What goes out: text and template messages through the connected number at its pace, stored as outbound messages;
 * the number's templates at the provider; e-mail through the account's e-mail provider.
 */
export function channelOutbound(
  deps: Pick<ChannelsServiceDeps, 'db' | 'clock' | 'secrets' | 'pacer' | 'smtp' | 'inbox'>,
  access: Pick<ChannelAccess, 'connectedChat' | 'requireSendingPossible'>,
) {
  const { db, clock, secrets } = deps
  const { connectedChat, requireSendingPossible } = access
  const smtpProviders = new Map<string, EmailProvider>()

  async function afterSend(
    accountId: string,
    contactId: string,
    result: Awaited<ReturnType<ChatProvider['sendText']>>,
    message: {
      type: string
      text: string
      automated?: boolean
      ai?: boolean
      template?: ShownTemplate | null
      /** a media message: the file's public address and type, kept on the outbound message */
      media?: { url: string; mime: string } | null
    },
  ): Promise<SendOutcome> {
    const origin: SendOrigin = message.ai ? 'ai' : message.automated ? 'system' : 'conversation'
    countSends({ channel: 'chat', origin, outcome: result.ok ? 'sent' : 'failed', accountId })
    if (!result.ok) {
      if (result.error.kind === 'opted_out') {
        await deps.inbox.optOut(accountId, contactId, { provider_code: result.error.providerCode })
      }
      const failed = await deps.inbox.recordOutbound(accountId, {
        channel: 'chat',
        contactId,
        type: message.type,
        text: message.text,
        providerMessageId: null,
        automated: message.automated,
        ai: message.ai,
        template: message.template ?? null,
        media: message.media ?? null,
        failure: { errorCode: result.error.providerCode },
      })
      return { ...result, message: failed }
    }
    const stored = await deps.inbox.recordOutbound(accountId, {
      channel: 'chat',
      contactId,
      type: message.type,
      text: message.text,
      providerMessageId: result.providerMessageId,
      automated: message.automated,
      ai: message.ai,
      template: message.template ?? null,
      media: message.media ?? null,
    })
    return { ok: true, messageId: stored?.id ?? null, providerMessageId: result.providerMessageId, message: stored }
  }

  /**
   * Free text to a contact through the connected number, paced per number; stored as an outbound message
   * (`automated` for Herold's own messages such as the opt-out confirmation, `ai` for the built-in AI's replies).
   */
  async function sendText(
    accountId: string,
    input: { contactId: string; to: string; text: string },
    options: { automated?: boolean; ai?: boolean } = {},
  ): Promise<SendOutcome> {
    await requireSendingPossible(accountId)
    const chat = await connectedChat(accountId)
    await deps.pacer.pace(
      accountId,
      chat.row.phoneNumberId,
      effectiveRate(chat.row.messagesPerSecond, chat.row.coexistence),
    )
    const result = await providerCall(chat.row.provider, 'sendText', () =>
      chat.provider.sendText(chat.connection, { ...input, sendId: randomUUID() }),
    )
    return afterSend(accountId, input.contactId, result, { type: 'text', text: input.text, ...options })
  }

  return {
    /** 409 chat_not_connected unless a chat number is connected; the checks of requests arriving together are one statement. */
    async requireChatConnected(accountId: string): Promise<void> {
      await connectedChat(accountId, (await repo.chatConnectionBatched(db, accountId)) ?? null)
    },

    sendText,

    /**
     * A file as a media message to a contact through the connected number (within the 24-hour window, like free
     * text), the text as its caption; stored as an outbound message with the file's address and type. A kind without
     * a caption (audio) goes after the text sent as free text; a refused text sends no file.
     */
    async sendMedia(
      accountId: string,
      input: {
        contactId: string
        to: string
        text: string
        media: { url: string; mime: string; filename?: string | null }
      },
    ): Promise<SendOutcome> {
      const kind = mediaKindOf(input.media.mime)
      if (input.text !== '' && !takesCaption(kind)) {
        const text = await sendText(accountId, { contactId: input.contactId, to: input.to, text: input.text })
        if (!text.ok) return text
      }
      await requireSendingPossible(accountId)
      const chat = await connectedChat(accountId)
      await deps.pacer.pace(
        accountId,
        chat.row.phoneNumberId,
        effectiveRate(chat.row.messagesPerSecond, chat.row.coexistence),
      )
      const caption = takesCaption(kind) ? input.text : ''
      const result = await providerCall(chat.row.provider, 'sendMedia', () =>
        chat.provider.sendMedia(chat.connection, {
          to: input.to,
          contactId: input.contactId,
          kind,
          url: input.media.url,
          mime: input.media.mime,
          filename: input.media.filename ?? null,
          caption,
          sendId: randomUUID(),
        }),
      )
      return afterSend(accountId, input.contactId, result, {
        type: kind,
        text: caption,
        media: { url: input.media.url, mime: input.media.mime },
      })
    },

    /**
     * A template message through the connected number, paced per number; works outside the 24-hour window. Stored as
     * an outbound message when sent or refused; a throughput refusal (retry_later) stores nothing, since the caller
     * sends it again later. `sendId` is the caller's send record, handed to the provider.
     */
    async sendTemplate(
      accountId: string,
      input: Omit<TemplateMessage, 'sendId'> & {
        contactId: string
        text: string
        sendId?: string
        /** what the message view shows: the template's id and name and the buttons the customer saw */
        shown?: ShownTemplate
      },
      options: { automated?: boolean } = {},
    ): Promise<SendOutcome | { ok: false; error: MappedError; message: null }> {
      await requireSendingPossible(accountId)
      const chat = await connectedChat(accountId)
      await deps.pacer.pace(
        accountId,
        chat.row.phoneNumberId,
        effectiveRate(chat.row.messagesPerSecond, chat.row.coexistence),
      )
      const { contactId, shown, ...message } = input
      const result = await providerCall(chat.row.provider, 'sendTemplate', () =>
        chat.provider.sendTemplate(chat.connection, { ...message, sendId: input.sendId ?? randomUUID() }),
      )
      if (!result.ok && result.error.kind === 'retry_later') {
        countSends({ channel: 'chat', origin: 'system', outcome: 'retried', accountId })
        return { ...result, message: null }
      }
      return afterSend(accountId, contactId, result, {
        type: 'template',
        text: input.text,
        template: shown ?? null,
        ...options,
      })
    },

    /**
     * sendTemplate for many messages of one account (a batch of the send worker): the account and the number are
     * checked once, every message waits for its slot (the one its job's claim booked on the number's lane, or one
     * it books) and the provider calls run as their slots come, and the outbound messages are stored together (inbox recordOutboundMany). A failed check (paused,
     * no number) answers `thrown` with its AppError for every message: none reached the provider.
     */
    async sendTemplates(
      accountId: string,
      inputs: TemplateSendInput[],
      options: { automated?: boolean } = {},
    ): Promise<BatchSendOutcome[]> {
      // both checks at once (two connections on PostgreSQL); the paused account is reported first, as in sendTemplate
      const [possible, connected] = await Promise.allSettled([
        requireSendingPossible(accountId),
        connectedChat(accountId),
      ])
      const refused = possible.status === 'rejected' ? possible : connected.status === 'rejected' ? connected : null
      if (refused || connected.status === 'rejected') {
        const error = refused?.reason
        return inputs.map(() => ({ ok: false as const, thrown: error }))
      }
      const chat = connected.value
      const rate = effectiveRate(chat.row.messagesPerSecond, chat.row.coexistence)
      const results = await Promise.all(
        inputs.map(async ({ contactId: _contact, shown: _shown, automated: _automated, slotAt, ...message }) => {
          if (slotAt) await deps.pacer.atSlot(accountId, chat.row.phoneNumberId, rate, slotAt)
          else await deps.pacer.pace(accountId, chat.row.phoneNumberId, rate)
          const sentAt = clock.now()
          return providerCall(chat.row.provider, 'sendTemplate', () =>
            chat.provider.sendTemplate(chat.connection, message),
          ).then(
            (result) => ({ result, sentAt }),
            (error: unknown) => ({ thrown: error }),
          )
        }),
      )
      // 131050: the customer stopped marketing messages at WhatsApp (rare; one at a time)
      for (const [at, done] of results.entries()) {
        if ('result' in done && !done.result.ok && done.result.error.kind === 'opted_out') {
          await deps.inbox.optOut(accountId, inputs[at].contactId, { provider_code: done.result.error.providerCode })
        }
      }
      const toStore = results.flatMap((done, at) =>
        'result' in done && (done.result.ok || done.result.error.kind !== 'retry_later') ? [{ done, at }] : [],
      )
      const stored = await deps.inbox.recordOutboundMany(
        accountId,
        toStore.map(({ done, at }) => {
          const result = (done as { result: Awaited<ReturnType<ChatProvider['sendTemplate']>> }).result
          return {
            channel: 'chat' as const,
            contactId: inputs[at].contactId,
            type: 'template',
            text: inputs[at].text,
            providerMessageId: result.ok ? result.providerMessageId : null,
            automated: inputs[at].automated ?? options.automated,
            template: inputs[at].shown ?? null,
            ...(result.ok ? {} : { failure: { errorCode: result.error.providerCode } }),
          }
        }),
      )
      const messageIds = new Map(toStore.map(({ at }, i) => [at, stored[i]]))
      return results.map((done, at): BatchSendOutcome => {
        if (!('result' in done)) return { ok: false, thrown: done.thrown }
        const messageId = messageIds.get(at) ?? null
        const { sentAt } = done
        if (done.result.ok) return { ok: true, messageId, providerMessageId: done.result.providerMessageId, sentAt }
        return { ok: false, error: done.result.error, messageId, sentAt }
      })
    },

    async submitTemplate(accountId: string, template: TemplateAtProvider) {
      const chat = await connectedChat(accountId)
      return providerCall(chat.row.provider, 'submitTemplate', () =>
        chat.provider.submitTemplate(chat.connection, template),
      )
    },
    async readTemplate(accountId: string, template: { name: string; language: string }) {
      const chat = await connectedChat(accountId)
      return providerCall(chat.row.provider, 'readTemplate', () =>
        chat.provider.readTemplate(chat.connection, template),
      )
    },
    async deleteTemplate(
      accountId: string,
      template: { name: string; language: string; providerTemplateId?: string | null },
    ) {
      const chat = await connectedChat(accountId)
      return providerCall(chat.row.provider, 'deleteTemplate', () =>
        chat.provider.deleteTemplate(chat.connection, template),
      )
    },

    /** One e-mail through the account's e-mail provider (smtp or sandbox). */
    async sendEmail(
      accountId: string,
      message: { to: string; subject: string; text: string; html?: string; headers?: Record<string, string> },
    ) {
      await requireSendingPossible(accountId)
      const row = await repo.connectionOf(db, accountId, 'email')
      if (row?.status !== 'connected') throw new AppError(409, 'email_not_connected', 'No e-mail channel is connected')
      const credentials = row.credentialsSealed
        ? (JSON.parse(secrets.open(row.credentialsSealed)) as EmailCredentials)
        : {}
      let provider: EmailProvider
      if (row.provider === 'smtp' && credentials.smtpUrl) {
        const known = smtpProviders.get(credentials.smtpUrl)
        provider = known ?? deps.smtp(credentials.smtpUrl)
        if (!known) smtpProviders.set(credentials.smtpUrl, provider)
      } else provider = sandboxEmailProvider({ db, clock, accountId })
      const sent = await providerCall(row.provider, 'sendEmail', () =>
        provider.send({ from: row.address, ...message }),
      ).catch((error: unknown) => {
        countSends({ channel: 'email', origin: 'system', outcome: 'failed', accountId })
        throw error
      })
      countSends({ channel: 'email', origin: 'system', outcome: 'sent', accountId })
      return sent
    },

    async close() {
      for (const provider of smtpProviders.values()) await provider.close?.()
    },
  }
}

/**
 * One call of a provider, as a span when tracing is on; its errors counted by the provider's code (a refusal it
 * answered) or `unreachable` (it threw: no answer, a timeout, a refused connection).
 */
async function providerCall<T>(provider: string, operation: string, call: () => Promise<T>): Promise<T> {
  try {
    const result = await span(`provider ${operation}`, { 'herold.provider': provider }, call)
    const refused = result as { ok?: boolean; error?: { providerCode?: unknown } }
    if (refused?.ok === false) countProviderError(provider, String(refused.error?.providerCode ?? 'failed'))
    return result
  } catch (error) {
    countProviderError(provider, error instanceof AppError ? error.code : 'unreachable')
    throw error
  }
}
