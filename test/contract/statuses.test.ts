import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, test } from 'node:test'
import type { InjectOptions } from 'fastify'
import { committedDocument, contractBreach, documentedPath } from '../helpers/contract.ts'
import { createHarness, createKey, createTestAccount, type Harness, type TestAccount } from '../helpers/harness.ts'

// For a sample of routes, provokes every status the document lists (500 and 503 cannot be provoked from outside) and
// checks each answer against the document: its status and its code and key must be documented for the operation.

const doc = committedDocument()
const unprovokable = new Set(['500', '503'])
let harness: Harness
before(async () => {
  harness = await createHarness()
})
after(() => harness.close())

interface Case {
  key?: string | null
  request: InjectOptions
  status: number
  code?: string
}

const big = { name: 'x'.repeat(1_100_000) }
const plainText = { payload: '<name>x</name>', headers: { 'content-type': 'application/xml' } }

/** Sends each case, checks it keeps the document, and that together they cover every documented status. */
async function provoke(method: string, url: string, cases: Case[]): Promise<void> {
  const path = documentedPath(doc, method, url)
  assert.ok(path, `${method} ${url} is documented`)
  const seen = new Set<string>()
  for (const c of cases) {
    const headers = { ...(c.key ? { authorization: `Bearer ${c.key}` } : {}), ...(c.request.headers ?? {}) }
    const response = await harness.app.inject({ method, url, ...c.request, headers })
    const where = `${method} ${c.request.url ?? url}`
    assert.equal(response.statusCode, c.status, `${where}: ${response.body.slice(0, 300)}`)
    if (c.code) assert.equal(response.json().error.code, c.code, where)
    assert.equal(contractBreach(doc, method, String(c.request.url ?? url), response), null)
    seen.add(String(response.statusCode))
  }
  const documented = Object.keys(doc.paths[path][method.toLowerCase()].responses).filter((s) => !unprovokable.has(s))
  assert.deepEqual([...seen].sort(), documented.sort(), `${method} ${path}: provoked and documented statuses`)
}

async function accountPair(plan: { webhooks?: number; requestsPerMinute?: number } = {}) {
  const account = await createTestAccount(harness, { plan: { requestsPerMinute: 1000, ...plan } })
  const readOnly = await createKey(harness, account.accountId, ['contacts:read'])
  return { account, readOnly }
}

async function contact(account: TestAccount, email: string): Promise<string> {
  const response = await account.request({ method: 'POST', url: '/v1/contacts', payload: { email } })
  return response.json().contact.id
}

/** Spends a key's requests of this minute so that the next answers 429. */
async function spent(): Promise<string> {
  const account = await createTestAccount(harness, { plan: { requestsPerMinute: 1 } })
  await account.request({ method: 'GET', url: '/v1/me' })
  return account.key
}

test('PATCH /contacts/{id} answers each documented status, 409 contact_exists among them', async () => {
  const { account, readOnly } = await accountPair()
  const id = await contact(account, 'first@example.com')
  await contact(account, 'second@example.com')
  const url = `/v1/contacts/${id}`
  await provoke('PATCH', url, [
    { key: account.key, request: { payload: { name: 'Erika' } }, status: 200 },
    { key: account.key, request: { payload: { email: null } }, status: 400, code: 'bad_request' },
    { key: account.key, request: { url: '/v1/contacts/not-a-uuid', payload: {} }, status: 400 },
    { key: null, request: { payload: { name: 'x' } }, status: 401, code: 'unauthorized' },
    { key: readOnly, request: { payload: { name: 'x' } }, status: 403, code: 'forbidden' },
    { key: account.key, request: { url: `/v1/contacts/${randomUUID()}`, payload: { name: 'x' } }, status: 404 },
    { key: account.key, request: { payload: { email: 'second@example.com' } }, status: 409, code: 'contact_exists' },
    { key: account.key, request: { payload: big }, status: 413, code: 'payload_too_large' },
    { key: account.key, request: plainText, status: 415, code: 'unsupported_media_type' },
    { key: await spent(), request: { payload: { name: 'x' } }, status: 429, code: 'rate_limited' },
  ])
})

test('DELETE /templates/{id} answers each documented status, 409 template_in_use among them', async () => {
  const { account, readOnly } = await accountPair()
  const template = async () =>
    (await account.request({ method: 'POST', url: '/v1/templates', payload: { name: 'T', content: 'Hallo' } })).json()
      .template.id as string
  const used = await template()
  const automation = await account.request({
    method: 'POST',
    url: '/v1/automations',
    payload: { name: 'Uses it', trigger: { type: 'manual' }, steps: [{ type: 'send_template', template_id: used }] },
  })
  assert.equal(automation.statusCode, 200, automation.body)
  const system = (await account.request({ method: 'GET', url: '/v1/templates?limit=100' }))
    .json()
    .templates.find((t: { system?: boolean }) => t.system)
  const cases: Case[] = [
    { key: account.key, request: { url: `/v1/templates/${await template()}` }, status: 200 },
    { key: account.key, request: { url: '/v1/templates/not-a-uuid' }, status: 400, code: 'bad_request' },
    { key: null, request: {}, status: 401 },
    { key: readOnly, request: {}, status: 403 },
    { key: account.key, request: { url: `/v1/templates/${randomUUID()}` }, status: 404 },
    { key: account.key, request: { url: `/v1/templates/${used}` }, status: 409, code: 'template_in_use' },
    { key: await spent(), request: {}, status: 429 },
  ]
  if (system) cases.push({ key: account.key, request: { url: `/v1/templates/${system.id}` }, status: 400 })
  await provoke('DELETE', `/v1/templates/${used}`, cases)
})

test('POST /webhook-subscriptions answers each documented status, 409 webhook_limit_reached among them', async () => {
  const { account, readOnly } = await accountPair({ webhooks: 1 })
  const body = { url: 'https://hooks.example.com/herold', events: ['contact.created'] }
  await provoke('POST', '/v1/webhook-subscriptions', [
    { key: account.key, request: { payload: body }, status: 201 },
    { key: account.key, request: { payload: { ...body, url: 'http://hooks.example.com' } }, status: 400 },
    { key: null, request: { payload: body }, status: 401 },
    { key: readOnly, request: { payload: body }, status: 403 },
    { key: account.key, request: { payload: body }, status: 409, code: 'webhook_limit_reached' },
    { key: account.key, request: { payload: big }, status: 413 },
    { key: account.key, request: plainText, status: 415 },
    { key: await spent(), request: { payload: body }, status: 429 },
  ])
})

test('GET /openapi.json and /openapi.yaml document their 200, and their 400 for a query parameter they do not take', async () => {
  for (const url of ['/v1/openapi.json', '/v1/openapi.yaml']) {
    await provoke('GET', url, [
      { request: {}, status: 200 },
      { request: { url: `${url}?v=2` }, status: 400, code: 'bad_request' },
    ])
  }
})
