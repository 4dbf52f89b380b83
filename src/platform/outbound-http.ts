import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import net from 'node:net'
import { Agent, request } from 'undici'

/**
 * Every HTTP call Herold makes to an address a customer chose (webhook deliveries, media downloads) goes through
 * here: 5 s timeout, no redirects, a capped response body, and an SSRF guard that checks the addresses a host
 * name resolves to and connects to exactly the address it checked.
 */

export type OutboundErrorCode =
  | 'invalid_url'
  | 'blocked_target'
  | 'dns_failed'
  | 'timeout'
  | 'connection_failed'
  | 'bad_status'
  | 'too_many_redirects'

export class OutboundError extends Error {
  readonly code: OutboundErrorCode
  constructor(code: OutboundErrorCode, message: string) {
    super(message)
    this.code = code
  }
}

export interface OutboundResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  /** at most maxResponseBytes; the rest is never read */
  body: Buffer
  durationMs: number
}

export interface OutboundRequest {
  method?: 'GET' | 'POST' | 'DELETE'
  headers?: Record<string, string>
  body?: string | Buffer
}

export interface OutboundDownload {
  /** the final address after redirects */
  url: string
  headers: Record<string, string | string[] | undefined>
  /** the body as it arrives; the caller reads it to the end or destroys it */
  body: AsyncIterable<Buffer> & { destroy(): void }
}

export interface OutboundHttp {
  send(url: string, request?: OutboundRequest): Promise<OutboundResponse>
  /**
   * GET of a file to stream: redirects followed (at most `maxRedirects`), each hop through the same guard; a status
   * other than 2xx is an OutboundError `bad_status`. The body has `idleTimeoutMs` between chunks, not a total limit.
   */
  download(url: string, options?: { maxRedirects?: number; idleTimeoutMs?: number }): Promise<OutboundDownload>
  close(): Promise<void>
}

type Resolver = (hostname: string) => Promise<LookupAddress[]>

export interface OutboundHttpOptions {
  /** HEROLD_ALLOW_PRIVATE_TARGETS: tests and closed networks may call private and loopback addresses */
  allowPrivateTargets: boolean
  timeoutMs?: number
  maxResponseBytes?: number
  /** the name resolution to check (tests inject one); default: the system resolver */
  resolve?: Resolver
  /** which resolved addresses may be connected to; default: public ones only (tests narrow it) */
  isAllowed?: (address: string) => boolean
}

export const OUTBOUND_TIMEOUT_MS = 5_000
const MAX_RESPONSE_BYTES = 8 * 1024

const systemResolve: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  )

// Ranges no customer-chosen target may reach: this-network, private, shared (CGNAT), loopback, link-local,
// protocol assignments, documentation, benchmarking, multicast, reserved and broadcast.
const blockedV4: Array<[string, number]> = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
]
// Unspecified, loopback and IPv4-compatible (::/96), discard, Teredo and other protocol assignments,
// documentation, unique-local, link-local, site-local, multicast. IPv4-mapped, NAT64 and 6to4 forms are
// checked by the IPv4 address they carry.
const blockedV6: Array<[string, number]> = [
  ['::', 96],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
]

const blockList = new net.BlockList()
for (const [address, prefix] of blockedV4) blockList.addSubnet(address, prefix, 'ipv4')
for (const [address, prefix] of blockedV6) blockList.addSubnet(address, prefix, 'ipv6')

/** The eight 16-bit groups of an IPv6 address (with an optional dotted IPv4 tail). */
function ipv6Groups(address: string): number[] | null {
  let text = address.toLowerCase().replace(/%.*$/, '')
  const dotted = text.match(/(\d+\.\d+\.\d+\.\d+)$/)
  if (dotted) {
    const parts = dotted[1].split('.').map(Number)
    text = `${text.slice(0, -dotted[1].length)}${((parts[0] << 8) | parts[1]).toString(16)}:${((parts[2] << 8) | parts[3]).toString(16)}`
  }
  const [head, tail, extra] = text.split('::')
  if (extra !== undefined) return null
  const headGroups = head ? head.split(':') : []
  const tailGroups = tail ? tail.split(':') : []
  const missing = 8 - headGroups.length - tailGroups.length
  if (tail === undefined ? missing !== 0 : missing < 1) return null
  const groups = [...headGroups, ...Array(tail === undefined ? 0 : missing).fill('0'), ...tailGroups]
  return groups.map((g) => Number.parseInt(g, 16))
}

function embeddedIpv4(groups: number[]): string | null {
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0)
  // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (translated)
  if (zeros(0, 5) && groups[5] === 0xffff) return v4(groups[6], groups[7])
  if (zeros(0, 4) && groups[4] === 0xffff && groups[5] === 0) return v4(groups[6], groups[7])
  // 64:ff9b::a.b.c.d (NAT64) and 64:ff9b:1::/48 (local NAT64)
  if (groups[0] === 0x64 && groups[1] === 0xff9b) return v4(groups[6], groups[7])
  // 2002:aabb:ccdd::/48 (6to4)
  if (groups[0] === 0x2002) return v4(groups[1], groups[2])
  return null
}

/** True when an outbound call may connect to this literal address. */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address)
  if (family === 4) return !blockList.check(address, 'ipv4')
  if (family !== 6) return false
  const groups = ipv6Groups(address)
  if (!groups || groups.some((g) => Number.isNaN(g) || g < 0 || g > 0xffff)) return false
  const inner = embeddedIpv4(groups)
  if (inner !== null) return isPublicAddress(inner)
  return !blockList.check(address.replace(/%.*$/, ''), 'ipv6')
}

type LookupCallback = (error: Error | null, address: string | LookupAddress[], family?: number) => void

/** A net.connect lookup that refuses the connection when any resolved address is not public. */
function guardedLookup(resolve: Resolver, isAllowed: (address: string) => boolean) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback) => {
    resolve(hostname).then(
      (addresses) => {
        const refused = addresses.find((a) => !isAllowed(a.address))
        if (addresses.length === 0) return callback(new OutboundError('dns_failed', `${hostname} has no address`), '')
        if (refused) {
          return callback(
            new OutboundError('blocked_target', `${hostname} resolves to ${refused.address}, a non-public address`),
            '',
          )
        }
        if (options.all) return callback(null, addresses)
        callback(null, addresses[0].address, addresses[0].family)
      },
      (error: NodeJS.ErrnoException) =>
        callback(new OutboundError('dns_failed', `${hostname} could not be resolved (${error.code ?? 'error'})`), ''),
    )
  }
}

function findOutboundError(error: unknown): OutboundError | null {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof OutboundError) return e
  }
  return null
}

function classify(error: unknown, timedOut: boolean): OutboundError {
  const known = findOutboundError(error)
  if (known) return known
  if (timedOut) return new OutboundError('timeout', 'no complete response within the timeout')
  const code = (error as { code?: string }).code
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return new OutboundError('timeout', 'no complete response within the timeout')
  }
  const cause = (error as { cause?: { code?: string } }).cause?.code
  return new OutboundError('connection_failed', `connection failed (${code ?? cause ?? 'error'})`)
}

export function createOutboundHttp(options: OutboundHttpOptions): OutboundHttp {
  const timeoutMs = options.timeoutMs ?? OUTBOUND_TIMEOUT_MS
  const maxBytes = options.maxResponseBytes ?? MAX_RESPONSE_BYTES
  const guard = !options.allowPrivateTargets
  const isAllowed = options.isAllowed ?? isPublicAddress
  const agent = new Agent({
    connect: {
      timeout: timeoutMs,
      ...(guard ? { lookup: guardedLookup(options.resolve ?? systemResolve, isAllowed) } : {}),
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    keepAliveTimeout: 4_000,
  })

  async function send(target: string, init: OutboundRequest = {}): Promise<OutboundResponse> {
    const url = parseTarget(target)
    const host = url.hostname.replace(/^\[|\]$/g, '')
    if (guard && net.isIP(host) && !isAllowed(host)) {
      throw new OutboundError('blocked_target', `${host} is not a public address`)
    }
    const started = performance.now()
    const signal = AbortSignal.timeout(timeoutMs)
    try {
      const response = await request(url, {
        method: init.method ?? 'POST',
        headers: init.headers,
        body: init.body,
        dispatcher: agent,
        signal,
      })
      const body = await readCapped(response.body, maxBytes)
      return {
        status: response.statusCode,
        headers: response.headers,
        body,
        durationMs: Math.round(performance.now() - started),
      }
    } catch (error) {
      throw classify(error, signal.aborted)
    }
  }

  async function download(
    target: string,
    options: { maxRedirects?: number; idleTimeoutMs?: number } = {},
  ): Promise<OutboundDownload> {
    const maxRedirects = options.maxRedirects ?? 5
    let url = parseTarget(target)
    for (let hop = 0; ; hop++) {
      const host = url.hostname.replace(/^\[|\]$/g, '')
      if (guard && net.isIP(host) && !isAllowed(host)) {
        throw new OutboundError('blocked_target', `${host} is not a public address`)
      }
      // no overall deadline (a large file takes its time): the connect and header timeouts, then an idle timeout
      let response: Awaited<ReturnType<typeof request>>
      try {
        response = await request(url, {
          method: 'GET',
          dispatcher: agent,
          headersTimeout: timeoutMs,
          bodyTimeout: options.idleTimeoutMs ?? 30_000,
        })
      } catch (error) {
        throw classify(error, false)
      }
      const location = response.headers.location
      if (response.statusCode >= 300 && response.statusCode < 400 && typeof location === 'string') {
        await response.body.dump().catch(() => {})
        if (hop >= maxRedirects) throw new OutboundError('too_many_redirects', `more than ${maxRedirects} redirects`)
        url = parseTarget(new URL(location, url).toString())
        continue
      }
      if (response.statusCode < 200 || response.statusCode >= 300) {
        await response.body.dump().catch(() => {})
        throw new OutboundError('bad_status', `the server answered ${response.statusCode}`)
      }
      return { url: url.toString(), headers: response.headers, body: response.body }
    }
  }

  return { send, download, close: () => agent.close() }
}

function parseTarget(target: string): URL {
  let url: URL
  try {
    url = new URL(target)
  } catch {
    throw new OutboundError('invalid_url', 'not an absolute URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OutboundError('invalid_url', 'only http and https URLs can be called')
  }
  return url
}

async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    chunks.push(chunk.subarray(0, maxBytes - size))
    size += Math.min(chunk.length, maxBytes - size)
    if (size >= maxBytes) {
      body.destroy()
      break
    }
  }
  return Buffer.concat(chunks)
}
