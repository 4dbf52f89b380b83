import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, test } from 'node:test'
import type { InjectOptions } from 'fastify'
import { committedDocument, contractBreach, type DocOperation, type JsonSchema } from '../helpers/contract.ts'
import { createHarness, createKey, createTestAccount, type Harness } from '../helpers/harness.ts'

// Walks every operation of the committed document with missing, invalid and odd parameters and bodies, unknown and
// foreign ids and no credential, and checks that every answer is documented for its operation and none is a 500.

const doc = committedDocument()
let harness: Harness
let owner: string
let stranger: string
let readOnly: string
const foreignIds = new Map<string, string[]>()

before(async () => {
  harness = await createHarness()
  const plan = { requestsPerMinute: 1_000_000 }
  const a = await createTestAccount(harness, { plan, name: 'Owner' })
  const b = await createTestAccount(harness, { plan, name: 'Stranger' })
  owner = a.key
  stranger = b.key
  readOnly = await createKey(harness, b.accountId, ['contacts:read'])
})
after(() => harness.close())

const operations = Object.entries(doc.paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, operation]) => ({ path, method: method.toUpperCase(), operation })),
)

function resolve(schema: JsonSchema | undefined): JsonSchema {
  if (!schema) return {}
  if (schema.$ref) return resolve(doc.components?.schemas?.[schema.$ref.split('/').pop() ?? ''])
  if (schema.allOf?.length === 1) return resolve(schema.allOf[0])
  return schema
}

/** A plausible value of a schema: what a careful client would send. */
function sample(raw: JsonSchema | undefined, depth = 0): unknown {
  const schema = resolve(raw)
  if (schema.default !== undefined) return schema.default
  if (schema.enum?.length) return schema.enum[0]
  const variant = schema.oneOf?.[0] ?? schema.anyOf?.[0]
  if (variant) return sample(variant, depth + 1)
  switch (schema.type) {
    case 'string':
      return stringSample(schema)
    case 'integer':
    case 'number':
      return schema.minimum ?? 1
    case 'boolean':
      return true
    case 'array':
      return depth > 4 ? [] : [sample(schema.items, depth + 1)]
    default:
      if (depth > 4) return {}
      return Object.fromEntries(
        Object.entries(schema.properties ?? {})
          .filter(([name]) => schema.required?.includes(name) || depth === 0)
          .map(([name, property]) => [name, sample(property, depth + 1)]),
      )
  }
}

function stringSample(schema: JsonSchema): string {
  switch (schema.format) {
    case 'uuid':
      return randomUUID()
    case 'email':
      return `walk-${randomUUID().slice(0, 8)}@example.com`
    case 'date-time':
      return '2031-01-01T09:00:00Z'
    case 'date':
      return '2031-01-01'
    case 'uri':
      return 'https://example.com/walk'
  }
  return 'x'.repeat(Math.max(1, schema.minLength ?? 1))
}

/** Each property set to a value of another type. */
function mistyped(schema: JsonSchema): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(resolve(schema).properties ?? {}).map(([name, property]) => [
      name,
      resolve(property).type === 'string' ? 12345 : 'not-this-type',
    ]),
  )
}

function bodies(operation: DocOperation): (object | string | undefined)[] {
  const schema = operation.requestBody?.content?.['application/json']?.schema
  if (!schema) return [undefined]
  const good = sample(schema) as object
  return [undefined, {}, [], 'text', mistyped(schema), good, { ...good, name: '\u0000'.repeat(3) }]
}

function queries(operation: DocOperation): string[] {
  const names = (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name)
  const out = ['']
  for (const name of names) {
    for (const value of ['x', '-1', '99999999999', '']) out.push(`${name}=${encodeURIComponent(value)}`)
  }
  const valid = (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => `${p.name}=${sample(p.schema)}`)
  if (valid.length) out.push(valid.join('&'))
  return out
}

function paths(path: string): string[] {
  if (!path.includes('{')) return [path]
  const prefix = path.slice(0, path.indexOf('/{'))
  const foreign = foreignIds.get(prefix) ?? []
  const fill = (value: (name: string) => string) => path.replace(/\{([^}]+)\}/g, (_m, name: string) => value(name))
  return [
    fill(() => randomUUID()),
    fill(() => 'not-a-uuid'),
    fill(() => '%00'),
    ...foreign.map((id) => fill((name) => (name === 'id' ? id : randomUUID()))),
  ]
}

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==',
  'base64',
)

/** One resource of each kind in the owner's account, to be pointed at by the stranger. */
const ownerResources: [string, object][] = [
  ['/v1/contacts', { email: 'owner-contact@example.com', name: 'Owner contact' }],
  ['/v1/templates', { name: 'Owner template', content: 'Hallo {{1}}' }],
  ['/v1/webhook-subscriptions', { url: 'https://hooks.example.com/herold', events: ['contact.created'] }],
  ['/v1/newsletters', { subject: 'Owner newsletter', content: 'Hallo' }],
  ['/v1/automations', { name: 'Owner', trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] }],
  ['/v1/media', { data_base64: PNG.toString('base64'), filename: 'dot.png', mime: 'image/png' }],
  [
    '/v1/knowledge/documents',
    { data_base64: Buffer.from('Opening hours: 9 to 5.').toString('base64'), filename: 'hours.txt' },
  ],
]

/** Every id the owner's account gets from creating one of each resource, by the collection it belongs to. */
async function createForeignResources(): Promise<void> {
  for (const [url, payload] of ownerResources) {
    const response = await send(owner, { method: 'POST', url, payload })
    assert.ok(response.statusCode < 300, `${url}: ${response.body}`)
    foreignIds.set(url, [idIn(response.json()) ?? ''])
  }
}

function idIn(body: unknown): string | null {
  if (!body || typeof body !== 'object') return null
  const record = body as Record<string, unknown>
  if (typeof record.id === 'string') return record.id
  for (const value of Object.values(record)) {
    if (value && typeof value === 'object' && typeof (value as { id?: unknown }).id === 'string')
      return (value as { id: string }).id
  }
  return null
}

function send(key: string | null, options: InjectOptions) {
  const headers = { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(options.headers ?? {}) }
  return harness.app.inject({ ...options, headers })
}

test('every answer to a walk over every operation is documented for it, and none is a 500', async () => {
  await createForeignResources()
  assert.ok(foreignIds.size >= 5, `the owner made resources to point at: ${[...foreignIds.keys()].join(', ')}`)
  const breaches = new Set<string>()
  const seen = new Map<string, Set<number>>()
  const check = async (key: string | null, options: InjectOptions) => {
    const response = await send(key, options)
    const where = `${options.method} ${options.url}`
    seen.set(where, (seen.get(where) ?? new Set()).add(response.statusCode))
    if (response.statusCode >= 500) breaches.add(`${where}: ${response.statusCode} ${response.body.slice(0, 200)}`)
    const breach = contractBreach(doc, String(options.method), String(options.url), response)
    if (breach) breaches.add(breach)
  }
  for (const { path, method, operation } of operations) {
    const secured = (operation.security ?? []).length > 0
    for (const url of paths(path)) {
      const anyBody = bodies(operation).at(-2)
      if (secured) {
        await check(null, { method, url, payload: anyBody as object })
        await check(readOnly, { method, url, payload: anyBody as object })
        await check('hk_not_a_key', { method, url })
      }
      for (const query of queries(operation))
        await check(stranger, { method, url: query ? `${url}?${query}` : url, payload: anyBody as object })
      for (const payload of bodies(operation)) await check(stranger, { method, url, payload: payload as object })
      if (operation.requestBody)
        await check(stranger, { method, url, payload: '<a/>', headers: { 'content-type': 'application/xml' } })
    }
  }
  assert.deepEqual([...breaches].sort(), [])
  assert.ok(seen.size > operations.length, 'every operation was called')
})
