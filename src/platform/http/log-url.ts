import type { FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * route parameters that carry a secret beside those named `token` or `secret` (the unsubscribe link's `*`): the
     * request log shows them as `[redacted]`
     */
    secretParams?: readonly string[]
  }
}

export const REDACTED = '[redacted]'

/** Route parameters whose value is a secret, by name: `/reset/:token`, `/public/automation-hooks/:id/:secret`. */
const SECRET_PARAMS: ReadonlySet<string> = new Set(['token', 'secret'])

/**
 * Query parameters whose value is a secret (compared lower-cased), on every request, matched to a route or not: the
 * e-mail hook's `token`, WhatsApp's `hub.verify_token`, and the usual names of credentials.
 */
export const SECRET_QUERY_KEYS: ReadonlySet<string> = new Set([
  'token',
  'hub.verify_token',
  'access_token',
  'refresh_token',
  'id_token',
  'api_key',
  'apikey',
  'key',
  'secret',
  'client_secret',
  'password',
  'code',
  'signature',
  'sig',
])

/** A route's secret path segments: their positions, and whether the last one takes the rest of the path (`*`). */
interface SecretSegments {
  positions: number[]
  rest: boolean
}

const NONE: SecretSegments = { positions: [], rest: false }
const byRoute = new Map<string, SecretSegments>()

function secretSegmentsOf(pattern: string, extra: readonly string[] | undefined): SecretSegments {
  const key = extra && extra.length > 0 ? `${pattern}\n${extra.join(',')}` : pattern
  let found = byRoute.get(key)
  if (found) return found
  const positions: number[] = []
  let rest = false
  pattern.split('/').forEach((segment, index) => {
    const names = [...segment.matchAll(/:([A-Za-z0-9_]+)/g)].map((match) => match[1] as string)
    if (segment === '*' || segment.endsWith('*')) names.push('*')
    if (names.some((name) => SECRET_PARAMS.has(name) || extra?.includes(name))) {
      positions.push(index)
      if (names.includes('*') && extra?.includes('*')) rest = true
    }
  })
  found = positions.length === 0 ? NONE : { positions, rest }
  byRoute.set(key, found)
  return found
}

/** The path with its secret segments replaced; the route's pattern so when the path does not line up with it. */
function redactPath(path: string, pattern: string, secret: SecretSegments): string {
  const segments = path.split('/')
  const patternSegments = pattern.split('/')
  const last = secret.positions[secret.positions.length - 1] as number
  const linedUp = secret.rest ? segments.length > last : segments.length === patternSegments.length
  const target = linedUp ? segments : patternSegments
  for (const position of secret.positions) target[position] = REDACTED
  return (secret.rest ? target.slice(0, last + 1) : target).join('/')
}

function redactQuery(query: string): string {
  let changed = false
  const parts = query.split('&').map((part) => {
    const equals = part.indexOf('=')
    const rawName = equals === -1 ? part : part.slice(0, equals)
    let name = rawName
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, ' '))
    } catch {}
    if (!SECRET_QUERY_KEYS.has(name.toLowerCase())) return part
    changed = true
    return `${rawName}=${REDACTED}`
  })
  return changed ? parts.join('&') : query
}

/**
 * The request's url as the log shows it: the value of a secret route parameter (by the matched route's declared
 * parameters) and of a secret query parameter (SECRET_QUERY_KEYS) replaced by `[redacted]`. Secrets are never logged
 * (docs/operations.md#logs).
 */
export function loggedUrl(request: FastifyRequest): string {
  const url = request.url
  const mark = url.indexOf('?')
  // routeOptions is made anew at each read: read once
  const route = request.routeOptions
  const pattern = route?.url
  const secret =
    pattern && (pattern.includes(':') || pattern.includes('*'))
      ? secretSegmentsOf(pattern, route.config?.secretParams)
      : NONE
  if (mark === -1 && secret === NONE) return url
  const path = mark === -1 ? url : url.slice(0, mark)
  const shownPath = secret === NONE || !pattern ? path : redactPath(path, pattern, secret)
  return mark === -1 ? shownPath : `${shownPath}?${redactQuery(url.slice(mark + 1))}`
}

/** pino's `req` serializer for the server's logger: Fastify's fields, the url as loggedUrl shows it. */
export function requestForLog(request: FastifyRequest) {
  return {
    method: request.method,
    url: loggedUrl(request),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  }
}
