import type { Account } from '../../platform/auth/accounts.service.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Database, Db } from '../../platform/db/client.ts'
import type { ChannelsService } from '../channels/index.ts'
import type { ContactsService } from '../contacts/index.ts'
import type { TemplatesService } from '../templates/index.ts'

// What the template sends are given: their tenant and dependencies, and their queue.

/** The durable job that sends one queued template message, payload { send_id }. */
export const TEMPLATE_SEND_QUEUE = 'messaging.template_send'
/** Throughput refusals (130429, 131049, 131056) are tried again this often before the send ends failed. */
export const MAX_RATE_LIMITED_ATTEMPTS = 8

export type SendsTenant = {
  accountId: string
  account: Pick<Account, 'language' | 'timezone' | 'sendingPaused' | 'plan'>
}

export interface TemplateSendsDeps {
  db: Db
  /** the embedded database keeps the checks of templates and chat numbers in memory (NotifiedCache) */
  database: Pick<Database, 'kind' | 'listen'>
  clock: Clock
  contacts: Pick<ContactsService, 'get'>
  channels: Pick<ChannelsService, 'requireChatConnected' | 'sendTemplates' | 'claimConversations'>
  templates: Pick<TemplatesService, 'get' | 'view'>
  serviceName: string
  publicUrl: string
  newLinkId: () => string
}

export type Contact = Awaited<ReturnType<ContactsService['get']>>
export type ContactValues = Pick<Contact, 'name' | 'email' | 'phone'>
