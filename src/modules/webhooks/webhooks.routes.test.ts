import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createHarness, createTestAccount, type Harness, json } from '../../../test/helpers/harness.ts'

let harness: Harness
let strict: Harness

before(async () => {
  harness = await createHarness({ config: { allowPrivateTargets: true } })
  strict = await createHarness({ config: { allowPrivateTargets: false } })
})
after(async () => {
  await harness.close()
  await strict.close()
})

const validBody = { url: 'https://hooks.example.com/herold', events: ['contact.created'] }
type Sub = { id: string; url: string; events: string[]; status: string; secret?: string; disabled_reason: unknown }

async function create(
  account: { request: Awaited<ReturnType<typeof createTestAccount>>['request'] },
  body: object = validBody,
) {
  return account.request({ method: 'POST', url: '/v1/webhook-subscriptions', payload: body })
}

describe('POST /webhook-subscriptions', () => {
  test('creates a subscription and returns it with a signing secret of at least 256 bits', async () => {
    const account = await createTestAccount(harness)
    const response = await create(account, {
      url: 'https://hooks.example.com/a',
      events: ['contact.created', 'message.received'],
    })
    assert.equal(response.statusCode, 201)
    const body = json<Sub & { created_at: string }>(response)
    assert.match(body.id, /^[0-9a-f-]{36}$/)
    assert.equal(body.url, 'https://hooks.example.com/a')
    assert.deepEqual(body.events, ['contact.created', 'message.received'])
    assert.equal(body.status, 'enabled')
    assert.equal(body.disabled_reason, null)
    assert.ok(!Number.isNaN(Date.parse(body.created_at)))
    const [, hex] = body.secret!.split('_')
    assert.ok(hex.length * 4 >= 256)
  })

  test('the secret is stored encrypted, never as given', async () => {
    const account = await createTestAccount(harness)
    const { id, secret } = json<Sub>(await create(account))
    const [row] = await harness.database.query<{ secret_sealed: string }>(
      'SELECT secret_sealed FROM webhook_subscriptions WHERE account_id = $1 AND id = $2',
      [account.accountId, id],
    )
    assert.ok(!row.secret_sealed.includes(secret!))
    assert.ok(!row.secret_sealed.includes(secret!.slice(6)))
  })

  test('an empty events list, an unknown event name or a missing url is a 400 bad_request', async () => {
    const account = await createTestAccount(harness)
    for (const body of [
      { url: validBody.url, events: [] },
      { url: validBody.url, events: ['contact.deleted'] },
      { url: validBody.url, events: ['contact.created', 'nope'] },
      { events: ['contact.created'] },
      { url: 'not a url', events: ['contact.created'] },
      { url: 'ftp://hooks.example.com/x', events: ['contact.created'] },
    ]) {
      const response = await create(account, body)
      assert.equal(response.statusCode, 400, JSON.stringify(body))
      assert.equal(json<{ error: { code: string } }>(response).error.code, 'bad_request')
    }
  })

  test('without the private-target switch, an http url is refused: https is required', async () => {
    const account = await createTestAccount(strict)
    const response = await create(account, { url: 'http://hooks.example.com/x', events: ['contact.created'] })
    assert.equal(response.statusCode, 400)
    assert.deepEqual(
      {
        code: json<{ error: { code: string; key: string } }>(response).error.code,
        key: json<{ error: { key: string } }>(response).error.key,
      },
      { code: 'bad_request', key: 'webhook_url_https_required' },
    )
  })

  test('without the private-target switch, a loopback or private address is refused', async () => {
    const account = await createTestAccount(strict)
    for (const url of [
      'https://127.0.0.1/x',
      'https://localhost/x',
      'https://[::1]/x',
      'https://10.1.2.3/x',
      'https://169.254.169.254/x',
    ]) {
      const response = await create(account, { url, events: ['contact.created'] })
      assert.equal(response.statusCode, 400, url)
      assert.equal(json<{ error: { key: string } }>(response).error.key, 'webhook_url_not_public', url)
    }
  })

  test('with the private-target switch, an http loopback url is accepted', async () => {
    const account = await createTestAccount(harness)
    const response = await create(account, { url: 'http://127.0.0.1:9/x', events: ['contact.created'] })
    assert.equal(response.statusCode, 201)
  })

  test('beyond the plan limit the answer is 409 webhook_limit_reached', async () => {
    const account = await createTestAccount(harness, { plan: { webhooks: 2 } })
    assert.equal((await create(account)).statusCode, 201)
    assert.equal((await create(account)).statusCode, 201)
    const response = await create(account)
    assert.equal(response.statusCode, 409)
    const { error } = json<{ error: { code: string; key: string } }>(response)
    assert.equal(error.code, 'webhook_limit_reached')
    assert.equal(error.key, 'webhook_limit_reached')
  })

  test('concurrent creates never exceed the plan limit', async () => {
    const account = await createTestAccount(harness, { plan: { webhooks: 3 } })
    const responses = await Promise.all(Array.from({ length: 8 }, () => create(account)))
    assert.equal(responses.filter((r) => r.statusCode === 201).length, 3)
    assert.equal(responses.filter((r) => r.statusCode === 409).length, 5)
  })

  test('creating needs webhooks:write: webhooks:read is 403 forbidden apikey_scope_fehlt', async () => {
    const account = await createTestAccount(harness, { scopes: ['webhooks:read'] })
    const response = await create(account)
    assert.equal(response.statusCode, 403)
    assert.deepEqual(json<{ error: { code: string; key: string } }>(response).error.key, 'apikey_scope_fehlt')
  })
})

describe('reading and managing subscriptions', () => {
  test('the list is newest first, paginated, and never shows a secret', async () => {
    const account = await createTestAccount(harness)
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      ids.push(json<Sub>(await create(account)).id)
      harness.clock.advance(1000)
    }
    const first = json<{
      webhook_subscriptions: Sub[]
      limit: number
      offset: number
      has_more: boolean
      next_offset: number | null
    }>(await account.request({ method: 'GET', url: '/v1/webhook-subscriptions?limit=2' }))
    assert.deepEqual(
      first.webhook_subscriptions.map((s) => s.id),
      [ids[2], ids[1]],
    )
    assert.deepEqual([first.limit, first.offset, first.has_more, first.next_offset], [2, 0, true, 2])
    assert.ok(first.webhook_subscriptions.every((s) => !('secret' in s)))
    const second = json<{ webhook_subscriptions: Sub[]; has_more: boolean; next_offset: number | null }>(
      await account.request({ method: 'GET', url: '/v1/webhook-subscriptions?limit=2&offset=2' }),
    )
    assert.deepEqual(
      second.webhook_subscriptions.map((s) => s.id),
      [ids[0]],
    )
    assert.equal(second.has_more, false)
    assert.equal(second.next_offset, null)
  })

  test('GET by id shows the subscription without its secret', async () => {
    const account = await createTestAccount(harness)
    const created = json<Sub>(await create(account))
    const response = await account.request({ method: 'GET', url: `/v1/webhook-subscriptions/${created.id}` })
    assert.equal(response.statusCode, 200)
    const { secret: _secret, ...rest } = created
    assert.deepEqual(json(response), rest)
  })

  test('DELETE removes it: afterwards it is 404', async () => {
    const account = await createTestAccount(harness)
    const { id } = json<Sub>(await create(account))
    const response = await account.request({ method: 'DELETE', url: `/v1/webhook-subscriptions/${id}` })
    assert.equal(response.statusCode, 200)
    assert.deepEqual(json(response), { id, deleted: true })
    assert.equal((await account.request({ method: 'GET', url: `/v1/webhook-subscriptions/${id}` })).statusCode, 404)
    assert.equal((await account.request({ method: 'DELETE', url: `/v1/webhook-subscriptions/${id}` })).statusCode, 404)
  })

  test('rotate-secret returns a new secret, and only then', async () => {
    const account = await createTestAccount(harness)
    const created = json<Sub>(await create(account))
    const response = await account.request({
      method: 'POST',
      url: `/v1/webhook-subscriptions/${created.id}/rotate-secret`,
    })
    assert.equal(response.statusCode, 200)
    const rotated = json<Sub>(response)
    assert.match(rotated.secret!, /^whsec_[0-9a-f]{64}$/)
    assert.notEqual(rotated.secret, created.secret)
  })

  test('enable on an enabled subscription changes nothing', async () => {
    const account = await createTestAccount(harness)
    const created = json<Sub>(await create(account))
    const response = await account.request({ method: 'POST', url: `/v1/webhook-subscriptions/${created.id}/enable` })
    assert.equal(response.statusCode, 200)
    assert.equal(json<Sub>(response).status, 'enabled')
  })

  test('reading needs webhooks:read, changing needs webhooks:write', async () => {
    const owner = await createTestAccount(harness)
    const { id } = json<Sub>(await create(owner))
    const writeOnly = await createTestAccount(harness, { scopes: ['webhooks:write'] })
    const readOnly = await createTestAccount(harness, { scopes: ['webhooks:read'] })
    for (const [account, method, url] of [
      [writeOnly, 'GET', '/v1/webhook-subscriptions'],
      [writeOnly, 'GET', `/v1/webhook-subscriptions/${id}`],
      [writeOnly, 'GET', `/v1/webhook-subscriptions/${id}/deliveries`],
      [readOnly, 'DELETE', `/v1/webhook-subscriptions/${id}`],
      [readOnly, 'POST', `/v1/webhook-subscriptions/${id}/enable`],
      [readOnly, 'POST', `/v1/webhook-subscriptions/${id}/rotate-secret`],
    ] as const) {
      const response = await account.request({ method, url })
      assert.equal(response.statusCode, 403, `${method} ${url}`)
      assert.equal(json<{ error: { key: string } }>(response).error.key, 'apikey_scope_fehlt')
    }
  })

  test("another account's subscription is 404 on every route and missing from its list", async () => {
    const owner = await createTestAccount(harness)
    const { id } = json<Sub>(await create(owner))
    const other = await createTestAccount(harness)
    for (const [method, url] of [
      ['GET', `/v1/webhook-subscriptions/${id}`],
      ['DELETE', `/v1/webhook-subscriptions/${id}`],
      ['POST', `/v1/webhook-subscriptions/${id}/enable`],
      ['POST', `/v1/webhook-subscriptions/${id}/rotate-secret`],
      ['GET', `/v1/webhook-subscriptions/${id}/deliveries`],
    ] as const) {
      const response = await other.request({ method, url })
      assert.equal(response.statusCode, 404, `${method} ${url}`)
      assert.equal(json<{ error: { code: string } }>(response).error.code, 'not_found')
    }
    const list = json<{ webhook_subscriptions: Sub[] }>(
      await other.request({ method: 'GET', url: '/v1/webhook-subscriptions' }),
    )
    assert.deepEqual(list.webhook_subscriptions, [])
    assert.equal((await owner.request({ method: 'GET', url: `/v1/webhook-subscriptions/${id}` })).statusCode, 200)
  })

  test('an id that is not a uuid is 404', async () => {
    const account = await createTestAccount(harness)
    const response = await account.request({ method: 'GET', url: '/v1/webhook-subscriptions/nope' })
    assert.equal(response.statusCode, 404)
  })

  test('every route refuses a missing key with 401 unauthorized', async () => {
    for (const [method, url] of [
      ['POST', '/v1/webhook-subscriptions'],
      ['GET', '/v1/webhook-subscriptions'],
      ['GET', '/v1/webhook-subscriptions/00000000-0000-4000-8000-000000000000'],
      ['DELETE', '/v1/webhook-subscriptions/00000000-0000-4000-8000-000000000000'],
      ['POST', '/v1/webhook-subscriptions/00000000-0000-4000-8000-000000000000/enable'],
      ['POST', '/v1/webhook-subscriptions/00000000-0000-4000-8000-000000000000/rotate-secret'],
      ['GET', '/v1/webhook-subscriptions/00000000-0000-4000-8000-000000000000/deliveries'],
    ] as const) {
      const response = await harness.app.inject({ method, url })
      assert.equal(response.statusCode, 401, `${method} ${url}`)
    }
  })

  test('the OpenAPI document describes every subscription route with its response', async () => {
    const doc = json<{ paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>(
      await harness.app.inject({ method: 'GET', url: '/v1/openapi.json' }),
    )
    assert.ok(doc.paths['/v1/webhook-subscriptions'].post.responses['201'])
    assert.ok(doc.paths['/v1/webhook-subscriptions'].get.responses['200'])
    assert.ok(doc.paths['/v1/webhook-subscriptions/{id}/deliveries'].get.responses['200'])
    assert.ok(doc.paths['/v1/webhook-subscriptions/{id}/rotate-secret'].post.responses['200'])
  })
})
