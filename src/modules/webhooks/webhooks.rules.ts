import { createHmac, randomBytes } from 'node:crypto'
import net from 'node:net'
import { EVENT_NAMES, type EventName } from '../../platform/events/events.ts'
import { badRequest } from '../../platform/http/errors.ts'
import { isPublicAddress } from '../../platform/outbound-http.ts'

/** Section 6: failed deliveries are retried after these delays, 7 attempts in all. */
export const RETRY_DELAYS_MS = [60_000, 5 * 60_000, 30 * 60_000, 2 * 3600_000, 6 * 3600_000, 12 * 3600_000] as const
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1
/** Section 6: this many failed attempts in a row disable the subscription. */
export const MAX_CONSECUTIVE_FAILURES = 25
export const USER_AGENT = 'Service-Webhooks/1.0'

/** The event a test delivery sends (the one asked for, else the subscription's first): one the subscription receives. */
export function testEventOf(events: readonly string[], asked?: string): EventName {
  const name = (asked ?? events[0]) as EventName
  if (!EVENT_NAMES.includes(name) || !events.includes(name)) {
    throw badRequest(`The subscription does not receive ${name}`, 'event_not_subscribed')
  }
  return name
}

/** A new signing secret: 32 random bytes (256 bits), hex, with a recognisable prefix. The whole string is the key. */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('hex')}`
}

/** `v1=` + hex HMAC-SHA256(secret, timestamp + "." + raw body). */
export function signatureHeader(secret: string, timestamp: number, rawBody: Buffer | string): string {
  const mac = createHmac('sha256', secret)
  mac.update(`${timestamp}.`)
  mac.update(rawBody)
  return `v1=${mac.digest('hex')}`
}

export interface DeliverableEvent {
  id: string
  name: string
  createdAt: Date
  data: Record<string, unknown>
}

export const wireEventId = (event: { name: string; id: string }) => `${event.name}:${event.id}`

/** The exact bytes sent (and signed): `{id, event, created_at, data}`. */
export function deliveryBody(event: DeliverableEvent): Buffer {
  return Buffer.from(
    JSON.stringify({
      id: wireEventId(event),
      event: event.name,
      created_at: event.createdAt.toISOString(),
      data: event.data,
    }),
    'utf8',
  )
}

/** Every header of one attempt; the timestamp is this attempt's, the delivery id the same on every retry. */
export function deliveryHeaders(input: { secret: string; event: DeliverableEvent; body: Buffer; now: Date }) {
  const timestamp = Math.floor(input.now.getTime() / 1000)
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-service-event': input.event.name,
    'x-service-delivery': wireEventId(input.event),
    'x-service-timestamp': String(timestamp),
    'x-service-signature': signatureHeader(input.secret, timestamp, input.body),
  }
}

export const isSuccess = (status: number) => status >= 200 && status < 300

/** When attempt number `attempt` (1-based) failed at `failedAt`, the next attempt's time; null after the 7th. */
export function nextAttemptAt(attempt: number, failedAt: Date): Date | null {
  const delay = RETRY_DELAYS_MS[attempt - 1]
  return delay === undefined ? null : new Date(failedAt.getTime() + delay)
}

export type UrlProblem = { key: string; message: string } | null

/**
 * A subscription URL: absolute, http(s), no credentials; https and a public host unless private targets are
 * allowed (then http and loopback are fine, for tests and closed networks).
 */
export function checkSubscriptionUrl(raw: string, allowPrivateTargets: boolean): UrlProblem {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return { key: 'webhook_url_invalid', message: 'url must be an absolute http(s) URL' }
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { key: 'webhook_url_invalid', message: 'url must be an absolute http(s) URL' }
  }
  if (url.username || url.password) {
    return { key: 'webhook_url_invalid', message: 'url must not carry a user name or password' }
  }
  if (allowPrivateTargets) return null
  if (url.protocol !== 'https:') return { key: 'webhook_url_https_required', message: 'url must use https' }
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase()
  const privateLiteral = net.isIP(host) !== 0 && !isPublicAddress(host)
  if (privateLiteral || host === 'localhost' || host.endsWith('.localhost')) {
    return { key: 'webhook_url_not_public', message: 'url must point to a public address' }
  }
  return null
}
