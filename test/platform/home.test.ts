import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import path from 'node:path'
import { after, before, test } from 'node:test'
import Fastify from 'fastify'
import { homePage } from '../../src/platform/http/home.ts'
import { APP_CSP, WEB_DIST, webAppBuilt } from '../../src/platform/http/web-app.ts'
import { createHarness, type Harness } from '../helpers/harness.ts'

let harness: Harness
before(async () => {
  harness = await createHarness()
})
after(() => harness.close())

// `npm install` / `npm ci` build the web app (the prepare script); a clean clone set up as the README says has it.
test('the web app is built by npm install into web/dist', () => {
  assert.ok(webAppBuilt(), `no ${path.join(WEB_DIST, 'index.html')}: run npm install (or npm run web:build)`)
})

test('GET / and every page answer the web app with a strict Content Security Policy and no caching', async () => {
  for (const url of ['/', '/sign-in', '/setup/abc', '/invitations/abc', '/reset/abc', '/keys', '/team', '/contacts']) {
    const response = await harness.app.inject({ method: 'GET', url })
    assert.equal(response.statusCode, 200, url)
    assert.match(String(response.headers['content-type']), /^text\/html/)
    assert.match(response.body, /<div id="root"><\/div>/)
    assert.equal(response.headers['content-security-policy'], APP_CSP)
    assert.match(APP_CSP, /script-src 'self'(;|$)/, 'no inline scripts')
    assert.doesNotMatch(APP_CSP, /unsafe/)
    assert.equal(response.headers['cache-control'], 'no-cache')
    assert.doesNotMatch(response.body, /<script>|<style>/, 'nothing inline that the policy would block')
  }
})

test('the hashed assets are cached for a year; an unknown asset and an unknown API route stay 404', async () => {
  const assets = readdirSync(path.join(WEB_DIST, 'assets'))
  const script = assets.find((name) => /^index-[A-Za-z0-9_-]+\.js$/.test(name))
  assert.ok(script, assets.join(', '))
  const index = await harness.app.inject({ method: 'GET', url: '/' })
  assert.ok(index.body.includes(`/assets/${script}`))
  const asset = await harness.app.inject({ method: 'GET', url: `/assets/${script}` })
  assert.equal(asset.statusCode, 200)
  assert.match(String(asset.headers['content-type']), /javascript/)
  assert.equal(asset.headers['cache-control'], 'public, max-age=31536000, immutable')
  assert.equal((await harness.app.inject({ method: 'GET', url: '/assets/nope.js' })).statusCode, 404)
  const api = await harness.app.inject({ method: 'GET', url: '/v1/nothing-here' })
  assert.equal(api.statusCode, 404)
  assert.equal(api.json().error.code, 'not_found')
  for (const href of ['/docs', '/v1/openapi.json', '/healthz']) {
    assert.equal((await harness.app.inject({ method: 'GET', url: href })).statusCode, 200, `${href} answers`)
  }
})

test('without a build (dev dependencies omitted), GET / is a small page naming the service with its links', async () => {
  const app = Fastify()
  await app.register(homePage('herold'))
  const response = await app.inject({ method: 'GET', url: '/' })
  assert.equal(response.statusCode, 200)
  assert.match(response.body, /<h1>Herold<\/h1>/)
  for (const href of ['/docs', '/v1/openapi.json', '/healthz'])
    assert.ok(response.body.includes(`href="${href}"`), href)
  await app.close()
})
