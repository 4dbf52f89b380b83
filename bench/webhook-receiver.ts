/**
 * The webhook benchmark's receiver, in a process of its own (bench/webhooks.ts starts it), as a real receiver runs
 * elsewhere: in the benchmark's process it shared Herold's event loop, so every delivery paid for its own receipt
 * too, and the CPU a delivery counted the receiver's work.
 *
 * It does what a careful receiver does: verify the signature, deduplicate by delivery id, answer 204. It tells the
 * parent over IPC when each delivery arrived (epoch milliseconds, sub-millisecond, comparable across processes of
 * this machine), a few milliseconds' worth at a time, so the reports cost little beside the requests.
 *
 * Messages from the parent: { secret } sets the signing secret, { clear: n } forgets what was received (n counts the
 * clears), { close: true } ends the process. To the parent: { url } once listening, { received: [[id, at], …], bad,
 * epoch } (epoch: the last clear's n).
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'

const FLUSH_MS = 2
let secret = ''
let seen = new Set<string>()
let pending: Array<[string, number]> = []
let bad = 0
/** the parent's count of clears: a report of an earlier phase that arrives late is told apart */
let epoch = 0
let flushing: NodeJS.Timeout | null = null

const flush = () => {
  flushing = null
  const received = pending
  pending = []
  process.send?.({ received, bad, epoch })
}

const server = http.createServer((req, res) => {
  const chunks: Buffer[] = []
  req.on('data', (c: Buffer) => chunks.push(c))
  req.on('end', () => {
    const raw = Buffer.concat(chunks)
    const timestamp = String(req.headers['x-service-timestamp'])
    const expected = createHmac('sha256', secret).update(`${timestamp}.`).update(raw).digest()
    const given = Buffer.from(String(req.headers['x-service-signature']).slice(3), 'hex')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) bad++
    const id = String(req.headers['x-service-delivery'])
    if (!seen.has(id)) {
      seen.add(id)
      pending.push([id, performance.timeOrigin + performance.now()])
      if (flushing === null) flushing = setTimeout(flush, FLUSH_MS)
    }
    res.writeHead(204).end()
  })
})
server.keepAliveTimeout = 10_000

process.on('message', (message: { secret?: string; clear?: number; close?: boolean }) => {
  if (message.secret !== undefined) secret = message.secret
  if (message.clear !== undefined) {
    epoch = message.clear
    seen = new Set()
    pending = []
  }
  if (message.close) server.close(() => process.exit(0))
})

// the benchmark ended without a word (killed, crashed): so does its receiver
process.on('disconnect', () => process.exit(0))

server.listen(0, '127.0.0.1', () => {
  process.send?.({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })
})
