import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { SIGN_IN_PER_ADDRESS } from '../../src/modules/people/people.app.ts'
import { HSTS } from '../../src/platform/http/security-headers.ts'
import { WEB_DIST, webAppBuilt } from '../../src/platform/http/web-app.ts'
import { memoryRateLimiter } from '../../src/platform/rate-limit/rate-limiter.ts'
import { signedInMember } from '../helpers/fixtures.ts'
import { createHarness, createTestAccount } from '../helpers/harness.ts'

test('Strict-Transport-Security on every answer when the public URL is https, none when it is http', async () => {
  const https = await createHarness({ config: { publicUrl: 'https://herold.example' } })
  const http = await createHarness({ config: { publicUrl: 'http://herold.example' } })
  try {
    for (const url of ['/healthz', '/v1/me', '/no/such/route', '/app/session']) {
      assert.equal((await https.app.inject({ url })).headers['strict-transport-security'], HSTS, url)
      assert.equal((await http.app.inject({ url })).headers['strict-transport-security'], undefined, url)
    }
  } finally {
    await https.close()
    await http.close()
  }
})

test('Cache-Control: no-store on /app/session and the JSON API; the web app keeps its caching', async () => {
  const harness = await createHarness()
  try {
    const account = await createTestAccount(harness)
    const email = `cache-${randomBytes(4).toString('hex')}@example.org`
    const member = await signedInMember(harness, {
      accountId: account.accountId,
      role: 'owner',
      email,
      password: 'a long password 1',
    })
    const session = await harness.app.inject({ url: '/app/session', headers: { cookie: member.cookie } })
    assert.equal(session.statusCode, 200)
    assert.ok((session.json() as { csrf_token?: string }).csrf_token, 'the session carries the CSRF token')
    assert.equal(session.headers['cache-control'], 'no-store')

    const me = await account.request({ method: 'GET', url: '/v1/me' })
    assert.equal(me.statusCode, 200)
    assert.equal(me.headers['cache-control'], 'no-store')
    const contacts = await account.request({ method: 'GET', url: '/v1/contacts' })
    assert.equal(contacts.headers['cache-control'], 'no-store')
    // a refusal too
    assert.equal((await harness.app.inject({ url: '/v1/me' })).headers['cache-control'], 'no-store')
    const oauth = await harness.app.inject({ method: 'POST', url: '/oauth/token', payload: {} })
    assert.equal(oauth.headers['cache-control'], 'no-store')

    if (webAppBuilt()) {
      const asset = readdirSync(path.join(WEB_DIST, 'assets')).find((name) => name.endsWith('.js'))
      const served = await harness.app.inject({ url: `/assets/${asset}` })
      assert.equal(served.statusCode, 200)
      assert.equal(served.headers['cache-control'], 'public, max-age=31536000, immutable')
      assert.equal((await harness.app.inject({ url: '/inbox' })).headers['cache-control'], 'no-cache')
    }
  } finally {
    await harness.close()
  }
})

/** POST /app/sign-in with a wrong password for a fresh address, from loopback, forwarded for `forwardedFor`. */
async function signInAttempt(harness: Awaited<ReturnType<typeof createHarness>>, forwardedFor: string) {
  const response = await harness.app.inject({
    method: 'POST',
    url: '/app/sign-in',
    remoteAddress: '127.0.0.1',
    headers: { 'x-forwarded-for': forwardedFor },
    payload: { email: `nobody-${randomBytes(6).toString('hex')}@example.org`, password: 'wrong password' },
  })
  return response.statusCode
}

test('HEROLD_TRUST_PROXY=127.0.0.1: sign-ins are limited per forwarded address, /metrics refuses a forwarded client', async () => {
  const harness = await createHarness({ rateLimiter: memoryRateLimiter(), config: { trustProxy: ['127.0.0.1'] } })
  try {
    for (let i = 0; i < SIGN_IN_PER_ADDRESS; i++) assert.equal(await signInAttempt(harness, '203.0.113.7'), 401)
    assert.equal(await signInAttempt(harness, '203.0.113.7'), 429, 'the forwarded address is limited')
    assert.equal(await signInAttempt(harness, '203.0.113.8'), 401, 'another client behind the proxy is not')

    const direct = await harness.app.inject({ url: '/metrics', remoteAddress: '127.0.0.1' })
    assert.equal(direct.statusCode, 200)
    const forwarded = await harness.app.inject({
      url: '/metrics',
      remoteAddress: '127.0.0.1',
      headers: { 'x-forwarded-for': '203.0.113.9' },
    })
    assert.equal(forwarded.statusCode, 404, 'a client the proxy forwards is not on loopback')
    // a forwarded header from a client the setting does not name is not believed
    const spoofed = await harness.app.inject({
      url: '/metrics',
      remoteAddress: '198.51.100.4',
      headers: { 'x-forwarded-for': '127.0.0.1' },
    })
    assert.equal(spoofed.statusCode, 404)
  } finally {
    await harness.close()
  }
})

test('without HEROLD_TRUST_PROXY, X-Forwarded-For is ignored: the connection is the client', async () => {
  const harness = await createHarness({ rateLimiter: memoryRateLimiter() })
  try {
    assert.equal(harness.config.trustProxy, false)
    for (let i = 0; i < SIGN_IN_PER_ADDRESS; i++) assert.equal(await signInAttempt(harness, `203.0.113.${10 + i}`), 401)
    assert.equal(await signInAttempt(harness, '203.0.113.99'), 429, 'every attempt counted against the connection')
    const metrics = await harness.app.inject({
      url: '/metrics',
      remoteAddress: '127.0.0.1',
      headers: { 'x-forwarded-for': '203.0.113.9' },
    })
    assert.equal(metrics.statusCode, 200)
  } finally {
    await harness.close()
  }
})
