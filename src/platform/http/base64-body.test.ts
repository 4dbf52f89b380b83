import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, test } from 'node:test'
import Fastify from 'fastify'
import { installBase64JsonParser, liftedBase64 } from './base64-body.ts'
import { createBodyBudget } from './body-budget.ts'
import { AppError } from './errors.ts'

const MB = 1024 * 1024

function app() {
  const server = Fastify({ bodyLimit: 64 * MB })
  server.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => {
    if (error instanceof AppError) return reply.code(error.status).headers(error.headers).send(error.toBody())
    return reply.code(error.statusCode ?? 500).send({ error: { code: 'other', key: 'other', message: error.message } })
  })
  return server
}

const big = Buffer.alloc(3 * MB + 5, 7)

test('a large data_base64 is lifted out of the body and decoded; the rest parses as JSON', async () => {
  const server = app()
  installBase64JsonParser(server, { field: 'data_base64', invalidKey: 'media_base64_invalid' })
  server.post('/', async (request) => ({ body: request.body, bytes: liftedBase64(request)?.equals(big) ?? null }))
  const post = (payload: string) =>
    server.inject({ method: 'POST', url: '/', headers: { 'content-type': 'application/json' }, payload })
  const encoded = big.toString('base64')

  const plain = await post(JSON.stringify({ filename: 'a.pdf', data_base64: encoded, mime: 'application/pdf' }))
  assert.equal(plain.statusCode, 200, plain.body)
  assert.equal(plain.json().bytes, true)
  assert.equal(plain.json().body.filename, 'a.pdf')
  assert.match(plain.json().body.data_base64, /^lifted:[0-9a-f]{24}$/)

  // a data URL, line breaks (as escapes) and escaped slashes are base64 too
  const wrapped = `data:application/pdf;base64,${encoded.replace(/(.{76})/g, '$1\\n').replaceAll('/', '\\/')}`
  const escaped = await post(`{"data_base64": "${wrapped}", "filename": "a.pdf"}`)
  assert.equal(escaped.json().bytes, true, escaped.body)

  // not base64: the route's key
  const broken = await post(JSON.stringify({ data_base64: `${encoded.slice(0, 1000)}*${encoded.slice(1000)}` }))
  assert.equal(broken.statusCode, 400)
  assert.equal(broken.json().error.key, 'media_base64_invalid')

  // the field inside another value is not lifted; the body parses as usual
  const nested = await post(JSON.stringify({ note: { data_base64: encoded } }))
  assert.equal(nested.statusCode, 200)
  assert.equal(nested.json().bytes, null)
  assert.equal(nested.json().body.note.data_base64, encoded)

  // Fastify's own JSON rules still hold (no __proto__), and broken JSON is a 400
  const proto = await post(`{"__proto__": {"x": 1}, "data_base64": "${encoded}"}`)
  assert.equal(proto.statusCode, 400)
  const cut = await post(`{"data_base64": "${encoded}"`)
  assert.equal(cut.statusCode, 400)
  await server.close()
})

test('large bodies in flight share one budget: over it, 429 uploads_in_flight with Retry-After before the body is read', async () => {
  const server = app()
  const budget = createBodyBudget(10 * MB)
  server.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
  server.post('/', { onRequest: budget.hook(64 * MB) }, async (request) => ({ size: (request.body as Buffer).length }))
  await server.listen({ port: 0, host: '127.0.0.1' })
  after(() => server.close())
  const { port } = server.server.address() as AddressInfo
  const open = (size: number) => {
    const request = http.request({
      port,
      host: '127.0.0.1',
      method: 'POST',
      path: '/',
      agent: false,
      headers: { 'content-length': String(size), 'content-type': 'application/octet-stream' },
    })
    const answer = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>(
      (resolve, reject) => {
        request.on('response', (response) => {
          let body = ''
          response.on('data', (piece) => {
            body += piece
          })
          response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }))
        })
        request.on('error', reject)
      },
    )
    return { request, answer }
  }
  // the first is let in whatever its size; it holds 8 MB of the budget while its body comes
  const first = open(8 * MB)
  first.request.write(Buffer.alloc(MB))
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.equal(budget.inFlight(), 8 * MB)
  const second = open(4 * MB)
  second.request.write(Buffer.alloc(1024))
  const refused = await second.answer
  second.request.destroy()
  assert.equal(refused.status, 429)
  assert.equal(JSON.parse(refused.body).error.key, 'uploads_in_flight')
  assert.ok(Number(refused.headers['retry-after']) > 0)
  // a small one still fits
  const small = open(MB)
  small.request.end(Buffer.alloc(MB))
  assert.equal((await small.answer).status, 200)
  first.request.end(Buffer.alloc(7 * MB))
  assert.equal((await first.answer).status, 200)
  await new Promise((resolve) => setTimeout(resolve, 50))
  assert.equal(budget.inFlight(), 0, 'released when answered')
  const again = open(4 * MB)
  again.request.end(Buffer.alloc(4 * MB))
  assert.equal((await again.answer).status, 200)
})
