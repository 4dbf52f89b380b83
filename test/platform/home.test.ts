import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { createHarness, type Harness } from '../helpers/harness.ts'

let harness: Harness
before(async () => {
  harness = await createHarness()
})
after(() => harness.close())

test('GET / answers a small HTML page naming the service, with links to /docs, the OpenAPI document and /healthz', async () => {
  const response = await harness.app.inject({ method: 'GET', url: '/' })
  assert.equal(response.statusCode, 200)
  assert.match(String(response.headers['content-type']), /^text\/html/)
  assert.match(response.body, /<h1>Herold<\/h1>/)
  for (const href of ['/docs', '/v1/openapi.json', '/healthz'])
    assert.ok(response.body.includes(`href="${href}"`), href)
  for (const href of ['/docs', '/v1/openapi.json', '/healthz']) {
    assert.equal((await harness.app.inject({ method: 'GET', url: href })).statusCode, 200, `${href} answers`)
  }
})
