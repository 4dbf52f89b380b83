import { createHmac, timingSafeEqual } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * A webhook receiver written from section 6 of the spec alone (it imports nothing of Herold): it checks the
 * signature in constant time, refuses timestamps older than 5 minutes, and deduplicates by X-Service-Delivery.
 */
export function verifyDelivery(input: {
  secret: string
  headers: Record<string, string | string[] | undefined>
  rawBody: Buffer
  nowSeconds: number
}): { ok: true } | { ok: false; reason: string } {
  const header = (name: string) => {
    const value = input.headers[name]
    return Array.isArray(value) ? value[0] : value
  }
  const timestamp = header('x-service-timestamp')
  const signature = header('x-service-signature')
  if (!timestamp || !/^\d+$/.test(timestamp)) return { ok: false, reason: 'no timestamp' }
  if (!signature?.startsWith('v1=')) return { ok: false, reason: 'no v1 signature' }
  if (input.nowSeconds - Number(timestamp) > 300) return { ok: false, reason: 'timestamp older than 5 minutes' }
  const expected = createHmac('sha256', input.secret)
    .update(Buffer.concat([Buffer.from(`${timestamp}.`), input.rawBody]))
    .digest()
  const given = Buffer.from(signature.slice(3), 'hex')
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'bad signature' }
  return { ok: true }
}

export interface ReceivedDelivery {
  deliveryId: string
  event: string
  timestamp: number
  headers: http.IncomingHttpHeaders
  rawBody: Buffer
  body: { id: string; event: string; created_at: string; data: Record<string, unknown> }
  verified: boolean
  reason: string | null
  duplicate: boolean
  receivedAt: number
}

export type Answer = number | { status: number; delayMs?: number; headers?: Record<string, string> } | 'hang'

export interface WebhookReceiver {
  url: string
  port: number
  /** every request, duplicates included, in arrival order */
  received: ReceivedDelivery[]
  /** first receipt of each delivery id */
  unique(): ReceivedDelivery[]
  secret: string
  answer: (delivery: ReceivedDelivery) => Answer | Promise<Answer>
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>
  close(): Promise<void>
}

export async function startReceiver(
  options: { now?: () => Date; answer?: WebhookReceiver['answer']; path?: string } = {},
): Promise<WebhookReceiver> {
  const seen = new Set<string>()
  const waiters: Array<() => void> = []
  const hanging = new Set<http.ServerResponse>()
  const now = options.now ?? (() => new Date())
  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    received: [],
    unique: () => receiver.received.filter((d) => !d.duplicate),
    secret: '',
    answer: options.answer ?? (() => 200),
    async waitFor(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      while (receiver.received.length < count) {
        const left = deadline - Date.now()
        if (left <= 0)
          throw new Error(`receiver got ${receiver.received.length} of ${count} requests in ${timeoutMs} ms`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          waiters.push(() => {
            clearTimeout(timer)
            resolve()
          })
        })
      }
      return receiver.received
    },
    async close() {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const rawBody = Buffer.concat(chunks)
      const check = verifyDelivery({
        secret: receiver.secret,
        headers: req.headers,
        rawBody,
        nowSeconds: Math.floor(now().getTime() / 1000),
      })
      let body: ReceivedDelivery['body']
      try {
        body = JSON.parse(rawBody.toString('utf8'))
      } catch {
        body = { id: '', event: '', created_at: '', data: {} }
      }
      const deliveryId = String(req.headers['x-service-delivery'] ?? '')
      const delivery: ReceivedDelivery = {
        deliveryId,
        event: String(req.headers['x-service-event'] ?? ''),
        timestamp: Number(req.headers['x-service-timestamp']),
        headers: req.headers,
        rawBody,
        body,
        verified: check.ok,
        reason: check.ok ? null : check.reason,
        duplicate: seen.has(deliveryId),
        receivedAt: Date.now(),
      }
      seen.add(deliveryId)
      receiver.received.push(delivery)
      for (const wake of waiters.splice(0)) wake()
      const answer = await receiver.answer(delivery)
      if (answer === 'hang') {
        hanging.add(res)
        return
      }
      const { status, delayMs, headers } = typeof answer === 'number' ? { status: answer } : answer
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs))
      if (!res.destroyed) res.writeHead(status, headers).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.port = (server.address() as AddressInfo).port
  receiver.url = `http://127.0.0.1:${receiver.port}${options.path ?? '/hooks'}`
  return receiver
}
