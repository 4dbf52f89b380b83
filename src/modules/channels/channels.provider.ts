/**
 * The channel provider interfaces: the domain never calls a provider's HTTP API directly. A provider receives
 * the connection it works for (decrypted credentials included) with every call, so one instance serves all
 * accounts.
 */

export interface ChatConnection {
  accountId: string
  provider: string
  /** the business number (E.164) */
  address: string
  phoneNumberId: string
  wabaId: string
  /** new conversations per rolling 24 hours; null = unlimited (the sandbox enforces it as WhatsApp does) */
  dailyLimit: number | null
  /** sandbox only: it refuses for throughput (130429) beyond this many messages in one second; null = never */
  sandboxRefuseAbove: number | null
  credentials: ChatCredentials
}

export interface ChatCredentials {
  accessToken?: string
  appSecret?: string
  verifyToken?: string
}

/** A provider error mapped to what Herold does about it. */
export interface MappedError {
  /** outside_window: 131047; opted_out: 131050; retry_later: 130429, 131049, 131056; failed: anything else */
  kind: 'outside_window' | 'opted_out' | 'retry_later' | 'failed'
  providerCode: string
  message: string
}

export type SendResult = { ok: true; providerMessageId: string } | { ok: false; error: MappedError }

export interface TemplateAtProvider {
  name: string
  language: string
  /** MARKETING or UTILITY (section 2: optin_confirm and utility are sent as utility) */
  category: 'MARKETING' | 'UTILITY'
  content: string
  buttons?: Array<{ type: 'QUICK_REPLY' | 'URL'; text: string; url?: string }>
}

/** One template message to one recipient. */
export interface TemplateMessage {
  /** E.164 */
  to: string
  /** the provider name of the template */
  name: string
  language: string
  /** the body's parameter values, in order of first appearance in the body */
  parameters: string[]
  /** for named variables: the name of each body parameter (same order); absent for positional templates */
  parameterNames?: string[]
  /** URL button variables: the button's index among the buttons and its value */
  buttonParameters?: Array<{ index: number; text: string }>
  /** the template's header image */
  headerImageUrl?: string | null
  /** the rendered text as the customer sees it (the sandbox keeps it readable) */
  text?: string
  /** our id of this send; handed to the provider (WhatsApp: biz_opaque_callback_data) so it can be traced there */
  sendId: string
}

/** The kinds of media message a chat carries; which one a file goes as follows from its mime type (mediaKindOf). */
export type OutboundMediaKind = 'image' | 'video' | 'audio' | 'document'

/** One media message to one recipient: a file at a public address, with the text as caption where the kind takes one. */
export interface MediaMessage {
  /** E.164 */
  to: string
  contactId: string
  kind: OutboundMediaKind
  /** the file's public address (under HEROLD_PUBLIC_URL); the provider fetches it from there */
  url: string
  mime: string
  /** shown for a document */
  filename?: string | null
  /** the caption; empty for none (audio takes none) */
  caption: string
  sendId: string
}

/** image/*, video/*, audio/* go as such; everything else (PDF, …) as a document. */
export function mediaKindOf(mime: string): OutboundMediaKind {
  const top = mime.split('/')[0]?.toLowerCase()
  return top === 'image' || top === 'video' || top === 'audio' ? top : 'document'
}

/** WhatsApp shows a caption with images, videos and documents; audio messages carry none. */
export const takesCaption = (kind: OutboundMediaKind) => kind !== 'audio'

export type TemplateStatus = {
  status: 'APPROVED' | 'REJECTED' | 'PENDING' | 'PAUSED' | 'DISABLED'
  reason: string | null
  /** the provider's id of the template, when it tells it */
  providerTemplateId?: string
}

export type MessageStatus = 'sent' | 'delivered' | 'read' | 'failed'

export interface InboundMedia {
  mime: string
  filename?: string
  /** the bytes, when the webhook carries them (sandbox) */
  data?: Buffer
  /** the provider's media id, fetched with fetchMedia (whatsapp-cloud) */
  providerMediaId?: string
}

export interface InboundChatMessage {
  providerMessageId: string
  /** E.164 */
  from: string
  /** the sender's profile name, when the provider tells it */
  name: string
  /** text, image, video, audio, document, sticker, location, button, … */
  type: string
  text: string
  media: InboundMedia | null
}

export interface StatusUpdate {
  providerMessageId: string
  status: MessageStatus
  error: MappedError | null
}

/** A provider's decision about a template (WhatsApp: the message_template_status_update webhook field). */
export interface TemplateStatusUpdate {
  providerTemplateId: string | null
  name: string
  language: string
  /** APPROVED, REJECTED, PAUSED, DISABLED, PENDING, … */
  status: string
  reason: string | null
}

export interface InboundBatch {
  messages: InboundChatMessage[]
  statuses: StatusUpdate[]
  /** template decisions, when the webhook carries them */
  templates?: TemplateStatusUpdate[]
}

export class InboundRejected extends Error {
  readonly status: number
  constructor(status: number, message: string) {
    super(message)
    this.status = status
  }
}

export interface ChatProvider {
  readonly name: string
  sendText(
    connection: ChatConnection,
    input: { to: string; contactId: string; text: string; sendId: string },
  ): Promise<SendResult>
  /** a media message within the 24-hour window, like free text */
  sendMedia(connection: ChatConnection, input: MediaMessage): Promise<SendResult>
  sendTemplate(connection: ChatConnection, input: TemplateMessage): Promise<SendResult>
  submitTemplate(connection: ChatConnection, template: TemplateAtProvider): Promise<TemplateStatus>
  /** removes the template in this language (by providerTemplateId when known), not its other languages */
  deleteTemplate(
    connection: ChatConnection,
    template: { name: string; language: string; providerTemplateId?: string | null },
  ): Promise<void>
  readTemplate(connection: ChatConnection, template: { name: string; language: string }): Promise<TemplateStatus | null>
  /** verifies the webhook's authenticity over the raw body and parses it; throws InboundRejected when refused */
  parseInbound(
    connection: ChatConnection,
    request: { headers: Record<string, string | string[] | undefined>; rawBody: Buffer },
  ): InboundBatch
  fetchMedia(connection: ChatConnection, providerMediaId: string): Promise<{ data: Buffer; mime: string }>
}

export interface EmailMessage {
  from: string
  to: string
  subject: string
  text: string
  html?: string
  messageId?: string
  /** extra header fields (List-Unsubscribe, List-Unsubscribe-Post) */
  headers?: Record<string, string>
}

export interface InboundEmail {
  providerMessageId: string
  from: string
  name: string
  subject: string
  text: string
  attachments: Array<{ filename: string; mime: string; data: Buffer }>
}

export interface EmailProvider {
  readonly name: string
  send(message: EmailMessage): Promise<SendResult>
  close?(): Promise<void>
}

/** The Cloud API's refusal for the number's throughput: the number's pace goes down (adaptive pace). */
export const THROUGHPUT_REFUSED = '130429'
/** The Cloud API's refusal for too many messages to one customer (pair rate): only that send waits. */
export const PAIR_RATE_REFUSED = '131056'

/** Provider error mapping shared by the WhatsApp-shaped providers (sandbox and whatsapp-cloud). */
export function mapWhatsAppError(code: string | number, message: string): MappedError {
  const providerCode = String(code)
  switch (providerCode) {
    case '131047':
      return { kind: 'outside_window', providerCode, message }
    case '131050':
      return { kind: 'opted_out', providerCode, message }
    case '130429':
    case '131048':
    case '131049':
    case '131056':
      return { kind: 'retry_later', providerCode, message }
    default:
      return { kind: 'failed', providerCode, message }
  }
}
