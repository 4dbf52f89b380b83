import { randomBytes } from 'node:crypto'
import type { Account } from '../../platform/auth/accounts.service.ts'
import type { Db } from '../../platform/db/client.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { paceOf } from '../../platform/jobs/adaptive-pace.ts'
import { setPace } from '../../platform/jobs/jobs.ts'
import type { ChannelAccess } from './channels.access.ts'
import type { ChannelName, ChannelsServiceDeps, ConnectInput, EmailCredentials } from './channels.ports.ts'
import * as repo from './channels.repository.ts'
import {
  type ConversationClaim,
  claimConversation,
  claimConversations as claimConversationsOf,
  DAILY_LIMIT_TIERS,
  dailyWindow,
  MAX_DAILY_LIMIT,
} from './daily-limit.ts'
import { CHAT_LANE, DEFAULT_MESSAGES_PER_SECOND, effectiveRate, MAX_MESSAGES_PER_SECOND } from './pacer.ts'

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

/**
 * A channel's connection over its life: connect and disconnect, its state, and the chat number's pace (coexistence)
 * and daily limit of new conversations.
 */
export function channelConnections(
  deps: Pick<ChannelsServiceDeps, 'db' | 'clock' | 'secrets' | 'publicUrl'>,
  access: Pick<ChannelAccess, 'accountOrNotFound'>,
) {
  const { db, clock, secrets } = deps
  const { accountOrNotFound } = access

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
    const refuseAbove = input.sandboxRefuseAbove
    if (refuseAbove !== undefined && refuseAbove !== null) {
      if (input.channel !== 'chat' || input.provider !== 'sandbox') {
        throw badRequest('only the chat sandbox can be told to refuse for throughput')
      }
      if (!Number.isInteger(refuseAbove) || refuseAbove < 1 || refuseAbove > MAX_MESSAGES_PER_SECOND) {
        throw badRequest(`the sandbox's refusal rate must be 1 to ${MAX_MESSAGES_PER_SECOND} messages per second`)
      }
    }
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
          sandboxRefuseAbove: input.sandboxRefuseAbove ?? null,
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
      const [window, pace] = await Promise.all([
        dailyWindow(db, { accountId, limit: connected ? row.dailyLimit : null, now: clock.now() }),
        connected ? paceOf(db, { accountId, lane: CHAT_LANE }) : null,
      ])
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
        pace: {
          current: pace?.perSecond ?? null,
          lowered_reason: pace?.reducedReason ?? null,
          lowered_since: pace?.reducedAt?.toISOString() ?? null,
          last_refusal_at: pace?.lastRefusalAt?.toISOString() ?? null,
        },
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

    /**
     * claimConversation for the contacts of a batch, in order, with the connection read once: a number without a
     * daily limit claims nothing (no statement).
     */
    async claimConversations(tx: Db, accountId: string, contactIds: string[]): Promise<ConversationClaim[]> {
      const row = await repo.connectionOf(tx, accountId, 'chat')
      const limit = row?.status === 'connected' ? row.dailyLimit : null
      return claimConversationsOf(tx, { accountId, contactIds, limit, now: clock.now() })
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
  }
}
