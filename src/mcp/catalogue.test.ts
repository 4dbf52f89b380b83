import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import { createKey, createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { McpClients } from '../../test/helpers/mcp-client.ts'
import { harnessPerFile } from '../../test/helpers/test-file.ts'
import { isScope } from '../platform/auth/scopes.ts'
import { catalogue } from './catalogue.ts'
import { catalogueMarkdown, DOC_END, DOC_START } from './catalogue-doc.ts'
import { mcpToolOf } from './server.ts'

let harness: Harness
const mcpClients = new McpClients()

harnessPerFile({ mcp: mcpClients }, (created) => {
  harness = created
})

const connect = (token: string) => mcpClients.connect(token)

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
    if (/^(delete|remove|submit|schedule|send|trigger)_/.test(tool.name)) {
      assert.ok(tool.preview, `${tool.name} sends, schedules, submits, deletes or removes: it is two-step`)
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

test('every tool declares an outputSchema an SDK client compiles: its answer, the preview of two-step tools, the error', () => {
  const ajv = new AjvJsonSchemaValidator()
  const preview = {
    confirmation_required: true,
    executed: false,
    preview: { action: 'x' },
    confirm_token: 'hct_x',
    expires_at: new Date().toISOString(),
    next: 'call again',
  }
  const error = { error: { code: 'not_found', key: 'not_found', message: 'No such thing' }, status: 404 }
  for (const tool of catalogue) {
    const listed = mcpToolOf(tool)
    assert.equal(listed.outputSchema?.type, 'object', tool.name)
    const validate = ajv.getValidator(listed.outputSchema as Record<string, unknown>)
    assert.equal(validate(error).valid, true, `${tool.name}: a tool error validates`)
    assert.equal(validate(preview).valid, tool.preview !== undefined, `${tool.name}: a preview validates iff two-step`)
    const answer = (listed.outputSchema as unknown as { anyOf: Array<{ required?: string[] }> }).anyOf[0]
    assert.ok((answer.required ?? []).length > 0, `${tool.name}: its answer names the fields it always has`)
    assert.equal(validate({}).valid, false, `${tool.name}: an empty answer does not validate`)
  }
})

test('tools/list shows exactly the catalogue; every tool is reachable and enforces its scope', async () => {
  // each tool is called three times: a plan above the default 120 requests per minute, as an operator gives one
  const account = await createTestAccount(harness, { plan: { requestsPerMinute: 10_000 } })
  const client = await connect(account.key)
  const { tools } = await client.listTools()
  assert.deepEqual(
    tools.map((t) => t.name),
    catalogue.map((t) => t.name),
  )
  for (const tool of tools) {
    assert.ok(tool.description && tool.description.length >= 40, tool.name)
    assert.equal(tool.inputSchema.type, 'object')
    assert.equal(tool.outputSchema?.type, 'object', `${tool.name} declares an outputSchema`)
    assert.ok(!JSON.stringify(tool.outputSchema).includes('"$ref"'), `${tool.name}: its outputSchema is self-contained`)
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
  for (const tool of catalogue.filter(
    (t) => t.annotations.readOnlyHint && !(t.input.required ?? []).length && !t.permission,
  )) {
    const result = await client.callTool({ name: tool.name, arguments: {} })
    assert.notEqual(result.isError, true, `${tool.name}: ${JSON.stringify(result.structuredContent)}`)
    assert.equal(typeof result.structuredContent, 'object')
  }

  // a key with one scope reaches get_account and the tools of that scope, and nothing else
  const narrow = await connect(await createKey(harness, account.accountId, ['team:read']))
  for (const tool of catalogue) {
    const result = await narrow.callTool({ name: tool.name, arguments: {} })
    const error = (result.structuredContent as { error?: { code: string; key: string } }).error
    if (tool.scope !== null && tool.scope !== 'team:read') assert.equal(error?.key, 'apikey_scope_fehlt', tool.name)
    else if ((tool.input.required ?? []).length) assert.equal(error?.code, 'bad_request', tool.name)
    // team and credential management needs a member's permission: an API key is refused whatever its scopes
    else if (tool.permission) assert.equal(error?.key, 'rolle_fehlt', tool.name)
    else assert.notEqual(result.isError, true, tool.name)
  }
})

/**
 * Operations of the two OpenAPI documents that are no tool, each with the reason. Everything else a person can do
 * through REST or the web app has a tool whose `rest` names the operation.
 */
const NOT_TOOLS: Record<string, string> = {
  'GET /v1/openapi.json': 'the API’s own description, not an action (tools/list describes the tools)',
  'GET /v1/openapi.yaml': 'the same description as YAML',
  'GET /v1/contact-fields/{key}': 'list_contact_fields shows every field (at most 50) with all it has',
  'POST /v1/tools/{tool_name}': 'the tools themselves over plain HTTP',
  'POST /app/{tool_name}': 'the tools themselves with the session',
  'POST /app/sign-in': 'a person signs in in the browser; a tool caller is authenticated already',
  'POST /app/sign-out': 'ends the browser’s session',
  'GET /app/session': 'the browser’s session and CSRF token',
  'GET /app/events': 'the console’s live stream of inbox changes (Server-Sent Events); tools answer one call each',
  'GET /app/conversations/{id}/messages':
    'the console’s thread with the internal notes in their place; a tool caller reads the messages with get_conversation_messages and the notes that concern it with list_mentions',
  'POST /app/mentions/read':
    'the console’s read flags of the signed-in member’s mentions (the unread badge); list_mentions shows read, an assistant has no badge to clear',
  'GET /app/inbox/opening-state':
    'the console’s closed banner; get_inbox_routing gives open_now with the opening hours',
  'GET /app/conversations/{id}/routing':
    'the console’s history of one conversation’s automatic assignments and away messages; get_conversation shows its assignee',
  'POST /app/contacts':
    'the web app’s contact form (national numbers read in the account’s country); assistants use create_contact as the spec defines it',
  'PUT /app/session/language': 'the web app’s interface language of the signed-in person',
  'POST /app/password': 'a person’s own password: never through an assistant',
  'POST /app/password-reset': 'a person’s own password reset, by e-mail link',
  'POST /app/password-reset/complete': 'the reset link’s page',
  'POST /app/setup': 'the first-start link creates the first owner before any credential exists',
  'GET /app/setup/{token}': 'the first-start link’s page',
  'GET /app/invitations/{token}': 'the invited person’s own link (invite_team_member sends it)',
  'POST /app/invitations/accept': 'only the invited person accepts, with their password',
  'GET /app/oauth/authorization':
    'the consent page: a person approves an assistant; an assistant cannot consent for itself',
  'POST /app/oauth/authorization': 'the consent page’s approval (see above)',
  'GET /app/first-steps':
    'the dashboard’s checklist for a new account; a tool caller sees each state in get_channel_settings, list_templates, list_contacts and list_team_members',
  'GET /app/contacts/labels':
    'the console’s names for the contact ids a page shows; a tool’s answers name the contact, get_contact has the rest',
  'POST /app/contacts/import/preview':
    'the import page’s look at a file before importing; import_contacts reports the ignored columns and takes map',
  'GET /app/contact-fields': 'the settings page’s copy of GET /v1/contact-fields (list_contact_fields)',
  'POST /app/contact-fields': 'the settings page’s copy of POST /v1/contact-fields (create_contact_field)',
  'GET /app/contact-fields/{key}': 'the settings page’s copy of GET /v1/contact-fields/{key}',
  'PATCH /app/contact-fields/{key}':
    'the settings page’s copy of PATCH /v1/contact-fields/{key} (update_contact_field)',
  'DELETE /app/contact-fields/{key}':
    'the settings page’s copy of DELETE /v1/contact-fields/{key} (delete_contact_field)',
  'GET /app/contacts/condition-fields':
    'the web app’s condition builders’ list of the custom fields with their ops; a tool caller reads the field definitions and is told by a refused condition which op fits',
}

function operationsOf(document: string, prefix: string): string[] {
  const spec = JSON.parse(readFileSync(new URL(document, root), 'utf8')) as { paths: Record<string, object> }
  return Object.entries(spec.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map((method) => `${method.toUpperCase()} ${path.startsWith(prefix) ? path : prefix + path}`),
  )
}

/** The operation a tool's `rest` names: `POST /contacts?upsert=true` is POST /v1/contacts, `/app/...` the web app's. */
function operationOf(rest: string): string | null {
  const match = /^(GET|POST|PUT|PATCH|DELETE) (\/[^\s?]*)/.exec(rest)
  if (!match) return null
  const [, method, path] = match
  if (path.startsWith('/oauth/')) return null
  return `${method} ${path.startsWith('/app/') ? path : `/v1${path}`}`
}

test('every REST operation (openapi/v1.json) and web-app function (openapi/app.json) has a tool, or a reason why not', () => {
  const operations = [...operationsOf('openapi/v1.json', '/v1'), ...operationsOf('openapi/app.json', '/app')]
  assert.ok(operations.length > 90, 'both documents are read')
  const covered = new Map<string, string[]>()
  for (const tool of catalogue) {
    const operation = operationOf(tool.rest)
    if (!operation) continue
    assert.ok(operations.includes(operation), `${tool.name} names ${operation}, which neither document has`)
    covered.set(operation, [...(covered.get(operation) ?? []), tool.name])
  }
  const missing = operations.filter((op) => !covered.has(op) && !(op in NOT_TOOLS))
  assert.deepEqual(missing, [], 'operations without a tool: add one, or a reason to NOT_TOOLS')
  for (const op of Object.keys(NOT_TOOLS)) {
    assert.ok(operations.includes(op), `${op} (excluded) is an operation`)
    assert.ok(!covered.has(op), `${op} is excluded but has a tool`)
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
