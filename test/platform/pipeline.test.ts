import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { eq } from 'drizzle-orm'
import { createMember } from '../../src/modules/people/index.ts'
import {
  blockAccount,
  createOAuthAccessToken,
  revokeApiKey,
  setPlan,
  unblockAccount,
} from '../../src/platform/auth/accounts.service.ts'
import { accounts } from '../../src/platform/auth/auth.tables.ts'
import { ROLE_PERMISSIONS, ROLE_SCOPES } from '../../src/platform/auth/roles.ts'
import { SCOPES } from '../../src/platform/auth/scopes.ts'
import { createHarness, createKey, createTestAccount, type Harness, json } from '../helpers/harness.ts'
import { probeModule } from '../helpers/probe-module.ts'

type ErrorBody = { error: { code: string; key: string; message: string } }

function assertError(response: { statusCode: number; json(): unknown }, status: number, code: string, key = code) {
  assert.equal(response.statusCode, status)
  const body = response.json() as ErrorBody
  assert.deepEqual(Object.keys(body), ['error'])
  assert.equal(body.error.code, code)
  assert.equal(body.error.key, key)
  assert.equal(typeof body.error.message, 'string')
  assert.ok(body.error.message.length > 0)
}

let harness: Harness
const probe = probeModule()

before(async () => {
  harness = await createHarness({ extraModules: [probe.module] })
})
after(() => harness.close())

describe('GET /v1/me', () => {
  test('returns the account, the key with its prefix, the scopes and the rate limit', async () => {
    const caller = await createTestAccount(harness, { name: 'Acme GmbH', scopes: ['contacts:read', 'inbox:read'] })
    const response = await caller.request({ method: 'GET', url: '/v1/me' })
    assert.equal(response.statusCode, 200)
    const body = json<{
      account: { id: string; name: string }
      key: { id: string; name: string; prefix: string }
      auth_type: string
      scopes: string[]
      rate_limit: { requests_per_minute: number }
    }>(response)
    assert.deepEqual(body.account, { id: caller.accountId, name: 'Acme GmbH' })
    assert.equal(body.key.id, caller.keyId)
    assert.equal(body.key.name, 'test key')
    assert.ok(caller.key.startsWith(body.key.prefix))
    assert.ok(body.key.prefix.startsWith('hk_'))
    assert.ok(body.key.prefix.length < caller.key.length / 2, 'the prefix reveals only a small part of the key')
    assert.equal(body.auth_type, 'api_key')
    assert.deepEqual(body.scopes, ['contacts:read', 'inbox:read'])
    assert.deepEqual(body.rate_limit, { requests_per_minute: 120 })
  })

  test('the key carries at least 256 random bits and is stored only as a hash', async () => {
    const caller = await createTestAccount(harness)
    assert.ok(Buffer.from(caller.key.slice(3), 'base64url').length >= 32)
    const rows = await harness.database.query<{ key_hash: string }>('SELECT key_hash FROM api_keys WHERE id = $1', [
      caller.keyId,
    ])
    assert.equal(rows.length, 1)
    assert.notEqual(rows[0].key_hash, caller.key)
    assert.ok(!rows[0].key_hash.includes(caller.key.slice(3, 20)))
  })
})

describe('authentication', () => {
  test('a missing key gives 401 unauthorized', async () => {
    assertError(await harness.app.inject({ method: 'GET', url: '/v1/me' }), 401, 'unauthorized')
  })

  test('an unknown key gives 401 unauthorized', async () => {
    const response = await harness.app.inject({
      method: 'GET',
      url: '/v1/me',
      headers: { authorization: 'Bearer hk_thisisnotakeythisisnotakeythisisnotakey0' },
    })
    assertError(response, 401, 'unauthorized')
  })

  test('a malformed Authorization header gives 401 unauthorized', async () => {
    const caller = await createTestAccount(harness)
    const response = await harness.app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: caller.key } })
    assertError(response, 401, 'unauthorized')
  })

  test('a revoked key gives 401 unauthorized', async () => {
    const caller = await createTestAccount(harness)
    assert.equal((await caller.request({ method: 'GET', url: '/v1/me' })).statusCode, 200)
    await revokeApiKey(harness.database.orm, caller.keyId)
    assertError(await caller.request({ method: 'GET', url: '/v1/me' }), 401, 'unauthorized')
  })

  test('an OAuth access token of the tool server is refused by the REST API', async () => {
    const caller = await createTestAccount(harness)
    const { token } = await createOAuthAccessToken(harness.database.orm, {
      accountId: caller.accountId,
      scopes: [...SCOPES],
      expiresAt: new Date(Date.now() + 3600_000),
    })
    const response = await harness.app.inject({
      method: 'GET',
      url: '/v1/me',
      headers: { authorization: `Bearer ${token}` },
    })
    assertError(response, 401, 'unauthorized')
  })

  test('a missing scope gives 403 forbidden with key apikey_scope_fehlt', async () => {
    const caller = await createTestAccount(harness, { scopes: ['contacts:read'] })
    const response = await caller.request({ method: 'POST', url: '/v1/_probe/things', payload: { name: 'a' } })
    assertError(response, 403, 'forbidden', 'apikey_scope_fehlt')
    assert.equal(probe.state.executions, 0)
  })

  test('a blocked account gives 403 account_blocked, even on /me', async () => {
    const caller = await createTestAccount(harness)
    await blockAccount(harness.database.orm, caller.accountId)
    assertError(await caller.request({ method: 'GET', url: '/v1/me' }), 403, 'account_blocked')
  })

  test('an account whose status cannot be read gives 503 status_unavailable and is not let through', async () => {
    const isolated = await createHarness({ extraModules: [probeModule().module] })
    const caller = await createTestAccount(isolated)
    await isolated.database.close()
    const response = await caller.request({ method: 'GET', url: '/v1/me' })
    assertError(response, 503, 'status_unavailable')
    await isolated.close()
  })
})

describe('credentials are cached per process, and every change shows on the next request', () => {
  test('a key used a moment ago is served from the cache while the database cannot be read; a new one gets 503', async () => {
    // a database of its own: on the shared one, other test processes' account changes clear every cache
    const isolated = await createHarness({ extraModules: [probeModule().module], workers: true })
    try {
      await isolated.jobs!.stop()
      const known = await createTestAccount(isolated)
      const unseen = await createTestAccount(isolated)
      // the creations' notifications arrive asynchronously on PostgreSQL and clear the cache: let them land first
      await new Promise((resolve) => setTimeout(resolve, 500))
      assert.equal((await known.request({ method: 'GET', url: '/v1/me' })).statusCode, 200)
      await isolated.database.close()
      assert.equal((await known.request({ method: 'GET', url: '/v1/me' })).statusCode, 200)
      assertError(await unseen.request({ method: 'GET', url: '/v1/me' }), 503, 'status_unavailable')
    } finally {
      await isolated.close()
    }
  })

  test('a key answered from the cache gets the same refusals as one read from the database', async () => {
    const narrow = await createTestAccount(harness, { scopes: ['contacts:read'] })
    for (let i = 0; i < 2; i++) {
      // the first request reads the key, the second finds it in the cache
      assert.equal((await narrow.request({ method: 'GET', url: '/v1/me' })).statusCode, 200)
      assertError(
        await narrow.request({ method: 'POST', url: '/v1/_probe/things', payload: { name: 'a' } }),
        403,
        'forbidden',
        'apikey_scope_fehlt',
      )
    }
    // the two refused requests were not counted against the key's rate, the two /me were
    const counted = await narrow.request({ method: 'GET', url: '/v1/me' })
    assert.match(String(counted.headers.ratelimit), /^limit=120, remaining=117, reset=\d+$/)
    const blocked = await createTestAccount(harness)
    await blockAccount(harness.database.orm, blocked.accountId)
    for (let i = 0; i < 2; i++)
      assertError(await blocked.request({ method: 'GET', url: '/v1/me' }), 403, 'account_blocked')
    assert.equal(probe.state.executions, 0)
  })

  test('a key used a moment ago, then revoked: 401', async () => {
    const caller = await createTestAccount(harness)
    assert.equal((await caller.request({ method: 'GET', url: '/v1/me' })).statusCode, 200)
    await revokeApiKey(harness.database.orm, caller.keyId)
    assertError(await caller.request({ method: 'GET', url: '/v1/me' }), 401, 'unauthorized')
  })

  test('an account used a moment ago, then blocked by SQL (no Herold code involved): 403; unblocked: 200', async () => {
    const caller = await createTestAccount(harness)
    assert.equal((await caller.request({ method: 'GET', url: '/v1/me' })).statusCode, 200)
    await harness.database.query(`UPDATE accounts SET status = 'blocked' WHERE id = $1`, [caller.accountId])
    await eventually(async () => (await caller.request({ method: 'GET', url: '/v1/me' })).statusCode === 403)
    await unblockAccount(harness.database.orm, caller.accountId)
    assert.equal((await caller.request({ method: 'GET', url: '/v1/me' })).statusCode, 200)
  })

  test("a plan's new rate limit applies at once, and /me shows it", async () => {
    const caller = await createTestAccount(harness, { plan: {} })
    const [{ plan }] = await harness.database.query<{ plan: string }>('SELECT plan FROM accounts WHERE id = $1', [
      caller.accountId,
    ])
    const me = async () =>
      json<{ rate_limit: { requests_per_minute: number } }>(await caller.request({ method: 'GET', url: '/v1/me' }))
    assert.equal((await me()).rate_limit.requests_per_minute, 120)
    await setPlan(harness.database.orm, {
      name: plan,
      contactsLimit: 1000,
      messagesPerMonth: 1000,
      webhooksLimit: 10,
      requestsPerMinute: 3,
    })
    assert.equal((await me()).rate_limit.requests_per_minute, 3)
    for (const remaining of [1, 0]) {
      const ok = await caller.request({ method: 'GET', url: '/v1/me' })
      assert.equal(ok.headers['ratelimit-policy'], '3;w=60')
      assert.match(String(ok.headers.ratelimit), new RegExp(`^limit=3, remaining=${remaining}, reset=\\d+$`))
    }
    assertError(await caller.request({ method: 'GET', url: '/v1/me' }), 429, 'rate_limited')
  })
})

/** Polls for up to a second (the promise of a change made outside this process's code). */
async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let waited = 0; waited <= 1000; waited += 20) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.fail('the change did not show within a second')
}

describe('rate limit', () => {
  test('the 121st request within a minute gives 429 rate_limited with Retry-After; other keys are unaffected', async () => {
    const caller = await createTestAccount(harness)
    const other = await createKey(harness, caller.accountId, ['contacts:read'])
    for (let i = 0; i < 120; i++) {
      const ok = await caller.request({ method: 'GET', url: '/v1/me' })
      assert.equal(ok.statusCode, 200, `request ${i + 1}`)
      assert.equal(ok.headers['ratelimit-policy'], '120;w=60')
      assert.match(String(ok.headers.ratelimit), new RegExp(`^limit=120, remaining=${119 - i}, reset=\\d+$`))
    }
    const limited = await caller.request({ method: 'GET', url: '/v1/me' })
    assertError(limited, 429, 'rate_limited')
    const retryAfter = Number(limited.headers['retry-after'])
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`)
    const otherKey = await harness.app.inject({
      method: 'GET',
      url: '/v1/me',
      headers: { authorization: `Bearer ${other}` },
    })
    assert.equal(otherKey.statusCode, 200)
  })
})

describe('error envelope', () => {
  test('an unknown route gives 404 not_found in the envelope', async () => {
    assertError(await harness.app.inject({ method: 'GET', url: '/v1/nothing-here' }), 404, 'not_found')
    assertError(await harness.app.inject({ method: 'DELETE', url: '/elsewhere' }), 404, 'not_found')
  })

  test('malformed JSON gives 400 bad_request', async () => {
    const caller = await createTestAccount(harness)
    const response = await caller.request({
      method: 'POST',
      url: '/v1/_probe/things',
      headers: { 'content-type': 'application/json' },
      payload: '{"name": ',
    })
    assertError(response, 400, 'bad_request')
  })

  test('a wrong content type gives 415 unsupported_media_type', async () => {
    const caller = await createTestAccount(harness)
    const response = await caller.request({
      method: 'POST',
      url: '/v1/_probe/things',
      headers: { 'content-type': 'text/csv' },
      payload: 'name\na',
    })
    assertError(response, 415, 'unsupported_media_type')
  })

  test('a body over the limit gives 413 payload_too_large', async () => {
    const caller = await createTestAccount(harness)
    const response = await caller.request({
      method: 'POST',
      url: '/v1/_probe/things',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }),
    })
    assertError(response, 413, 'payload_too_large')
  })

  test('a schema violation gives 400 bad_request naming the field', async () => {
    const caller = await createTestAccount(harness)
    const tooLong = await caller.request({
      method: 'POST',
      url: '/v1/_probe/things',
      payload: { name: 'x'.repeat(21) },
    })
    assertError(tooLong, 400, 'bad_request')
    assert.match(json<ErrorBody>(tooLong).error.message, /name/)
    const missing = await caller.request({ method: 'POST', url: '/v1/_probe/things', payload: {} })
    assertError(missing, 400, 'bad_request')
    assert.match(json<ErrorBody>(missing).error.message, /name/)
  })

  test('an unexpected failure gives 500 internal_error without any internals', async () => {
    const caller = await createTestAccount(harness)
    const response = await caller.request({ method: 'GET', url: '/v1/_probe/crash' })
    assertError(response, 500, 'internal_error')
    assert.doesNotMatch(response.body, /secret internal detail|\.ts:|at /)
  })
})

describe('idempotency (section 8)', () => {
  const send = (
    caller: { request: (o: object) => Promise<import('fastify').LightMyRequestResponse> },
    key: string,
    payload: object,
    url = '/v1/_probe/things',
  ) => caller.request({ method: 'POST', url, headers: { 'idempotency-key': key }, payload })

  test('the same key returns the stored first response with Idempotent-Replayed: true, without executing again', async () => {
    const caller = await createTestAccount(harness)
    const first = await send(caller, 'order-1', { name: 'a' })
    assert.equal(first.statusCode, 201)
    assert.equal(first.headers['idempotent-replayed'], undefined)
    const executions = probe.state.executions
    const second = await send(caller, 'order-1', { name: 'a' })
    assert.equal(second.statusCode, 201)
    assert.equal(second.headers['idempotent-replayed'], 'true')
    assert.equal(second.body, first.body)
    assert.equal(probe.state.executions, executions)
  })

  test('the same body with its keys in another order is the same request', async () => {
    const caller = await createTestAccount(harness)
    const first = await caller.request({
      method: 'POST',
      url: '/v1/_probe/things',
      headers: { 'idempotency-key': 'order-2', 'content-type': 'application/json' },
      payload: '{"name":"a","wait":false}',
    })
    const second = await caller.request({
      method: 'POST',
      url: '/v1/_probe/things',
      headers: { 'idempotency-key': 'order-2', 'content-type': 'application/json' },
      payload: '{ "wait": false, "name": "a" }',
    })
    assert.equal(second.headers['idempotent-replayed'], 'true')
    assert.equal(second.body, first.body)
  })

  test('4xx and 5xx final responses are stored and replayed', async () => {
    const caller = await createTestAccount(harness)
    const invalid = await send(caller, 'bad-1', { name: 'x'.repeat(30) })
    assertError(invalid, 400, 'bad_request')
    const replay = await send(caller, 'bad-1', { name: 'x'.repeat(30) })
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal(replay.body, invalid.body)

    const failed = await send(caller, 'fail-502', { name: 'a', fail: 502 })
    assert.equal(failed.statusCode, 502)
    const executions = probe.state.executions
    const failedReplay = await send(caller, 'fail-502', { name: 'a', fail: 502 })
    assert.equal(failedReplay.statusCode, 502)
    assert.equal(failedReplay.headers['idempotent-replayed'], 'true')
    assert.equal(probe.state.executions, executions)
  })

  test('429 and 503 are not stored: the same key runs again', async () => {
    const caller = await createTestAccount(harness)
    for (const status of [503, 429]) {
      const first = await send(caller, `transient-${status}`, { name: 'a', fail: status })
      assert.equal(first.statusCode, status)
      const executions = probe.state.executions
      const second = await send(caller, `transient-${status}`, { name: 'a', fail: status })
      assert.equal(second.headers['idempotent-replayed'], undefined)
      assert.equal(probe.state.executions, executions + 1)
    }
  })

  test('a replay requires the same scope as the original request', async () => {
    const caller = await createTestAccount(harness)
    await send(caller, 'scoped', { name: 'a' })
    // the same key under another API key of the account without the scope is refused before any replay
    const weak = await createKey(harness, caller.accountId, ['contacts:read'])
    const response = await harness.app.inject({
      method: 'POST',
      url: '/v1/_probe/things',
      headers: { authorization: `Bearer ${weak}`, 'idempotency-key': 'scoped' },
      payload: { name: 'a' },
    })
    assertError(response, 403, 'forbidden', 'apikey_scope_fehlt')
  })

  test('keys are scoped to the API key: another key of the account with the same Idempotency-Key executes', async () => {
    const caller = await createTestAccount(harness)
    await send(caller, 'shared-name', { name: 'a' })
    const second = await createKey(harness, caller.accountId, ['contacts:write'])
    const executions = probe.state.executions
    const response = await harness.app.inject({
      method: 'POST',
      url: '/v1/_probe/things',
      headers: { authorization: `Bearer ${second}`, 'idempotency-key': 'shared-name' },
      payload: { name: 'a' },
    })
    assert.equal(response.statusCode, 201)
    assert.equal(response.headers['idempotent-replayed'], undefined)
    assert.equal(probe.state.executions, executions + 1)
  })

  test('a different body, path or query string gives 422 idempotency_key_mismatch', async () => {
    const caller = await createTestAccount(harness)
    await send(caller, 'mismatch', { name: 'a' })
    assertError(await send(caller, 'mismatch', { name: 'b' }), 422, 'idempotency_key_mismatch')
    assertError(
      await send(caller, 'mismatch', { name: 'a' }, '/v1/_probe/things?flag=true'),
      422,
      'idempotency_key_mismatch',
    )
  })

  test('the same key while the first request runs gives 409 idempotency_in_progress with Retry-After: 1', async () => {
    const caller = await createTestAccount(harness)
    const first = send(caller, 'slow', { name: 'a', wait: true })
    while (!probe.state.release) await new Promise((r) => setTimeout(r, 5))
    const second = await send(caller, 'slow', { name: 'a', wait: true })
    assertError(second, 409, 'idempotency_in_progress')
    assert.equal(second.headers['retry-after'], '1')
    probe.state.release()
    probe.state.release = null
    assert.equal((await first).statusCode, 201)
    const third = await send(caller, 'slow', { name: 'a', wait: true })
    assert.equal(third.headers['idempotent-replayed'], 'true')
  })

  test('an invalid key format gives 400 idempotency_key_invalid and executes nothing', async () => {
    const caller = await createTestAccount(harness)
    const executions = probe.state.executions
    for (const key of ['has space', 'x'.repeat(256), 'umlaut-ä', 'tab\tkey']) {
      assertError(await send(caller, key, { name: 'a' }), 400, 'idempotency_key_invalid')
    }
    assert.equal(probe.state.executions, executions)
    assert.equal((await send(caller, 'x'.repeat(255), { name: 'a' })).statusCode, 201)
    assert.equal((await send(caller, '!~', { name: 'a' })).statusCode, 201)
  })

  test('after 24 hours the key is free again', async () => {
    const caller = await createTestAccount(harness)
    await send(caller, 'daily', { name: 'a' })
    harness.clock.advance(23 * 3600_000)
    assert.equal((await send(caller, 'daily', { name: 'a' })).headers['idempotent-replayed'], 'true')
    harness.clock.advance(3600_000 + 1000)
    const fresh = await send(caller, 'daily', { name: 'b' })
    assert.equal(fresh.statusCode, 201)
    assert.equal(fresh.headers['idempotent-replayed'], undefined)
  })

  test('the Idempotency-Key header is ignored on routes that do not accept it', async () => {
    const caller = await createTestAccount(harness)
    const response = await caller.request({ method: 'GET', url: '/v1/me', headers: { 'idempotency-key': 'has space' } })
    assert.equal(response.statusCode, 200)
  })
})

describe('every API route', () => {
  test('needs a key, refuses a blocked account and a key without the route scope, always in the envelope', async () => {
    const doc = json<{ paths: Record<string, Record<string, { 'x-scope'?: string | null; security?: unknown[] }>> }>(
      await harness.app.inject({ method: 'GET', url: '/v1/openapi.json' }),
    )
    const blocked = await createTestAccount(harness)
    await harness.database.orm.update(accounts).set({ status: 'blocked' }).where(eq(accounts.id, blocked.accountId))
    const scopeless = await createTestAccount(harness, { scopes: [] })
    let checked = 0
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        if (!operation.security || operation.security.length === 0) continue
        const url = path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000')
        const request = { method: method.toUpperCase() as 'GET', url, payload: method === 'get' ? undefined : {} }
        assertError(await harness.app.inject(request), 401, 'unauthorized')
        assertError(await blocked.request(request), 403, 'account_blocked')
        if (operation['x-scope']) assertError(await scopeless.request(request), 403, 'forbidden', 'apikey_scope_fehlt')
        checked++
      }
    }
    assert.ok(checked >= 2, `checked ${checked} operations`)
  })

  test('every /app route but the public ones needs a session and its CSRF token on a change, refuses a blocked account and a role without the route scope or permission', async () => {
    const doc = json<{ paths: Record<string, Record<string, { security?: unknown[] }>> }>(
      await harness.app.inject({ method: 'GET', url: '/app/openapi.json' }),
    )
    const active = await createTestAccount(harness)
    const allowsNothing = await signedIn(active.accountId, 'viewer')
    const blockedAccount = await createTestAccount(harness)
    const blocked = await signedIn(blockedAccount.accountId, 'owner')
    await harness.database.orm
      .update(accounts)
      .set({ status: 'blocked' })
      .where(eq(accounts.id, blockedAccount.accountId))
    const viewer = { scopes: ROLE_SCOPES.viewer, permissions: ROLE_PERMISSIONS.viewer }
    // a role that allows nothing: the viewer's, emptied while the walk runs (sessions read it on every request)
    Object.assign(ROLE_SCOPES, { viewer: [] })
    Object.assign(ROLE_PERMISSIONS, { viewer: [] })
    let checked = 0
    try {
      for (const [path, operations] of Object.entries(doc.paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          if (!operation.security || operation.security.length === 0) continue
          const where = `${method.toUpperCase()} ${path}`
          const url = path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000')
          const request = { method: method.toUpperCase() as 'GET', url, payload: method === 'get' ? undefined : {} }
          const as = (headers: Record<string, string>) => harness.app.inject({ ...request, headers })
          assertError(await harness.app.inject(request), 401, 'unauthorized')
          assertError(await as(blocked), 403, 'account_blocked')
          if (method !== 'get')
            assertError(await as({ cookie: allowsNothing.cookie }), 403, 'csrf_invalid', 'csrf_token_ungueltig')
          if (!SESSION_ONLY.has(where)) {
            const refused = await as(allowsNothing)
            assert.equal(refused.statusCode, 403, `${where}: ${refused.body}`)
            const { error } = refused.json() as ErrorBody
            assert.equal(error.code, 'forbidden', where)
            assert.ok(['apikey_scope_fehlt', 'rolle_fehlt'].includes(error.key), `${where}: ${error.key}`)
          }
          checked++
        }
      }
    } finally {
      Object.assign(ROLE_SCOPES, { viewer: viewer.scopes })
      Object.assign(ROLE_PERMISSIONS, { viewer: viewer.permissions })
    }
    assert.ok(checked >= 40, `checked ${checked} operations`)
  })
})

/** The /app routes any signed-in member may call: their own session and the tool server's own-checked routes. */
const SESSION_ONLY = new Set([
  'GET /app/session',
  'PUT /app/session/language',
  'POST /app/sign-out',
  'POST /app/password',
  'GET /app/oauth/authorization',
  'POST /app/oauth/authorization',
  'POST /app/{tool_name}',
])

let members = 0
/** Signs a new member of the account in; answers the headers a browser sends on a change. */
async function signedIn(accountId: string, role: 'owner' | 'viewer') {
  const email = `walk-${process.pid}-${++members}@example.org`
  const password = 'correct horse battery'
  await createMember(harness.database.orm, { accountId, email, name: role, password, role })
  const signIn = await harness.app.inject({
    method: 'POST',
    url: '/app/sign-in',
    payload: { email, password },
    remoteAddress: `10.8.${members}.1`,
  })
  assert.equal(signIn.statusCode, 200, signIn.body)
  const cookie = String(signIn.headers['set-cookie']).split(';')[0]
  return { cookie, 'x-csrf-token': json<{ csrf_token: string }>(signIn).csrf_token }
}
