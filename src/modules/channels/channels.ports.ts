import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import type { InboxService } from '../inbox/index.ts'
import type {
  ChatProvider,
  EmailProvider,
  MappedError,
  TemplateMessage,
  TemplateStatusUpdate,
} from './channels.provider.ts'
import type { Pacer } from './pacer.ts'

// What the channels service is given and hands out: its inputs, dependencies and the outcomes of a send.

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
  /** sandbox only: refuse (130429) the number's messages beyond this many in one second; null or omitted = never */
  sandboxRefuseAbove?: number | null
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

/**
 * One message of sendTemplates: as sendTemplate, the stored message by id; `thrown` when the send threw. `sentAt`: when
 * its provider call began (its slot reached), for the send record.
 */
export type BatchSendOutcome =
  | { ok: true; messageId: string | null; providerMessageId: string; sentAt?: Date }
  | { ok: false; error: MappedError; messageId: string | null; sentAt?: Date }
  | { ok: false; thrown: unknown }

export type TemplateSendInput = Omit<TemplateMessage, 'sendId'> & {
  contactId: string
  text: string
  sendId: string
  /** what the message view shows: the template's id and name and the buttons the customer saw */
  shown?: ShownTemplate
  /** a campaign's message (broadcast, follow-up, automation): the conversation stays automated_only */
  automated?: boolean
  /**
   * the slot its job's claim booked on the number's lane (ClaimedJob.slotAt): it leaves no earlier; absent, it books
   * a slot of its own as a message outside the claim does
   */
  slotAt?: Date
}

export interface EmailCredentials {
  smtpUrl?: string
  /** authenticates a mail server piping into /hooks/email/{account id} */
  inboundToken?: string
}
