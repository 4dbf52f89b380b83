import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { createHarness, createKey, createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { isScope } from '../platform/auth/scopes.ts'
import { catalogue } from './catalogue.ts'
import { catalogueMarkdown, DOC_END, DOC_START } from './catalogue-doc.ts'

let harness: Harness
let base: string
const clients: Client[] = []

before(async () => {
  harness = await createHarness()
  await harness.app.listen({ port: 0, host: '127.0.0.1' })
  base = `http://127.0.0.1:${(harness.app.server.address() as AddressInfo).port}`
})
after(async () => {
  for (const client of clients) await client.close().catch(() => {})
  await harness.close()
})

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'catalogue-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  )
  clients.push(client)
  return client
}

const root = new URL('../../', import.meta.url)

test('every tool has a unique snake_case name, a description, a known scope, an input schema and annotations', () => {
  const names = catalogue.map((t) => t.name)
  assert.equal(new Set(names).size, names.length, 'names are unique')
  for (const tool of catalogue) {
    assert.match(tool.name, /^[a-z][a-z0-9]*(_[a-z0-9]+)+$/, `${tool.name} is snake_case`)
    assert.ok(tool.description.length >= 40, `${tool.name} has a description an assistant can act on`)
    assert.ok(tool.scope === null || isScope(tool.scope), `${tool.name} has a known scope`)
    assert.equal(tool.input.type, 'object')
    assert.equal((tool.input as { additionalProperties?: unknown }).additionalProperties, false)
    assert.ok(tool.rest.length > 0)
    const { readOnlyHint, destructiveHint } = tool.annotations
    assert.ok(!(readOnlyHint && destructiveHint), `${tool.name}: read-only tools are not destructive`)
    if (tool.preview) assert.ok(tool.input.properties.confirm_token, `${tool.name} takes confirm_token`)
    if (/^(delete|submit|schedule|send|trigger)_/.test(tool.name)) {
      assert.ok(tool.preview, `${tool.name} sends, schedules, submits or deletes: it is two-step`)
    }
    for (const [name, property] of Object.entries(tool.input.properties) as Array<[string, Record<string, unknown>]>) {
      if (property.type === 'string' && property.format === undefined && property.anyOf === undefined) {
        assert.ok(
          property.maxLength !== undefined || property.enum !== undefined || property.const !== undefined,
          `${tool.name}.${name} has a length limit`,
        )
      }
    }
  }
})

test('tools/list shows exactly the catalogue; every tool is reachable and enforces its scope', async () => {
  const account = await createTestAccount(harness)
  const client = await connect(account.key)
  const { tools } = await client.listTools()
  assert.deepEqual(
    tools.map((t) => t.name),
    catalogue.map((t) => t.name),
  )
  for (const tool of tools) {
    assert.ok(tool.description && tool.description.length >= 40, tool.name)
    assert.equal(tool.inputSchema.type, 'object')
    assert.equal(typeof tool.annotations?.readOnlyHint, 'boolean', tool.name)
    assert.equal(typeof tool.annotations?.destructiveHint, 'boolean', tool.name)
    assert.equal(typeof tool.annotations?.idempotentHint, 'boolean', tool.name)
  }

  // reachable: each tool answers its own argument check (an unknown argument is refused before anything runs)
  for (const tool of catalogue) {
    const result = await client.callTool({ name: tool.name, arguments: { not_an_argument: 1 } })
    const error = (result.structuredContent as { error?: { code: string; message: string } }).error
    assert.equal(result.isError, true, tool.name)
    assert.equal(error?.code, 'bad_request', `${tool.name}: ${JSON.stringify(result.structuredContent)}`)
    assert.match(error?.message ?? '', /not_an_argument/)
  }

  // read-only tools without required arguments run on an empty account
  for (const tool of catalogue.filter((t) => t.annotations.readOnlyHint && !(t.input.required ?? []).length)) {
    const result = await client.callTool({ name: tool.name, arguments: {} })
    assert.notEqual(result.isError, true, `${tool.name}: ${JSON.stringify(result.structuredContent)}`)
    assert.equal(typeof result.structuredContent, 'object')
  }

  // a key with one scope reaches get_account and the tools of that scope, and nothing else
  const narrow = await connect(await createKey(harness, account.accountId, ['team:read']))
  for (const tool of catalogue) {
    const result = await narrow.callTool({ name: tool.name, arguments: {} })
    const error = (result.structuredContent as { error?: { code: string; key: string } }).error
    if (tool.scope === null || tool.scope === 'team:read') assert.notEqual(result.isError, true, tool.name)
    else assert.equal(error?.key, 'apikey_scope_fehlt', tool.name)
  }
})

test('docs/tool-server.md documents every tool (npm run tools-doc) and the README names how many there are', () => {
  const page = readFileSync(new URL('docs/tool-server.md', root), 'utf8')
  // Biome pads the table's cells; the content must be what the catalogue generates
  const normal = (text: string) =>
    text
      .trim()
      .split('\n')
      .map((line) => line.replace(/\s+/g, ' ').replace(/-{3,}/g, '---'))
      .join('\n')
  const table = page.slice(page.indexOf(DOC_START) + DOC_START.length, page.indexOf(DOC_END))
  assert.equal(normal(table), normal(catalogueMarkdown()), 'the tool table is the catalogue: run npm run tools-doc')
  for (const tool of catalogue) assert.match(page, new RegExp(`\\| \`${tool.name}\` +\\|`), tool.name)
  const readme = readFileSync(new URL('README.md', root), 'utf8')
  assert.ok(readme.includes('docs/tool-server.md'))
  assert.ok(readme.includes(`${catalogue.length} tools`), `README names ${catalogue.length} tools`)
})
