import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { listenOnLoopback } from '../../test/helpers/fixtures.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../../test/helpers/harness.ts'

// Deeply nested arguments parse fine but overflowed structuredClone (a 500): they are a 400 now, in the REST envelope
// on /v1/tools/*, and on /mcp a tool result with isError and status 400 (issue 51, finding 9).

let harness: Harness
let account: TestAccount
let base: string

before(async () => {
  harness = await createHarness()
  account = await createTestAccount(harness)
  base = await listenOnLoopback(harness)
})
after(() => harness.close())

/** `{"query": [[[…1…]]]}` with `depth` levels in all, written as text (JSON.stringify would recurse). */
const nested = (depth: number) => `{"query":${'['.repeat(depth - 1)}1${']'.repeat(depth - 1)}}`

const restCall = (body: string) =>
  account.request({
    method: 'POST',
    url: '/v1/tools/search_contacts',
    payload: body,
    headers: { 'content-type': 'application/json' },
  })

async function mcpCall(argumentsJson: string) {
  const response = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${account.key}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_contacts","arguments":${argumentsJson}}}`,
  })
  return { status: response.status, body: await response.text() }
}

describe('nested tool arguments', () => {
  test('ten thousand levels to /v1/tools/* are a 400 in the envelope, not a 500', async () => {
    const response = await restCall(nested(10_000))
    assert.equal(response.statusCode, 400, response.body)
    assert.equal(response.json().error.code, 'bad_request')
    assert.equal(response.json().error.key, 'too_deep')
    assert.match(response.json().error.message, /deeper than 64 levels/)
  })

  test('arguments deeper than 32 levels are refused by the tool server, naming the limit', async () => {
    const response = await restCall(nested(40))
    assert.equal(response.statusCode, 400, response.body)
    assert.equal(response.json().error.key, 'too_deep')
    assert.match(response.json().error.message, /arguments nest deeper than 32 levels/)
  })

  test('on /mcp, too deep arguments are a tool error with status 400 (the MCP semantics of a failed call)', async () => {
    const response = await mcpCall(nested(40))
    assert.equal(response.status, 200, response.body)
    const result = JSON.parse(response.body).result
    assert.equal(result.isError, true)
    assert.equal(result.structuredContent.status, 400)
    assert.equal(result.structuredContent.error.key, 'too_deep')
  })

  test('on /mcp, a body nested ten thousand levels is a 400, never a 500 or an internal_error result', async () => {
    const response = await mcpCall(nested(10_000))
    assert.equal(response.status, 400, response.body)
    assert.equal(JSON.parse(response.body).error.key, 'too_deep')
  })

  test('an ordinary nested call still works', async () => {
    const response = await restCall('{"query":"Erika"}')
    assert.equal(response.statusCode, 200, response.body)
  })
})
