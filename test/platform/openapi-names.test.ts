import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'

// What SDK generators (openapi-generator, Stainless, Speakeasy, Fern, Kiota, openapi-typescript's `operations`) read
// from both committed documents (a test elsewhere holds them equal to what the code produces): every operation's
// method name, every tag's description, who answers for the API and under which licence.

type Operation = { operationId?: string; tags?: string[]; summary?: string; description?: string }
type Doc = {
  info: { contact?: Record<string, string>; license?: { name?: string } }
  tags?: { name: string; description?: string }[]
  paths: Record<string, Record<string, Operation>>
}

const documents = ['v1', 'app'].map((name) => ({
  name,
  doc: JSON.parse(readFileSync(new URL(`../../openapi/${name}.json`, import.meta.url), 'utf8')) as Doc,
}))

const operations = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ at: `${method.toUpperCase()} ${path}`, operation })),
  )

// the first word of an id is what the method does (listContacts, addContactTags, scheduleNewsletter)
const verbs = new Set(
  (
    'list get create update delete add remove submit duplicate refresh enable disable rotate test redeliver send ' +
    'simulate activate pause trigger cancel schedule preview check enroll stop set move upload search call look ' +
    'export count bulk rename mark assign close reopen request opt estimate ask sign change complete accept revoke ' +
    'resend invite decide import stream render snooze'
  ).split(' '),
)

for (const { name, doc } of documents) {
  test(`${name}: every operation has an operationId, unique, lowerCamelCase, starting with what it does`, () => {
    const seen = new Map<string, string>()
    const ops = operations(doc)
    assert.ok(ops.length > 0)
    for (const { at, operation } of ops) {
      const id = operation.operationId
      assert.ok(id, `${at} has no operationId`)
      assert.match(id, /^[a-z][a-zA-Z0-9]*$/, `${at}: ${id} is not lowerCamelCase`)
      const verb = id.match(/^[a-z]+/)?.[0] ?? ''
      assert.ok(verbs.has(verb), `${at}: ${id} does not start with a verb (${verb})`)
      assert.equal(seen.get(id), undefined, `${at} and ${seen.get(id)} share the operationId ${id}`)
      seen.set(id, at)
    }
  })

  test(`${name}: every tag an operation carries is declared at the top with a description`, () => {
    const declared = new Map((doc.tags ?? []).map((tag) => [tag.name, tag.description ?? '']))
    for (const { at, operation } of operations(doc)) {
      assert.ok(operation.tags?.length, `${at} has no tag`)
      for (const tag of operation.tags)
        assert.ok(declared.get(tag)?.trim(), `${at}: tag "${tag}" is not declared with a description`)
    }
  })

  test(`${name}: info names a contact and a licence; every operation has a summary and a description`, () => {
    assert.ok(doc.info.contact?.name, 'info.contact.name')
    assert.ok(doc.info.license?.name, 'info.license.name')
    for (const { at, operation } of operations(doc)) {
      assert.ok(operation.summary?.trim(), `${at} has no summary`)
      assert.ok(operation.description?.trim(), `${at} has no description`)
    }
  })
}

test('the ids read as the issue names them', () => {
  const ids = new Map(operations(documents[0].doc).map(({ at, operation }) => [at, operation.operationId]))
  assert.equal(ids.get('GET /v1/contacts'), 'listContacts')
  assert.equal(ids.get('POST /v1/contacts'), 'createContact')
  assert.equal(ids.get('GET /v1/contacts/{id}'), 'getContact')
  assert.equal(ids.get('PATCH /v1/contacts/{id}'), 'updateContact')
  assert.equal(ids.get('DELETE /v1/contacts/{id}'), 'deleteContact')
  assert.equal(ids.get('POST /v1/contacts/{id}/tags'), 'addContactTags')
  assert.equal(ids.get('POST /v1/newsletters/{id}/schedule'), 'scheduleNewsletter')
})
