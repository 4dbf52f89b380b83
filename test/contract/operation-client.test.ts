import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import type { operations } from '../../web/src/api/v1.ts'
import { committedDocument } from '../helpers/contract.ts'
import { createHarness, createTestAccount, type Harness } from '../helpers/harness.ts'

// A client by operation id, as SDK generators build one: openapi-typescript's `operations` map (web/src/api/v1.ts,
// written by `npm run web:types` from openapi/v1.json) types each call by its id; the committed document gives each
// id its method and path. Three operations are called by name against a real server on loopback.

type OperationId = keyof operations
type Parameters<K extends OperationId> = operations[K]['parameters']
type BodyOf<K extends OperationId> = operations[K] extends {
  requestBody?: { content: { 'application/json': infer B } }
}
  ? B
  : never
type Success = 200 | 201 | 202
type Answer<K extends OperationId> = {
  [S in keyof operations[K]['responses'] & Success]: operations[K]['responses'][S] extends {
    content: { 'application/json': infer R }
  }
    ? R
    : never
}[keyof operations[K]['responses'] & Success]
type Input<K extends OperationId> = {
  path?: NonNullable<Parameters<K>['path']>
  query?: NonNullable<Parameters<K>['query']>
  body?: BodyOf<K>
}

/** id → method and path, read from the committed document (what a generated client carries as its route table). */
const routes = new Map<string, { method: string; path: string }>()
for (const [path, methods] of Object.entries(committedDocument('v1').paths))
  for (const [method, operation] of Object.entries(methods)) {
    const id = (operation as { operationId?: string }).operationId
    if (id) routes.set(id, { method: method.toUpperCase(), path })
  }

let harness: Harness
let baseUrl: string
let key: string
before(async () => {
  harness = await createHarness()
  await harness.app.listen({ host: '127.0.0.1', port: 0 })
  baseUrl = `http://127.0.0.1:${(harness.app.server.address() as AddressInfo).port}`
  key = (await createTestAccount(harness)).key
})
after(() => harness.close())

/** Calls an operation by its id: `call('listContacts', { query: { limit: 10 } })`. */
async function call<K extends OperationId>(id: K, input: Input<K> = {}): Promise<{ status: number; body: Answer<K> }> {
  const route = routes.get(id)
  assert.ok(route, `no operation ${id} in openapi/v1.json`)
  const path = route.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
    encodeURIComponent(String((input.path as Record<string, unknown> | undefined)?.[name])),
  )
  const url = new URL(`${baseUrl}${path}`)
  for (const [name, value] of Object.entries((input.query ?? {}) as Record<string, unknown>))
    url.searchParams.set(name, String(value))
  const response = await fetch(url, {
    method: route.method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(input.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(input.body === undefined ? {} : { body: JSON.stringify(input.body) }),
  })
  return { status: response.status, body: (await response.json()) as Answer<K> }
}

test('createContact, addContactTags and listContacts, called by their operation ids', async () => {
  const created = await call('createContact', { body: { name: 'Erika Mustermann', email: 'erika@example.com' } })
  assert.equal(created.status, 201)
  const id = created.body.contact.id

  const tagged = await call('addContactTags', { path: { id }, body: { tags: ['vip', 'stammkunde'] } })
  assert.equal(tagged.status, 200, JSON.stringify(tagged.body))
  assert.deepEqual(tagged.body.tags.map((tag) => tag.name).sort(), ['stammkunde', 'vip'])

  const listed = await call('listContacts', { query: { q: 'erika@example.com', limit: 10 } })
  assert.equal(listed.status, 200, JSON.stringify(listed.body))
  assert.deepEqual(
    listed.body.contacts.map((contact) => contact.id),
    [id],
  )
})

test('every operation of the typed map has a route in the committed document, and no more', () => {
  // the generated `operations` map is keyed by the same ids; a route without one would be missing from it
  assert.equal(routes.size, Object.values(committedDocument('v1').paths).flatMap(Object.values).length)
  const typed: OperationId[] = ['listContacts', 'createContact', 'addContactTags', 'scheduleNewsletter']
  for (const id of typed) assert.ok(routes.has(id), id)
  // @ts-expect-error: the name a generator makes up from method and path when an operation has no id
  const madeUp: OperationId = 'postV1ContactsIdTags'
  assert.equal(routes.has(madeUp), false)
})
