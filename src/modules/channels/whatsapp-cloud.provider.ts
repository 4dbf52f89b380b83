import { createHmac, timingSafeEqual } from 'node:crypto'
import type { OutboundHttp, OutboundResponse } from '../../platform/outbound-http.ts'
import {
  type ChatConnection,
  type ChatProvider,
  type InboundBatch,
  type InboundChatMessage,
  InboundRejected,
  type MessageStatus,
  mapWhatsAppError,
  type SendResult,
  type StatusUpdate,
  type TemplateMessage,
  type TemplateStatus,
  type TemplateStatusUpdate,
  takesCaption,
} from './channels.provider.ts'

/** X-Hub-Signature-256: `sha256=` + hex HMAC-SHA256 of the raw body, keyed with the app secret. */
export function verifyHubSignature(appSecret: string, rawBody: Buffer, header: string | undefined): boolean {
  if (!header?.startsWith('sha256=')) return false
  const given = Buffer.from(header.slice(7), 'hex')
  const expected = createHmac('sha256', appSecret).update(rawBody).digest()
  return given.length === expected.length && timingSafeEqual(given, expected)
}

export function hubSignature(appSecret: string, rawBody: Buffer | string): string {
  return `sha256=${createHmac('sha256', appSecret).update(rawBody).digest('hex')}`
}

const e164 = (waId: string) => (waId.startsWith('+') ? waId : `+${waId}`)

type Json = Record<string, unknown>
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {})
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : [])
const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '')

/** One inbound message of the Cloud API's webhook, in Herold's words. */
function inboundMessage(raw: Json, names: Map<string, string>): InboundChatMessage | null {
  const id = str(raw.id)
  const from = str(raw.from)
  if (!id || !from) return null
  const type = str(raw.type)
  const base = { providerMessageId: id, from: e164(from), name: names.get(from) ?? '' }
  switch (type) {
    case 'text':
      return { ...base, type: 'text', text: str(obj(raw.text).body), media: null }
    case 'image':
    case 'video':
    case 'audio':
    case 'document':
    case 'sticker': {
      const media = obj(raw[type])
      return {
        ...base,
        type,
        text: str(media.caption),
        media: {
          mime: str(media.mime_type),
          filename: str(media.filename) || undefined,
          providerMediaId: str(media.id),
        },
      }
    }
    case 'location': {
      const l = obj(raw.location)
      const place = [str(l.name), str(l.address)].filter(Boolean).join(', ')
      return {
        ...base,
        type: 'location',
        text: `${place ? `${place} ` : ''}(${str(l.latitude)}, ${str(l.longitude)})`,
        media: null,
      }
    }
    case 'button':
      return { ...base, type: 'button', text: str(obj(raw.button).text), media: null }
    case 'interactive': {
      const i = obj(raw.interactive)
      const reply = obj(i.button_reply ?? i.list_reply)
      return { ...base, type: 'button', text: str(reply.title), media: null }
    }
    default:
      return { ...base, type: type || 'unknown', text: '', media: null }
  }
}

function statusUpdate(raw: Json): StatusUpdate | null {
  const status = str(raw.status) as MessageStatus
  if (!['sent', 'delivered', 'read', 'failed'].includes(status) || !str(raw.id)) return null
  const error = obj(arr(raw.errors)[0])
  return {
    providerMessageId: str(raw.id),
    status,
    error: status === 'failed' ? mapWhatsAppError(str(error.code), str(error.title) || str(error.message)) : null,
  }
}

/**
 * The message_template_status_update field: APPROVED, REJECTED (with reason), PAUSED, DISABLED and the like.
 * REINSTATED (a paused template back in use) reads as APPROVED; a reason of NONE is no reason.
 */
function templateStatusUpdate(value: Json): TemplateStatusUpdate | null {
  const event = str(value.event).toUpperCase()
  const name = str(value.message_template_name)
  if (!event || (!name && !str(value.message_template_id))) return null
  const reason = str(value.reason)
  return {
    providerTemplateId: str(value.message_template_id) || null,
    name,
    language: str(value.message_template_language),
    status: event === 'REINSTATED' ? 'APPROVED' : event,
    reason: reason && reason !== 'NONE' ? reason : null,
  }
}

/**
 * Parses a verified webhook body; message changes for other phone numbers than the connection's, and template
 * changes of another business account than the connection's (entry id), are ignored.
 */
export function parseCloudWebhook(body: unknown, phoneNumberId: string, wabaId = ''): InboundBatch {
  const batch: InboundBatch = { messages: [], statuses: [], templates: [] }
  for (const entry of arr(obj(body).entry)) {
    for (const change of arr(obj(entry).changes)) {
      const value = obj(obj(change).value)
      if (str(obj(change).field) === 'message_template_status_update') {
        if (wabaId && str(obj(entry).id) !== wabaId) continue
        const update = templateStatusUpdate(value)
        if (update) batch.templates?.push(update)
        continue
      }
      const metadata = obj(value.metadata)
      if (phoneNumberId && str(metadata.phone_number_id) !== phoneNumberId) continue
      const names = new Map(
        arr(value.contacts).map((c) => [str(obj(c).wa_id), str(obj(obj(c).profile).name)] as [string, string]),
      )
      for (const m of arr(value.messages)) {
        const parsed = inboundMessage(obj(m), names)
        if (parsed) batch.messages.push(parsed)
      }
      for (const s of arr(value.statuses)) {
        const parsed = statusUpdate(obj(s))
        if (parsed) batch.statuses.push(parsed)
      }
    }
  }
  return batch
}

/** The Cloud API's template components: header image, body parameters (named or positional), URL buttons. */
export function templateComponents(input: TemplateMessage): Json[] {
  const components: Json[] = []
  if (input.headerImageUrl) {
    components.push({ type: 'header', parameters: [{ type: 'image', image: { link: input.headerImageUrl } }] })
  }
  if (input.parameters.length > 0) {
    const names = input.parameterNames
    components.push({
      type: 'body',
      parameters: input.parameters.map((text, i) =>
        names?.[i] ? { type: 'text', parameter_name: names[i], text } : { type: 'text', text },
      ),
    })
  }
  for (const button of input.buttonParameters ?? []) {
    components.push({
      type: 'button',
      sub_type: 'url',
      index: String(button.index),
      parameters: [{ type: 'text', text: button.text }],
    })
  }
  return components
}

export interface WhatsAppCloudOptions {
  /** the Graph API base including the version, e.g. https://graph.facebook.com/v21.0 */
  graphUrl: string
  http: OutboundHttp
}

export function whatsAppCloudProvider(options: WhatsAppCloudOptions): ChatProvider {
  const base = options.graphUrl.replace(/\/+$/, '')
  const headers = (c: ChatConnection) => ({
    authorization: `Bearer ${c.credentials.accessToken ?? ''}`,
    'content-type': 'application/json',
  })
  const parse = (r: OutboundResponse): Json => {
    try {
      return obj(JSON.parse(r.body.toString('utf8')))
    } catch {
      return {}
    }
  }
  const failure = (r: OutboundResponse): SendResult => {
    const error = obj(parse(r).error)
    return {
      ok: false,
      error: mapWhatsAppError(
        str(error.code) || `http_${r.status}`,
        str(error.message) || `Graph API answered ${r.status}`,
      ),
    }
  }
  const graphError = (r: OutboundResponse) => {
    const error = obj(parse(r).error)
    return new Error(`Graph API answered ${r.status}${error.message ? `: ${str(error.message)}` : ''}`)
  }

  async function sendMessage(c: ChatConnection, payload: Json): Promise<SendResult> {
    const response = await options.http.send(`${base}/${encodeURIComponent(c.phoneNumberId)}/messages`, {
      method: 'POST',
      headers: headers(c),
      body: JSON.stringify({ messaging_product: 'whatsapp', recipient_type: 'individual', ...payload }),
    })
    if (response.status < 200 || response.status >= 300) return failure(response)
    const id = str(obj(arr(parse(response).messages)[0]).id)
    if (!id) return { ok: false, error: mapWhatsAppError('no_message_id', 'Graph API answered without a message id') }
    return { ok: true, providerMessageId: id }
  }

  const toWaId = (phone: string) => phone.replace(/^\+/, '')

  return {
    name: 'whatsapp-cloud',
    sendText: (c, input) =>
      sendMessage(c, { to: toWaId(input.to), type: 'text', text: { body: input.text, preview_url: false } }),
    sendMedia: (c, input) =>
      sendMessage(c, {
        to: toWaId(input.to),
        type: input.kind,
        [input.kind]: {
          link: input.url,
          ...(input.caption && takesCaption(input.kind) ? { caption: input.caption } : {}),
          ...(input.kind === 'document' && input.filename ? { filename: input.filename } : {}),
        },
      }),
    sendTemplate: (c, input) =>
      sendMessage(c, {
        to: toWaId(input.to),
        type: 'template',
        // our send id comes back in the status webhooks and identifies the send at the provider
        biz_opaque_callback_data: input.sendId,
        template: { name: input.name, language: { code: input.language }, components: templateComponents(input) },
      }),
    async submitTemplate(c, template) {
      const components: Json[] = [{ type: 'BODY', text: template.content }]
      if (template.buttons?.length) components.push({ type: 'BUTTONS', buttons: template.buttons })
      const response = await options.http.send(`${base}/${encodeURIComponent(c.wabaId)}/message_templates`, {
        method: 'POST',
        headers: headers(c),
        body: JSON.stringify({
          name: template.name,
          language: template.language,
          category: template.category,
          components,
        }),
      })
      if (response.status < 200 || response.status >= 300) throw graphError(response)
      const answer = parse(response)
      const status = str(answer.status) as TemplateStatus['status']
      const id = str(answer.id)
      return { status: status || 'PENDING', reason: null, ...(id ? { providerTemplateId: id } : {}) }
    },
    async deleteTemplate(c, template) {
      // with hsm_id only this language's template goes; by name alone the Graph API removes every language
      const query = new URLSearchParams({
        ...(template.providerTemplateId ? { hsm_id: template.providerTemplateId } : {}),
        name: template.name,
      })
      const response = await options.http.send(`${base}/${encodeURIComponent(c.wabaId)}/message_templates?${query}`, {
        method: 'DELETE',
        headers: headers(c),
      })
      if (response.status < 200 || response.status >= 300) throw graphError(response)
    },
    async readTemplate(c, template) {
      const query = new URLSearchParams({ name: template.name, language: template.language })
      const response = await options.http.send(`${base}/${encodeURIComponent(c.wabaId)}/message_templates?${query}`, {
        method: 'GET',
        headers: headers(c),
      })
      if (response.status < 200 || response.status >= 300) throw graphError(response)
      const found = arr(parse(response).data)
        .map(obj)
        .find((t) => str(t.name) === template.name && str(t.language) === template.language)
      if (!found) return null
      const reason = str(found.rejected_reason)
      return {
        status: str(found.status) as TemplateStatus['status'],
        reason: reason && reason !== 'NONE' ? reason : null,
      }
    },
    parseInbound(c, request) {
      const header = request.headers['x-hub-signature-256']
      const signature = Array.isArray(header) ? header[0] : header
      if (!c.credentials.appSecret || !verifyHubSignature(c.credentials.appSecret, request.rawBody, signature)) {
        throw new InboundRejected(401, 'X-Hub-Signature-256 does not match the body')
      }
      let body: unknown
      try {
        body = JSON.parse(request.rawBody.toString('utf8'))
      } catch {
        throw new InboundRejected(400, 'The body is not valid JSON')
      }
      return parseCloudWebhook(body, c.phoneNumberId, c.wabaId)
    },
    async fetchMedia(c, mediaId) {
      const meta = await options.http.send(`${base}/${encodeURIComponent(mediaId)}`, {
        method: 'GET',
        headers: headers(c),
      })
      if (meta.status !== 200) throw graphError(meta)
      const info = parse(meta)
      const url = str(info.url)
      if (!url) throw new Error('Graph API gave no media url')
      const file = await options.http.send(url, { method: 'GET', headers: { authorization: headers(c).authorization } })
      if (file.status !== 200) throw graphError(file)
      return {
        data: file.body,
        mime: str(info.mime_type) || String(file.headers['content-type'] ?? 'application/octet-stream'),
      }
    },
  }
}
