import { type Account, AdminError, getAccount } from '../../platform/auth/accounts.service.ts'
import { AppError, notFound } from '../../platform/http/errors.ts'
import type { ChannelsServiceDeps } from './channels.ports.ts'
import type { ChatConnection, ChatCredentials } from './channels.provider.ts'
import * as repo from './channels.repository.ts'

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * What every part of the channels service looks up: the account, the connected chat number with its opened
 * credentials (one cache per service), and whether sending is possible.
 */
export function channelAccess(deps: Pick<ChannelsServiceDeps, 'db' | 'secrets' | 'chatProviders'>) {
  const { db, secrets } = deps

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
      sandboxRefuseAbove: row.provider === 'sandbox' ? row.sandboxRefuseAbove : null,
      credentials,
    }
  }

  /** The connected chat number with its provider, or 409 chat_not_connected. */
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

  return { accountOrNotFound, chatConnection, connectedChat, requireSendingPossible }
}

export type ChannelAccess = ReturnType<typeof channelAccess>
