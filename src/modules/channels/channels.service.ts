import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'
import { type Account, AdminError, getAccount } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { setPace } from '../../platform/jobs/jobs.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import type { InboxService } from '../inbox/index.ts'
import {
  type ChatConnection,
  type ChatCredentials,
  type ChatProvider,
  type EmailProvider,
  InboundRejected,
  type MappedError,
  type TemplateAtProvider,
  type TemplateMessage,
  type TemplateStatusUpdate,
} from './channels.provider.ts'
import * as repo from './channels.repository.ts'
import {
  type ConversationClaim,
  claimConversation,
  DAILY_LIMIT_TIERS,
  dailyWindow,
  MAX_DAILY_LIMIT,
} from './daily-limit.ts'
import { CHAT_LANE, DEFAULT_MESSAGES_PER_SECOND, effectiveRate, MAX_MESSAGES_PER_SECOND, type Pacer } from './pacer.ts'
import { type SandboxInbound, sandboxEmailProvider } from './sandbox.provider.ts'

export type ChannelName = 'chat' | 'email'

export interface ConnectInput {
  channel: ChannelName
  provider: string
  /** the business number (E.164) or the sender address */
  address?: string
  phoneNumberId?: string
  wabaId?: string
  accessToken?: string
  appSecret?: string
  verifyToken?: string
  /** smtp: smtp://user:pass@host:port */
  smtpUrl?: string
  messagesPerSecond?: number
  /** new conversations per rolling 24 hours (WhatsApp's tier); null or omitted = unlimited */
  dailyLimit?: number | null
}

export interface ChannelsServiceDeps {
  db: Db
  clock: Clock
  secrets: SecretBox
  pacer: Pacer
  chatProviders: Record<string, ChatProvider>
  /** builds the e-mail provider of an smtp connection */
  smtp(url: string): EmailProvider
  inbox: Pick<InboxService, 'receive' | 'applyStatuses' | 'recordOutbound' | 'recordOutboundMany' | 'optOut'>
  /** HEROLD_PUBLIC_URL: the base of the webhook addresses a connect reports */
  publicUrl: string
  /** receives the template decisions a provider webhook carries (the templates module listens, see index.ts) */
  templateStatuses?: (accountId: string, updates: TemplateStatusUpdate[]) => Promise<void>
}

type StoredMessage = Awaited<ReturnType<InboxService['recordOutbound']>>
/** The template an outbound message carried, as the message view shows it. */
export interface ShownTemplate {
  id: string
  name: string
  buttons: Array<{ type: string; text: string; url?: string }>
}

/** `message` is the stored outbound message: sent, or failed with the provider's error code. */
export type SendOutcome =
  | { ok: true; messageId: string | null; providerMessageId: string; message: StoredMessage }
  | { ok: false; error: MappedError; message: StoredMessage }

/** One message of sendTemplates: as sendTemplate, the stored message by id; `thrown` when the send threw. */
export type BatchSendOutcome =
  | { ok: true; messageId: string | null; providerMessageId: string }
  | { ok: false; error: MappedError; messageId: string | null }
  | { ok: false; thrown: unknown }

export type TemplateSendInput = Omit<TemplateMessage, 'sendId'> & {
  contactId: string
  text: string
  sendId: string
  /** what the message view shows: the template's id and name and the buttons the customer saw */
  shown?: ShownTemplate
  /** a campaign's message (broadcast, follow-up, automation): the conversation stays automated_only */
  automated?: boolean
}

interface EmailCredentials {
  smtpUrl?: string
  /** authenticates a mail server piping into /hooks/email/{account id} */
  inboundToken?: string
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** The channel state of GET /settings/channels (English names; the route adds the German aliases). */
export function channelState(row: repo.ConnectionRow | undefined, account: Pick<Account, 'sendingPaused'>) {
  const connected = row?.status === 'connected'
  return {
    connected,
    was_connected: row !== undefined && !connected,
    provider: connected ? row.provider : null,
    address: connected ? row.address : null,
    versand_moeglich: connected && !account.sendingPaused,
    ...(row?.channel === 'chat' && connected
      ? {
          coexistence: row.coexistence,
          messages_per_second: effectiveRate(row.messagesPerSecond, row.coexistence),
          daily_limit: row.dailyLimit,
        }
      : {}),
  }
}

export function channelsService(deps: ChannelsServiceDeps) {
  const { db, clock, secrets } = deps
  const smtpProviders = new Map<string, EmailProvider>()

  async function accountOrNotFound(accountId: string): Promise<Account> {
    if (!UUID.test(accountId)) throw notFound('account')
    try {
      return await getAccount(db, accountId)
    } catch (error) {
      if (error instanceof AdminError) throw notFound('account')
      throw error
    }
  }

  // opened credentials by their sealed text: a webhook does not decrypt them again (a change seals new text)
  const opened = new Map<string, ChatCredentials>()
  function openCredentials(sealed: string): ChatCredentials {
    let credentials = opened.get(sealed)
    if (!credentials) {
      credentials = JSON.parse(secrets.open(sealed)) as ChatCredentials
      if (opened.size >= 1_000) opened.clear()
      opened.set(sealed, credentials)
    }
    return { ...credentials }
  }

  function chatConnection(row: repo.ConnectionRow): ChatConnection {
    const credentials = row.credentialsSealed ? openCredentials(row.credentialsSealed) : {}
    return {
      accountId: row.accountId,
      provider: row.provider,
      address: row.address,
      phoneNumberId: row.phoneNumberId,
      wabaId: row.wabaId,
      dailyLimit: row.dailyLimit,
      credentials,
    }
  }

  /** The connected chat number with its provider, or 409 chat_not_connected. */
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

  async function connectedChat(accountId: string, known?: repo.ConnectionRow | null) {
    const row = known === undefined ? await repo.connectionOf(db, accountId, 'chat') : (known ?? undefined)
    if (row?.status !== 'connected') {
      throw new AppError(409, 'chat_not_connected', 'No chat number is connected')
    }
    const provider = deps.chatProviders[row.provider]
    if (!provider) throw new Error(`unknown chat provider ${row.provider}`)
    return { row, connection: chatConnection(row), provider }
  }

  /** Sending is possible only with a connected channel and sending not paused (`versand_moeglich`). */
  async function requireSendingPossible(accountId: string) {
    const account = await getAccount(db, accountId)
    if (account.sendingPaused) throw new AppError(403, 'subscription_locked', 'Sending is paused for this account')
    return account
  }

  function validateConnect(input: ConnectInput): void {
    const chat = {
      sandbox: [],
      'whatsapp-cloud': ['phoneNumberId', 'wabaId', 'accessToken', 'appSecret', 'verifyToken'],
    }
    const email = { sandbox: ['address'], smtp: ['address', 'smtpUrl'] }
    const providers: Record<string, string[]> = input.channel === 'chat' ? chat : email
    const required = providers[input.provider]
    if (!required) {
      throw badRequest(`provider must be one of ${Object.keys(providers).join(', ')} for channel ${input.channel}`)
    }
    const missing = required.filter((field) => !input[field as keyof ConnectInput])
    if (missing.length > 0) throw badRequest(`${input.provider} needs ${missing.join(', ')}`)
    const rate = input.messagesPerSecond
    if (rate !== undefined && (!Number.isInteger(rate) || rate < 1 || rate > MAX_MESSAGES_PER_SECOND)) {
      throw badRequest(`messages per second must be 1 to ${MAX_MESSAGES_PER_SECOND}`)
    }
    const limit = input.dailyLimit
    if (limit !== undefined && limit !== null && (!Number.isInteger(limit) || limit < 1 || limit > MAX_DAILY_LIMIT)) {
      throw badRequest(`the daily limit must be 1 to ${MAX_DAILY_LIMIT}, or unlimited`)
    }
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
    const statuses = await statusesFrom(account.id, batch)
    if (batch.templates?.length) await deps.templateStatuses?.(account.id, batch.templates)
    return { received: batch.messages.length, stored, statuses }
  }

  async function afterSend(
    accountId: string,
    contactId: string,
    result: Awaited<ReturnType<ChatProvider['sendText']>>,
    message: { type: string; text: string; automated?: boolean; ai?: boolean; template?: ShownTemplate | null },
  ): Promise<SendOutcome> {
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
    })
    return { ok: true, messageId: stored?.id ?? null, providerMessageId: result.providerMessageId, message: stored }
  }

  /** The number's pace where every worker's claim of template sends sees it (platform/jobs setPace). */
  const syncChatPace = (tx: Db, row: repo.ConnectionRow) =>
    row.channel !== 'chat'
      ? Promise.resolve()
      : setPace(tx, {
          accountId: row.accountId,
          lane: CHAT_LANE,
          perSecond: row.status === 'connected' ? effectiveRate(row.messagesPerSecond, row.coexistence) : null,
        })

  return {
    /** herold channels connect: credentials sealed at rest; a reconnect replaces the previous connection */
    async connect(accountId: string, input: ConnectInput) {
      validateConnect(input)
      const account = await accountOrNotFound(accountId)
      const credentials =
        input.channel === 'chat'
          ? { accessToken: input.accessToken, appSecret: input.appSecret, verifyToken: input.verifyToken }
          : { smtpUrl: input.smtpUrl, inboundToken: randomBytes(24).toString('base64url') }
      const chatSandbox = input.channel === 'chat' && input.provider === 'sandbox'
      const row = await db.transaction(async (tx) => {
        const saved = await repo.upsertConnection(tx, {
          accountId: account.id,
          channel: input.channel,
          provider: input.provider,
          status: 'connected',
          address: input.address ?? (chatSandbox ? '+15550100000' : ''),
          phoneNumberId: input.phoneNumberId ?? (chatSandbox ? `sandbox-${account.id}` : ''),
          wabaId: input.wabaId ?? '',
          credentialsSealed: secrets.seal(JSON.stringify(credentials)),
          coexistence: false,
          messagesPerSecond: input.messagesPerSecond ?? DEFAULT_MESSAGES_PER_SECOND,
          dailyLimit: input.channel === 'chat' ? (input.dailyLimit ?? null) : null,
          connectedAt: clock.now(),
          disconnectedAt: null,
        })
        await syncChatPace(tx, saved)
        return saved
      })
      const webhook =
        input.channel === 'email'
          ? `${deps.publicUrl}/hooks/email/${account.id}?token=${(credentials as EmailCredentials).inboundToken}`
          : chatSandbox
            ? `${deps.publicUrl}/v1/sandbox/inbound`
            : `${deps.publicUrl}/hooks/whatsapp-cloud/${account.id}`
      return { account_id: account.id, channel: row.channel, ...channelState(row, account), inbound_url: webhook }
    },

    /** herold channels disconnect: nothing goes out any more; the row stays so was_connected is known */
    async disconnect(accountId: string, channel: ChannelName) {
      const account = await accountOrNotFound(accountId)
      const row = await db.transaction(async (tx) => {
        const saved = await repo.updateConnection(tx, account.id, channel, {
          status: 'disconnected',
          disconnectedAt: clock.now(),
          coexistence: false,
        })
        if (saved) await syncChatPace(tx, saved)
        return saved
      })
      if (!row) throw badRequest(`no ${channel} channel was ever connected`)
      return { account_id: account.id, channel, ...channelState(row, account) }
    },

    async channelsState(accountId: string, account: Pick<Account, 'sendingPaused'>) {
      const rows = await repo.connectionsOf(db, accountId)
      const chat = channelState(
        rows.find((r) => r.channel === 'chat'),
        account,
      )
      const email = channelState(
        rows.find((r) => r.channel === 'email'),
        account,
      )
      return {
        versand_moeglich: chat.versand_moeglich || email.versand_moeglich,
        sending_paused: account.sendingPaused,
        chat,
        email,
      }
    },

    /**
     * The chat number as a person checks it: connected or not, provider and number, sending pace, and the daily
     * limit (WhatsApp's tier) with the different customers reached in the last 24 hours and when room returns.
     */
    async chatStatus(accountId: string, account: Pick<Account, 'sendingPaused'>) {
      const row = await repo.connectionOf(db, accountId, 'chat')
      const connected = row?.status === 'connected'
      const window = await dailyWindow(db, { accountId, limit: connected ? row.dailyLimit : null, now: clock.now() })
      return {
        connected,
        provider: connected ? row.provider : null,
        number: connected ? row.address : null,
        connected_at: connected ? row.connectedAt.toISOString() : null,
        disconnected_at: row?.disconnectedAt ? row.disconnectedAt.toISOString() : null,
        sending_possible: connected && !account.sendingPaused,
        sending_paused: account.sendingPaused,
        coexistence: connected ? row.coexistence : false,
        messages_per_second: connected ? effectiveRate(row.messagesPerSecond, row.coexistence) : null,
        daily_limit: {
          limit: window.limit,
          tier: window.limit === null ? null : (DAILY_LIMIT_TIERS.find((t) => t >= (window.limit as number)) ?? null),
          used_last_24h: window.used,
          left: window.limit === null ? null : Math.max(0, window.limit - window.used),
          resumes_at: window.resumesAt ? window.resumesAt.toISOString() : null,
        },
      }
    },

    async coexistence(accountId: string) {
      const row = await repo.connectionOf(db, accountId, 'chat')
      const available = row?.status === 'connected'
      return {
        available,
        enabled: available && row.coexistence,
        messages_per_second: available ? effectiveRate(row.messagesPerSecond, row.coexistence) : null,
      }
    },

    async setCoexistence(accountId: string, enabled: boolean) {
      return db.transaction(async (tx) => {
        const row = await repo.connectionOf(tx, accountId, 'chat', { lock: true })
        const connected = row?.status === 'connected'
        if (enabled && !connected) {
          throw badRequest('Coexistence needs a connected chat number', 'chat_not_connected')
        }
        if (connected) {
          const saved = await repo.updateConnection(tx, accountId, 'chat', { coexistence: enabled })
          if (saved) await syncChatPace(tx, saved)
        }
        return {
          available: connected,
          enabled: connected && enabled,
          messages_per_second: connected ? effectiveRate(row.messagesPerSecond, enabled) : null,
        }
      })
    },

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

    /** A provider webhook: verified over the raw body, then messages stored and statuses applied. */
    async receiveChatWebhook(
      accountId: string,
      providerName: string,
      request: { headers: Record<string, string | string[] | undefined>; rawBody: Buffer },
    ) {
      // the account and its number in one read
      const found = UUID.test(accountId) ? await webhookTarget(accountId) : undefined
      if (!found) throw notFound('account')
      const { account, connection: row } = found
      if (row?.status !== 'connected' || row.provider !== providerName) throw notFound('webhook')
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

    /** 409 chat_not_connected unless a chat number is connected. */
    /** 409 chat_not_connected unless a chat number is connected; the checks of requests arriving together are one statement. */
    async requireChatConnected(accountId: string): Promise<void> {
      await connectedChat(accountId, (await repo.chatConnectionBatched(db, accountId)) ?? null)
    },

    /**
     * Free text to a contact through the connected number, paced per number; stored as an outbound message
     * (`automated` for Herold's own messages such as the opt-out confirmation, `ai` for the built-in AI's replies).
     */
    async sendText(
      accountId: string,
      input: { contactId: string; to: string; text: string },
      options: { automated?: boolean; ai?: boolean } = {},
    ): Promise<SendOutcome> {
      await requireSendingPossible(accountId)
      const chat = await connectedChat(accountId)
      await deps.pacer.pace(chat.row.phoneNumberId, effectiveRate(chat.row.messagesPerSecond, chat.row.coexistence))
      const result = await chat.provider.sendText(chat.connection, { ...input, sendId: randomUUID() })
      return afterSend(accountId, input.contactId, result, { type: 'text', text: input.text, ...options })
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
      await deps.pacer.pace(chat.row.phoneNumberId, effectiveRate(chat.row.messagesPerSecond, chat.row.coexistence))
      const { contactId, shown, ...message } = input
      const result = await chat.provider.sendTemplate(chat.connection, {
        ...message,
        sendId: input.sendId ?? randomUUID(),
      })
      if (!result.ok && result.error.kind === 'retry_later') return { ...result, message: null }
      return afterSend(accountId, contactId, result, {
        type: 'template',
        text: input.text,
        template: shown ?? null,
        ...options,
      })
    },

    /**
     * sendTemplate for many messages of one account (a batch of the send worker): the account and the number are
     * checked once, every message waits for its own slot of the number's pacer and the provider calls run at the
     * same time, and the outbound messages are stored together (inbox recordOutboundMany). A failed check (paused,
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
        inputs.map(async ({ contactId: _contact, shown: _shown, automated: _automated, ...message }) => {
          await deps.pacer.pace(chat.row.phoneNumberId, rate)
          return chat.provider.sendTemplate(chat.connection, message).then(
            (result) => ({ result }),
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
        if (done.result.ok) return { ok: true, messageId, providerMessageId: done.result.providerMessageId }
        return { ok: false, error: done.result.error, messageId }
      })
    },

    /**
     * claimConversation for the contacts of a batch, in order, with the connection read once: a number without a
     * daily limit claims nothing (no statement).
     */
    async claimConversations(tx: Db, accountId: string, contactIds: string[]): Promise<ConversationClaim[]> {
      const row = await repo.connectionOf(tx, accountId, 'chat')
      const limit = row?.status === 'connected' ? row.dailyLimit : null
      const claims: ConversationClaim[] = []
      for (const contactId of contactIds) {
        claims.push(await claimConversation(tx, { accountId, contactId, limit, now: clock.now() }))
      }
      return claims
    },

    /**
     * In the transaction that marks a business-initiated send as going out: claims the contact's place in the
     * number's daily limit of new conversations (docs/sending.md), or says when the window has room again.
     */
    async claimConversation(tx: Db, accountId: string, contactId: string): Promise<ConversationClaim> {
      const row = await repo.connectionOf(tx, accountId, 'chat')
      const limit = row?.status === 'connected' ? row.dailyLimit : null
      return claimConversation(tx, { accountId, contactId, limit, now: clock.now() })
    },

    /** The number's daily limit as it stands: the limit, conversations started in the window, when it has room. */
    async dailyWindow(accountId: string) {
      const row = await repo.connectionOf(db, accountId, 'chat')
      const limit = row?.status === 'connected' ? row.dailyLimit : null
      return dailyWindow(db, { accountId, limit, now: clock.now() })
    },

    async submitTemplate(accountId: string, template: TemplateAtProvider) {
      const chat = await connectedChat(accountId)
      return chat.provider.submitTemplate(chat.connection, template)
    },
    async readTemplate(accountId: string, template: { name: string; language: string }) {
      const chat = await connectedChat(accountId)
      return chat.provider.readTemplate(chat.connection, template)
    },
    async deleteTemplate(
      accountId: string,
      template: { name: string; language: string; providerTemplateId?: string | null },
    ) {
      const chat = await connectedChat(accountId)
      return chat.provider.deleteTemplate(chat.connection, template)
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
      return provider.send({ from: row.address, ...message })
    },

    /** A raw MIME message piped in by any mail server: stored as an inbound e-mail message. */
    async receiveEmail(accountId: string, token: string, raw: Buffer) {
      const account = await accountOrNotFound(accountId)
      const row = await repo.connectionOf(db, account.id, 'email')
      if (row?.status !== 'connected') throw notFound('e-mail channel')
      const { inboundToken } = row.credentialsSealed
        ? (JSON.parse(secrets.open(row.credentialsSealed)) as EmailCredentials)
        : ({} as EmailCredentials)
      if (!inboundToken || !sameSecret(token, inboundToken)) {
        throw new AppError(401, 'unauthorized', 'The inbound token does not match', { key: 'inbound_token_invalid' })
      }
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
      return { stored: saved !== null, message: saved }
    },

    async close() {
      for (const provider of smtpProviders.values()) await provider.close?.()
    },
  }
}

export type ChannelsService = ReturnType<typeof channelsService>
