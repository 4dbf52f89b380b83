import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { catalogue } from '../../src/mcp/catalogue.ts'
import { signedInMember } from '../helpers/fixtures.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../helpers/harness.ts'

// Strict input (ARCHITECTURE "Strict input"): every operation of the OpenAPI documents refuses a field or query
// parameter it does not name with 400 bad_request naming it by path, and changes nothing.

// biome-ignore lint/suspicious/noExplicitAny: OpenAPI documents and response bodies are read loosely here
type Json = Record<string, any>

let harness: Harness
let v1: Json
let appDocument: Json
before(async () => {
  harness = await createHarness()
  v1 = harness.app.swagger() as Json
  appDocument = (await harness.app.inject({ method: 'GET', url: '/app/openapi.json' })).json()
})
after(() => harness.close())

const EXTRA = 'zz_unknown'

function resolve(document: Json, schema: Json): Json {
  const ref = schema?.$ref as string | undefined
  if (!ref) return schema
  return resolve(document, document.components.schemas[ref.replace('#/components/schemas/', '')])
}

const STRING_CANDIDATES = ['x', 'a.txt', '12:00', '+4915112345678', 'https://example.com/a', 'Europe/Berlin', 'de']

function sampleString(schema: Json): string {
  if (schema.format === 'uuid') return randomUUID()
  if (schema.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString()
  if (schema.format === 'email') return 'strict@example.com'
  if (schema.format === 'uri') return 'https://example.com/a'
  const fits = (text: string) =>
    (!schema.pattern || new RegExp(schema.pattern, 'u').test(text)) &&
    text.length >= (schema.minLength ?? 0) &&
    text.length <= (schema.maxLength ?? Number.POSITIVE_INFINITY)
  const found = STRING_CANDIDATES.find(fits)
  return found ?? 'x'.repeat(Math.max(1, schema.minLength ?? 1))
}

/** A value of the schema's shape: its required fields (and the first field where at least one is needed). */
function sample(document: Json, raw: Json): unknown {
  const schema = resolve(document, raw)
  if ('const' in schema) return schema.const
  if (schema.enum) return schema.enum[0]
  const variants = schema.oneOf ?? schema.anyOf
  if (variants) return sample(document, variants[0])
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((part: Json) => sample(document, part)))
  if (schema.type === 'object' || schema.properties) {
    const properties = (schema.properties ?? {}) as Json
    const names = new Set<string>(schema.required ?? [])
    if ((schema.minProperties ?? 0) > names.size) names.add(Object.keys(properties)[0])
    return Object.fromEntries([...names].map((name) => [name, sample(document, properties[name])]))
  }
  if (schema.type === 'array')
    return Array.from({ length: schema.minItems ?? 0 }, () => sample(document, schema.items ?? {}))
  if (schema.type === 'string') return sampleString(schema)
  if (schema.type === 'integer' || schema.type === 'number') return schema.minimum ?? 1
  if (schema.type === 'boolean') return false
  if (schema.type === 'null') return null
  return 'x'
}

/** The schema of an object the caller can send, when it is closed (so an extra field must be refused). */
function closedObject(document: Json, raw: Json): Json | null {
  const schema = resolve(document, raw ?? {})
  const variants = schema.oneOf ?? schema.anyOf
  if (variants) return closedObject(document, variants.find((v: Json) => closedObject(document, v)) ?? {})
  return schema.additionalProperties === false && schema.properties ? schema : null
}

/** A body with one unknown field one level down (in an object field, or the first item of an array of objects). */
function nestedCase(document: Json, bodySchema: Json): { body: Json; path: string } | null {
  const outer = closedObject(document, bodySchema)
  if (!outer) return null
  const body = sample(document, bodySchema) as Json
  for (const [name, raw] of Object.entries(outer.properties as Json)) {
    const field = resolve(document, raw)
    const inner = closedObject(document, field)
    if (inner) {
      const value = { ...(sample(document, field) as Json), [EXTRA]: 1 }
      return { body: { ...body, [name]: value }, path: `${name}.${EXTRA}` }
    }
    const item = field.type === 'array' ? closedObject(document, field.items ?? {}) : null
    if (item) {
      const first = { ...(sample(document, field.items) as Json), [EXTRA]: 1 }
      const rest = Array.from({ length: Math.max(0, (field.minItems ?? 1) - 1) }, () => sample(document, field.items))
      return { body: { ...body, [name]: [first, ...rest] }, path: `${name}[0].${EXTRA}` }
    }
  }
  return null
}

interface Operation {
  method: string
  path: string
  url: string
  body: Json | null
  query: Json[]
}

function operationsOf(document: Json): Operation[] {
  const operations: Operation[] = []
  for (const [path, methods] of Object.entries(document.paths as Json)) {
    for (const [method, operation] of Object.entries(methods as Json)) {
      const parameters = (operation.parameters ?? []) as Json[]
      const url = path.replace(/\{(\w+)\}/g, (_all, name: string) => {
        const schema = parameters.find((p) => p.in === 'path' && p.name === name)?.schema ?? {}
        return encodeURIComponent(String(sample(document, schema)))
      })
      const body = operation.requestBody?.content?.['application/json']?.schema ?? null
      operations.push({
        method: method.toUpperCase(),
        path,
        url,
        body,
        query: parameters.filter((p) => p.in === 'query'),
      })
    }
  }
  return operations
}

/** A digest of every row the account owns, to show a refused request changed nothing. */
async function snapshot(accountId: string): Promise<Record<string, string>> {
  const tables = await harness.database.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.columns
     WHERE column_name = 'account_id' AND table_schema = current_schema() ORDER BY table_name`,
  )
  const digest: Record<string, string> = {}
  for (const { table_name } of tables) {
    if (table_name === 'api_keys') continue // last_used_at moves with every authenticated request
    const [row] = await harness.database.query<{ digest: string }>(
      `SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') AS digest
       FROM "${table_name}" t WHERE account_id = $1`,
      [accountId],
    )
    digest[table_name] = row.digest
  }
  return digest
}

type Send = (method: string, url: string, body?: unknown) => Promise<{ status: number; body: Json }>

function assertRefused(response: { status: number; body: Json }, where: string, field: string, what: string) {
  assert.equal(response.status, 400, `${what}: ${JSON.stringify(response.body).slice(0, 300)}`)
  assert.equal(response.body.error?.code, 'bad_request', what)
  assert.equal(response.body.error?.key, 'bad_request', what)
  const named = where ? `${where}.${field}` : field
  assert.ok(String(response.body.error?.message).includes(named), `${what}: ${response.body.error?.message}`)
  assert.deepEqual(response.body.error?.unknown_fields, [field], what)
}

async function walk(document: Json, send: Send, accountId: string) {
  const before = await snapshot(accountId)
  let checked = 0
  for (const op of operationsOf(document)) {
    const what = `${op.method} ${op.path}`
    const separator = op.url.includes('?') ? '&' : '?'
    const query = op.query
      .filter((parameter) => parameter.required)
      .map((parameter) => `${parameter.name}=${encodeURIComponent(String(sample(document, parameter.schema)))}`)
    const queryUrl = `${op.url}${separator}${[...query, `${EXTRA}=1`].join('&')}`
    const validBody = op.body ? sample(document, op.body) : undefined
    assertRefused(await send(op.method, queryUrl, validBody), 'query', EXTRA, `${what} with an unknown query parameter`)
    checked++
    if (!op.body || !closedObject(document, op.body)) continue
    const body = { ...(validBody as Json), [EXTRA]: 1 }
    assertRefused(await send(op.method, op.url, body), 'body', EXTRA, `${what} with an unknown field`)
    checked++
    const nested = nestedCase(document, op.body)
    if (nested) {
      assertRefused(await send(op.method, op.url, nested.body), 'body', nested.path, `${what} with ${nested.path}`)
      checked++
    }
  }
  assert.deepEqual(await snapshot(accountId), before, 'a refused request changed nothing')
  return checked
}

function keySender(account: TestAccount): Send {
  return async (method, url, body) => {
    const response = await account.request({
      method: method as 'GET',
      url,
      ...(body === undefined ? {} : { payload: body as Json }),
    })
    return { status: response.statusCode, body: response.body ? response.json() : {} }
  }
}

let signIns = 0
async function sessionSender(account: TestAccount): Promise<Send> {
  const email = `strict-${process.pid}-${Date.now()}-${++signIns}@example.org`
  const { headers } = await signedInMember(harness, {
    accountId: account.accountId,
    email,
    name: 'S',
    password: 'strict input pw',
    role: 'owner',
  })
  return async (method, url, body) => {
    const response = await harness.app.inject({
      method: method as 'GET',
      url,
      headers,
      ...(body === undefined ? {} : { payload: body as Json }),
    })
    return { status: response.statusCode, body: response.body ? response.json() : {} }
  }
}

const busy = { plan: { requestsPerMinute: 100_000, contacts: 1000 } }

describe('every operation refuses what it does not name', () => {
  test('/v1: an unknown query parameter, body field and nested field are 400 bad_request naming it', async () => {
    const account = await createTestAccount(harness, busy)
    const checked = await walk(v1, keySender(account), account.accountId)
    assert.ok(checked > 100, `walked ${checked} cases`)
  })

  test('/app: the same for the web app’s own routes', async () => {
    const account = await createTestAccount(harness, busy)
    const checked = await walk(appDocument, await sessionSender(account), account.accountId)
    assert.ok(checked > 50, `walked ${checked} cases`)
  })
})

describe('the tool server refuses an argument it does not name', () => {
  test('every tool, over POST /v1/tools/{tool_name}: an unknown argument, and one a level down, by path', async () => {
    const account = await createTestAccount(harness, busy)
    const send = keySender(account)
    const before = await snapshot(account.accountId)
    const schemas: Json = { paths: {} }
    for (const tool of catalogue) {
      const input = JSON.parse(JSON.stringify(tool.input)) as Json
      const args = { ...(sample(schemas, input) as Json), [EXTRA]: 1 }
      assertRefused(await send('POST', `/v1/tools/${tool.name}`, args), '', EXTRA, tool.name)
      const nested = nestedCase(schemas, input)
      if (nested) assertRefused(await send('POST', `/v1/tools/${tool.name}`, nested.body), '', nested.path, tool.name)
    }
    assert.deepEqual(await snapshot(account.accountId), before, 'a refused call changed nothing')
  })
})

describe('the mistakes strict input exists for', () => {
  test('PATCH /newsletters/{id} with segment.tags (for tags_any) is refused and the segment stays as it was', async () => {
    const account = await createTestAccount(harness)
    const send = keySender(account)
    const contact = await send('POST', '/v1/contacts', { name: 'Ada', email: 'ada@example.com' })
    await send('POST', `/v1/contacts/${contact.body.contact.id}/tags`, { tag: 'stammkunde' })
    const created = await send('POST', '/v1/newsletters', { subject: 'Herbst', content: 'Neue Ware' })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const id = created.body.newsletter?.id ?? created.body.id
    const segmented = await send('PATCH', `/v1/newsletters/${id}`, { segment: { tags_any: ['stammkunde'] } })
    assert.equal(segmented.status, 200, JSON.stringify(segmented.body))

    const refused = await send('PATCH', `/v1/newsletters/${id}`, { segment: { tags: ['stammkunde'] } })
    assertRefused(refused, 'body', 'segment.tags', 'segment.tags')
    const after = await send('GET', `/v1/newsletters/${id}`)
    assert.deepEqual((after.body.newsletter ?? after.body).segment, { tags_any: ['stammkunde'] })
  })

  test('POST /contacts with emial names the field instead of asking for an email or a phone; nothing is stored', async () => {
    const account = await createTestAccount(harness)
    const send = keySender(account)
    const refused = await send('POST', '/v1/contacts', { name: 'Ada', emial: 'ada@example.com' })
    assertRefused(refused, 'body', 'emial', 'emial')
    const list = await send('GET', '/v1/contacts')
    assert.deepEqual(list.body.contacts, [])
  })

  test('every unknown field is named at once, nested ones with their path', async () => {
    const account = await createTestAccount(harness)
    const refused = await keySender(account)('POST', '/v1/contacts', {
      emial: 'ada@example.com',
      phnoe: '+4915112345678',
      name: 'Ada',
    })
    assert.equal(refused.status, 400)
    assert.deepEqual(refused.body.error.unknown_fields, ['emial', 'phnoe'])
    assert.match(refused.body.error.message, /body\.emial, body\.phnoe are not known fields/)
  })

  test('a webhook subscription with a misspelt option is refused and not created', async () => {
    const account = await createTestAccount(harness)
    const send = keySender(account)
    const refused = await send('POST', '/v1/webhook-subscriptions', {
      url: 'https://hooks.example.com/herold',
      events: ['contact.created'],
      evnets: ['message.received'],
    })
    assertRefused(refused, 'body', 'evnets', 'evnets')
    const list = await send('GET', '/v1/webhook-subscriptions')
    assert.equal(list.status, 200)
    assert.deepEqual(list.body.subscriptions ?? list.body.webhook_subscriptions, [])
  })

  test('an automation trigger with a misspelt option is refused by its path and not created', async () => {
    const account = await createTestAccount(harness)
    const send = keySender(account)
    const refused = await send('POST', '/v1/automations', {
      name: 'Termine',
      trigger: { type: 'calendar', feed_url: 'https://calendar.example.com/a.ics', offset_minute: 60 },
      steps: [{ type: 'add_tag', tag: 'termin' }],
    })
    assertRefused(refused, 'body', 'trigger.offset_minute', 'trigger.offset_minute')
    const list = await send('GET', '/v1/automations')
    assert.deepEqual(list.body.automations, [])
  })

  test('a step of an automation is checked by its own type: a field of another type is unknown there', async () => {
    const account = await createTestAccount(harness)
    const refused = await keySender(account)('POST', '/v1/automations', {
      name: 'Tags',
      trigger: { type: 'manual' },
      steps: [
        { type: 'add_tag', tag: 'a' },
        { type: 'add_tag', tag: 'b', keywords: ['x'] },
      ],
    })
    assertRefused(refused, 'body', 'steps[1].keywords', 'steps[1].keywords')
  })

  test('a German alias is a response name only: as input it is an unknown field', async () => {
    const account = await createTestAccount(harness)
    const send = keySender(account)
    const contact = await send('POST', '/v1/contacts', { name: 'Ada', email: 'ada@example.com' })
    const url = `/v1/contacts/${contact.body.contact.id}/tags`
    assertRefused(await send('POST', url, { tag: 'neu', herkunft: 'manuell' }), 'body', 'herkunft', 'herkunft')
    const after = await send('GET', `/v1/contacts/${contact.body.contact.id}`)
    assert.deepEqual(after.body.contact.tags, [])
  })

  test('an unknown query parameter is refused by name', async () => {
    const account = await createTestAccount(harness)
    const refused = await keySender(account)('GET', '/v1/contacts?search=ada')
    assertRefused(refused, 'query', 'search', 'search')
    assert.match(refused.body.error.message, /query\.search is not a known parameter/)
  })

  test('a map the spec leaves open stays open: the trigger data of POST /automations/{id}/trigger', async () => {
    const account = await createTestAccount(harness)
    const send = keySender(account)
    const created = await send('POST', '/v1/automations', {
      name: 'Manuell',
      trigger: { type: 'manual' },
      steps: [{ type: 'add_tag', tag: 'manuell' }],
    })
    assert.equal(created.status, 200, JSON.stringify(created.body))
    const activated = await send('POST', `/v1/automations/${created.body.id}/activate`)
    assert.equal(activated.status, 200, JSON.stringify(activated.body))
    const contact = await send('POST', '/v1/contacts', { name: 'Ada', email: 'ada@example.com' })
    const triggered = await send('POST', `/v1/automations/${created.body.id}/trigger`, {
      contact_id: contact.body.contact.id,
      data: { order_id: 'A-17', any_field: { nested: true } },
    })
    assert.ok(triggered.status < 300, JSON.stringify(triggered.body))
  })
})
