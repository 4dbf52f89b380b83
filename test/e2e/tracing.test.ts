import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { childEnv, freePort, listeningAt, ROOT, runCli, startProcess, tempDataDir } from '../helpers/process.ts'
import { createScratchDatabase } from '../helpers/scratch-database.ts'

const sharedUrl = process.env.HEROLD_TEST_DATABASE_URL || undefined

// The OTLP export of a real `herold serve`, received by an OTLP/HTTP receiver written here (JSON encoding, which
// @opentelemetry/exporter-trace-otlp-http sends), which also plays the webhook endpoint the traced job calls.

interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  links?: Array<{ traceId: string; spanId: string }>
  attributes?: Array<{ key: string; value: { stringValue?: string; intValue?: string | number } }>
}

let receiver: Server
let receiverUrl: string
const spans: ReceivedSpan[] = []
const contentTypes = new Set<string>()

before(async () => {
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        contentTypes.add(String(request.headers['content-type']))
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{ scopeSpans: Array<{ spans: ReceivedSpan[] }> }>
        }
        for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans)
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end('{}')
        return
      }
      // the webhook endpoint
      response.writeHead(200)
      response.end('ok')
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`
})
after(() => new Promise<void>((resolve) => receiver.close(() => resolve())))

async function until<T>(what: string, look: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const started = Date.now()
  for (;;) {
    const found = look()
    if (found !== undefined) return found
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe('traces with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  test('spans of HTTP requests, database statements, job runs and provider calls reach the OTLP receiver, the job linked to the request that queued it', async () => {
    // PostgreSQL (a scratch database) when the tests run on it, else the embedded database
    const scratch = sharedUrl ? await createScratchDatabase(sharedUrl, 'herold_tracing') : null
    const dataDir = tempDataDir()
    const env = childEnv({
      HEROLD_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      HEROLD_ALLOW_PRIVATE_TARGETS: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      ...(scratch ? { DATABASE_URL: scratch.url, HEROLD_SECRET_KEY: randomBytes(32).toString('base64') } : {}),
    })
    const server = await startProcess(process.execPath, [path.join(ROOT, 'src/cli/main.ts'), 'serve'], env, listeningAt)
    try {
      const key = scratch ? await cliKey(env) : /HEROLD_API_KEY=(hk_[A-Za-z0-9_-]+)/.exec(server.output())?.[1]
      assert.ok(key, server.output())
      const call = (method: string, url: string, body?: unknown) =>
        fetch(`${server.url}${url}`, {
          method,
          headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        })
      const created = await call('POST', '/v1/webhook-subscriptions', {
        url: `${receiverUrl}/hook`,
        events: ['contact.created'],
      })
      assert.equal(created.status, 201, await created.clone().text())
      const subscription = (await created.json()) as { id: string }
      const tested = await call('POST', `/v1/webhook-subscriptions/${subscription.id}/test`, {})
      assert.ok(tested.status < 300, await tested.clone().text())

      const request = await until('the span of the test request', () =>
        spans.find((s) => s.name === 'POST /v1/webhook-subscriptions/:id/test'),
      )
      const job = await until('the span of the delivery job', () =>
        spans.find((s) => s.name === 'job webhook.deliver' && s.links?.some((l) => l.spanId === request.spanId)),
      )
      assert.equal(job.links?.find((l) => l.spanId === request.spanId)?.traceId, request.traceId)
      const statements = spans.filter((s) => s.name.startsWith('db ') && s.traceId === request.traceId)
      assert.ok(statements.length > 0, 'the request has database statement spans')
      assert.ok(
        statements.every((s) => s.parentSpanId !== undefined),
        'statements are children of the request or its work',
      )
      const inJob = spans.filter((s) => s.traceId === job.traceId && s.name.startsWith('db '))
      assert.ok(inJob.length > 0, "the job's statements are in the job's trace")
      assert.ok(contentTypes.has('application/json'))
      // a provider call: the sandbox number connected through the CLI (the server's admin endpoint)
      const me = (await (await call('GET', '/v1/me')).json()) as { account: { id: string } }
      const connect = await runCli(
        ['channels', 'connect', '--account', me.account.id, '--provider', 'sandbox', '--json'],
        env,
      )
      assert.equal(connect.code, 0, connect.stderr)
      const template = await call('POST', '/v1/templates', {
        name: `Code ${process.pid}`,
        content: 'Hallo {{name}}, Code {{code}}. Bis bald!',
        language: 'de',
      })
      assert.equal(template.status, 201, await template.clone().text())
      const { template: made } = (await template.json()) as { template: { id: string } }
      // the first start connects the sandbox number; submitting asks the provider
      const submitted = await call('POST', `/v1/templates/${made.id}/submit`)
      assert.equal(submitted.status, 200, await submitted.clone().text())
      const providerSpan = await until('a provider span', () => spans.find((s) => s.name === 'provider submitTemplate'))
      const parent = await until('the request around the provider call', () =>
        spans.find((s) => s.spanId === providerSpan.parentSpanId),
      )
      assert.equal(parent.name, 'POST /v1/templates/:id/submit')
      // a tokenised path and a secret query parameter: the spans name the route's pattern, never the url
      const secret = randomBytes(12).toString('hex')
      await (await fetch(`${server.url}/public/optin/${secret}`)).arrayBuffer()
      await (await fetch(`${server.url}/no/such/route?token=${secret}`)).arrayBuffer()
      await until('the span of the opt-in page', () => spans.find((s) => s.name === 'GET /public/optin/:token'))
      await until('the span of the unknown route', () => spans.find((s) => s.name === 'GET unmatched'))
      for (const s of spans) {
        const text = JSON.stringify(s.attributes ?? [])
        assert.ok(!text.includes(key), 'no API key in any span')
        assert.ok(!text.includes(secret) && !s.name.includes(secret), `no secret of a url in a span: ${s.name} ${text}`)
      }
    } finally {
      await server.stop()
      await scratch?.drop().catch(() => {})
    }
  })
})

/** An account and a key made with the CLI (a server database prints no first-start key). */
async function cliKey(env: NodeJS.ProcessEnv): Promise<string> {
  const account = await runCli(['accounts', 'create', '--name', 'Traced', '--json'], env)
  assert.equal(account.code, 0, account.stderr)
  const { id } = JSON.parse(account.stdout) as { id: string }
  const key = await runCli(['keys', 'create', '--account', id, '--name', 'test', '--scopes', 'all', '--json'], env)
  assert.equal(key.code, 0, key.stderr)
  return (JSON.parse(key.stdout) as { key: string }).key
}
