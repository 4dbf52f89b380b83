import assert from 'node:assert/strict'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before } from 'node:test'
import { drainJobs } from './fixtures.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from './harness.ts'

// What the tests of the built-in AI share: a fake OpenAI-compatible endpoint, the harness against it, an account on
// the sandbox with the returns document, inbound messages and what came of them.

// biome-ignore lint/suspicious/noExplicitAny: request and response bodies are read loosely in tests
export type Json = Record<string, any>

/** A fake OpenAI-compatible chat-completions server on loopback: it checks each request and answers by rule. */
export interface FakeAi {
  url: string
  requests: Json[]
  /** the reply prompt's answer for a customer message */
  answer: (question: string, passages: string) => Json
  /** the tag prompt's answer */
  tags: (message: string, offered: string[]) => string[]
  /** how it answers: as a model, 500, never (the caller times out), or HTML instead of a chat completion */
  mode: 'ok' | 'error500' | 'hang' | 'garbage'
  close(): Promise<void>
}

export async function startFakeAi(): Promise<FakeAi> {
  const fake: FakeAi = {
    url: '',
    requests: [],
    close: async () => {},
    answer: () => ({ answer: null, reason: 'unset' }),
    tags: () => [],
    mode: 'ok',
  }
  const read = (request: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let body = ''
      request.on('data', (chunk) => {
        body += chunk
      })
      request.on('end', () => resolve(body))
    })
  const server: Server = createServer(async (request, response) => {
    const body = JSON.parse(await read(request)) as Json
    fake.requests.push({
      method: request.method,
      path: request.url,
      authorization: request.headers.authorization,
      body,
    })
    const fail = (status: number, message: string) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message } }))
    if (request.method !== 'POST' || request.url !== '/v1/chat/completions') return fail(404, 'unknown route')
    if (request.headers.authorization !== 'Bearer sk-test-key') return fail(401, 'bad key')
    if (body.model !== 'herold-test-model' || !Array.isArray(body.messages)) return fail(400, 'bad request')
    if (fake.mode === 'error500') return fail(500, 'the model server is overloaded')
    if (fake.mode === 'hang') return
    if (fake.mode === 'garbage')
      return response.writeHead(200, { 'content-type': 'text/html' }).end('<html>oops</html>')
    const [system, user] = body.messages as Array<{ role: string; content: string }>
    let content: string
    if (system.content.includes('label customer chat messages')) {
      const offered = JSON.parse(system.content.split('\n')[2]) as string[]
      content = JSON.stringify({ tags: fake.tags(user.content, offered) })
    } else {
      const [passages, question] = user.content.split('\n\nCustomer message:\n')
      content = JSON.stringify(fake.answer(question, passages))
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'chatcmpl-1',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      }),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
  fake.close = () =>
    new Promise((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  return fake
}

export const RETURNS =
  '# Rücksendungen\n\nSie können jede Bestellung innerhalb von 30 Tagen kostenlos zurückschicken. Den Rücksendeschein finden Sie im Paket.\n\n# Zahlung\n\nWir akzeptieren Rechnung, Kreditkarte und PayPal.\n'

let harness: Harness

/**
 * The harness against the fake endpoint; jobs run only inside drain(): a test sees the inbound stored before any
 * reply exists.
 */
export async function aiHarness(ai: FakeAi): Promise<Harness> {
  harness = await createHarness({
    workers: true,
    config: { aiUrl: ai.url, aiKey: 'sk-test-key', aiModel: 'herold-test-model', aiTimeoutMs: 1000 },
  })
  await harness.jobs!.stop()
  return harness
}

export const drain = () => drainJobs(harness)

/**
 * A fake endpoint and a harness (by default the one against it) made before the tests of the file or describe block
 * and closed after them; `ready` receives both.
 */
export function withAiHarness(
  ready: (harness: Harness, ai: FakeAi) => void,
  make: (ai: FakeAi) => Promise<Harness> = aiHarness,
): void {
  let made: Harness | undefined
  let fake: FakeAi | undefined
  before(async () => {
    fake = await startFakeAi()
    made = await make(fake)
    ready(made, fake)
  })
  after(async () => {
    await made?.close()
    await fake?.close()
  })
}

/** A German account on the sandbox with the returns document and AI replies (and optionally tags) on. */
export async function aiAccount(settings: Json = { replies_enabled: true }): Promise<TestAccount> {
  const account = await createTestAccount(harness)
  await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
  const uploaded = await account.request({
    method: 'POST',
    url: '/v1/knowledge/documents',
    payload: { data_base64: Buffer.from(RETURNS).toString('base64'), filename: 'service.md' },
  })
  assert.equal(uploaded.statusCode, 201, uploaded.body)
  const patched = await account.request({ method: 'PATCH', url: '/v1/settings/ai', payload: settings })
  assert.equal(patched.statusCode, 200, patched.body)
  return account
}

export async function inbound(account: TestAccount, from: string, text: string) {
  const response = await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from, text } })
  assert.equal(response.statusCode, 200, response.body)
}

export async function conversation(account: TestAccount) {
  const list = await account.request({ method: 'GET', url: '/v1/inbox/conversations' })
  const [item] = list.json().conversations as Json[]
  const messages = await account.request({ method: 'GET', url: `/v1/inbox/conversations/${item.id}/messages` })
  return { conversation: item, messages: messages.json().messages as Json[] }
}

export async function replies(account: TestAccount) {
  const response = await account.request({ method: 'GET', url: '/v1/knowledge/ai-replies' })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().ai_replies as Json[]
}
