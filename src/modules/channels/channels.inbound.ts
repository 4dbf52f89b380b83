import { createHash, timingSafeEqual } from 'node:crypto'
import type { Account } from '../../platform/auth/accounts.service.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { countInbound } from '../../platform/metrics/metrics.ts'
import { type ChannelAccess, UUID } from './channels.access.ts'
import type { ChannelsServiceDeps, EmailCredentials } from './channels.ports.ts'
import { type ChatConnection, type ChatProvider, InboundRejected } from './channels.provider.ts'
import * as repo from './channels.repository.ts'
import type { SandboxInbound } from './sandbox.provider.ts'

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** What arrives: provider webhooks (messages and statuses), the sandbox's inbound, e-mail piped in by a mail server. */
export function channelInbound(
  deps: Pick<ChannelsServiceDeps, 'db' | 'secrets' | 'inbox' | 'templateStatuses'>,
  access: Pick<ChannelAccess, 'accountOrNotFound' | 'chatConnection' | 'connectedChat'>,
) {
  const { db, secrets } = deps
  const { accountOrNotFound, chatConnection, connectedChat } = access

  /**
   * The account and its chat number for a provider webhook. Webhooks of one account that arrive while its read runs
   * share the next read (started after they arrived, so none sees older state than a read of its own would): a burst
   * costs one read per round trip instead of one per request.
   */
  const webhookReads = new Map<string, Array<{ resolve(row: WebhookTarget): void; reject(error: unknown): void }>>()
  type WebhookTarget = Awaited<ReturnType<typeof repo.accountWithConnection>>
  function webhookTarget(accountId: string): Promise<WebhookTarget> {
    return new Promise((resolve, reject) => {
      const waiting = webhookReads.get(accountId)
      if (waiting) {
        waiting.push({ resolve, reject })
        return
      }
      webhookReads.set(accountId, [])
      const readFor = async (group: Array<{ resolve(row: WebhookTarget): void; reject(error: unknown): void }>) => {
        try {
          const row = await repo.accountWithConnection(db, accountId, 'chat')
          for (const one of group) one.resolve(row)
        } catch (error) {
          for (const one of group) one.reject(error)
        }
        const next = webhookReads.get(accountId) ?? []
        if (next.length === 0) webhookReads.delete(accountId)
        else {
          webhookReads.set(accountId, [])
          void readFor(next)
        }
      }
      // after the other webhooks already read by this turn of the event loop (see the inbox's receive)
      setImmediate(() => void readFor([{ resolve, reject }, ...(webhookReads.get(accountId) ?? []).splice(0)]))
    })
  }

  async function statusesFrom(accountId: string, batch: ReturnType<ChatProvider['parseInbound']>) {
    return deps.inbox.applyStatuses(
      accountId,
      batch.statuses.map((s) => ({
        channel: 'chat' as const,
        providerMessageId: s.providerMessageId,
        status: s.status,
        errorCode: s.error?.providerCode ?? null,
        optedOut: s.error?.kind === 'opted_out',
      })),
    )
  }

  async function storeInbound(
    account: Account,
    chat: { connection: ChatConnection; provider: ChatProvider },
    batch: ReturnType<ChatProvider['parseInbound']>,
  ) {
    let stored = 0
    for (const message of batch.messages) {
      let media: { data: Buffer; mime: string } | null = null
      if (message.media?.data) media = { data: message.media.data, mime: message.media.mime }
      else if (message.media?.providerMediaId) {
        media = await chat.provider.fetchMedia(chat.connection, message.media.providerMediaId)
      }
      const saved = await deps.inbox.receive(account.id, account.language, {
        channel: 'chat',
        providerMessageId: message.providerMessageId,
        from: message.from,
        name: message.name,
        type: message.type,
        text: message.text,
        media,
      })
      if (saved) stored++
    }
    countInbound('chat', account.id, stored)
    const statuses = await statusesFrom(account.id, batch)
    if (batch.templates?.length) await deps.templateStatuses?.(account.id, batch.templates)
    return { received: batch.messages.length, stored, statuses }
  }

  const inbound = {
    /** The webhook's GET handshake: hub.challenge back when hub.verify_token matches the connection's. */
    async verifyWebhook(accountId: string, query: Record<string, string | undefined>): Promise<string> {
      await accountOrNotFound(accountId)
      const row = await repo.connectionOf(db, accountId, 'chat')
      if (row?.status !== 'connected' || row.provider !== 'whatsapp-cloud') throw notFound('webhook')
      const { verifyToken } = chatConnection(row).credentials
      if (query['hub.mode'] !== 'subscribe' || !verifyToken || query['hub.verify_token'] !== verifyToken) {
        throw new AppError(403, 'forbidden', 'hub.verify_token does not match', { key: 'verify_token_mismatch' })
      }
      return query['hub.challenge'] ?? ''
    },

    /**
     * The account and its connected number of a provider webhook, or the 404 it answers: asked before the body is
     * read (hookRoutes), so a webhook to an unknown account or provider costs no upload.
     */
    async chatWebhookTarget(accountId: string, providerName: string) {
      // the account and its number in one read
      const found = UUID.test(accountId) ? await webhookTarget(accountId) : undefined
      if (!found) throw notFound('account')
      if (found.connection?.status !== 'connected' || found.connection.provider !== providerName) {
        throw notFound('webhook')
      }
      return found
    },

    /** A provider webhook: verified over the raw body, then messages stored and statuses applied. */
    async receiveChatWebhook(
      accountId: string,
      providerName: string,
      request: { headers: Record<string, string | string[] | undefined>; rawBody: Buffer },
      target?: WebhookTarget,
    ) {
      const found = target ?? (await inbound.chatWebhookTarget(accountId, providerName))
      const { account, connection: row } = found
      if (!account || row?.status !== 'connected' || row.provider !== providerName) throw notFound('webhook')
      const chat = await connectedChat(account.id, row)
      let batch: ReturnType<ChatProvider['parseInbound']>
      try {
        batch = chat.provider.parseInbound(chat.connection, request)
      } catch (error) {
        if (error instanceof InboundRejected) {
          throw new AppError(error.status, error.status === 401 ? 'unauthorized' : 'bad_request', error.message, {
            key: error.status === 401 ? 'signature_invalid' : 'bad_request',
          })
        }
        throw error
      }
      return storeInbound(account, chat, batch)
    },

    /** Exists only while the sandbox is the account's chat provider (404 otherwise). */
    async sandboxInbound(accountId: string, input: SandboxInbound) {
      const account = await accountOrNotFound(accountId)
      const row = await repo.connectionOf(db, account.id, 'chat')
      if (row?.status !== 'connected' || row.provider !== 'sandbox') {
        throw notFound('sandbox (the chat channel is not connected to the sandbox provider)')
      }
      const chat = await connectedChat(account.id)
      const batch = chat.provider.parseInbound(chat.connection, {
        headers: {},
        rawBody: Buffer.from(JSON.stringify(input)),
      })
      return storeInbound(account, chat, batch)
    },

    /**
     * The account of an inbound e-mail once its channel is connected and the token matches, or the 404 or 401 it
     * answers: asked before the body is read (hookRoutes) and again by receiveEmail.
     */
    async admitEmail(accountId: string, token: string) {
      const account = await accountOrNotFound(accountId)
      const row = await repo.connectionOf(db, account.id, 'email')
      if (row?.status !== 'connected') throw notFound('e-mail channel')
      const { inboundToken } = row.credentialsSealed
        ? (JSON.parse(secrets.open(row.credentialsSealed)) as EmailCredentials)
        : ({} as EmailCredentials)
      if (!inboundToken || !sameSecret(token, inboundToken)) {
        throw new AppError(401, 'unauthorized', 'The inbound token does not match', { key: 'inbound_token_invalid' })
      }
      return account
    },

    /** A raw MIME message piped in by any mail server: stored as an inbound e-mail message. */
    async receiveEmail(accountId: string, token: string, raw: Buffer) {
      const account = await inbound.admitEmail(accountId, token)
      // loaded on the first inbound e-mail: most processes never parse one (it is a large library)
      const { simpleParser } = await import('mailparser')
      const mail = await simpleParser(raw)
      const sender = mail.from?.value[0]
      if (!sender?.address) throw badRequest('The message has no From address')
      const attachment = mail.attachments[0]
      const text = [mail.subject, mail.text?.trim()].filter(Boolean).join('\n\n')
      const providerMessageId = mail.messageId ?? `sha256:${createHash('sha256').update(raw).digest('hex')}`
      const saved = await deps.inbox.receive(account.id, account.language, {
        channel: 'email',
        providerMessageId,
        from: sender.address,
        name: sender.name ?? '',
        type: 'text',
        text,
        media: attachment ? { data: attachment.content, mime: attachment.contentType } : null,
      })
      if (saved) countInbound('email', account.id)
      return { stored: saved !== null, message: saved }
    },
  }
  return inbound
}
