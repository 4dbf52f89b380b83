import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { LightMyRequestResponse } from 'fastify'
import { signedInMember } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'

// The console's own /app routes of other modules: the live template check and the CSV import with its progress
// lines. Signed in as members of each role, through Fastify's inject.

let harness: Harness
harnessPerFile((created) => {
  harness = created
})

let counter = 0
const PASSWORD = 'correct horse battery'

/** Signs a new member of the account in; answers the headers a browser sends on a change. */
async function member(accountId: string, role: 'owner' | 'member' | 'viewer') {
  const email = `console-${process.pid}-${Date.now()}-${++counter}@example.org`
  return (await signedInMember(harness, { accountId, email, name: role, password: PASSWORD, role })).headers
}

function importCsv(headers: Record<string, string>, csv: string, contentType = 'text/csv') {
  return harness.app.inject({
    method: 'POST',
    url: '/app/contacts/import',
    headers: { ...headers, 'content-type': contentType },
    payload: csv,
  })
}

// biome-ignore lint/suspicious/noExplicitAny: answers read field by field
const json = (response: LightMyRequestResponse): any => response.json()

const lines = (body: string) =>
  body
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>)

describe('console routes', () => {
  test('the CSV import answers progress lines and the report with the rejected lines; contacts are imported', async () => {
    const account = await createTestAccount(harness)
    const owner = await member(account.accountId, 'owner')
    const rows = [
      'name,email,phone,tags',
      'Anna,anna@example.org,,kunde',
      'Kaputt,not-an-email,,',
      'Bernd,,+49 151 23456789,',
    ]
    const response = await importCsv(owner, `${rows.join('\n')}\n`)
    assert.equal(response.statusCode, 200, response.body)
    assert.match(String(response.headers['content-type']), /^application\/x-ndjson/)
    const events = lines(response.body)
    const progress = events.filter((e) => e.type === 'progress')
    assert.ok(progress.length >= 1)
    assert.equal(progress.at(-1)?.bytes, progress.at(-1)?.total_bytes)
    const done = events.at(-1) as { type: string; report: Record<string, unknown> }
    assert.equal(done.type, 'done')
    assert.equal(done.report.created, 2)
    assert.equal(done.report.rejected, 1)
    assert.deepEqual(done.report.rejected_lines, [{ line: 3, reason: 'invalid email "not-an-email"' }])

    const found = await harness.app.inject({ method: 'GET', url: '/v1/contacts?q=anna', headers: owner })
    assert.equal(json(found).contacts.length, 1)
    // another account sees nothing of it
    const other = await createTestAccount(harness)
    const otherOwner = await member(other.accountId, 'owner')
    const none = await harness.app.inject({ method: 'GET', url: '/v1/contacts?q=anna', headers: otherOwner })
    assert.equal(json(none).contacts.length, 0)
  })

  test('a CSV without an email or phone column is a 400 before anything is imported; other bodies a 415', async () => {
    const account = await createTestAccount(harness)
    const owner = await member(account.accountId, 'owner')
    const bad = await importCsv(owner, 'vorname;nachname\nA;B\n')
    assert.equal(bad.statusCode, 400)
    assert.equal(json(bad).error.key, 'csv_invalid')
    const notCsv = await importCsv(owner, '{"email":"a@example.org"}', 'application/json')
    assert.equal(notCsv.statusCode, 415)
    const contacts = await harness.app.inject({ method: 'GET', url: '/v1/contacts', headers: owner })
    assert.equal(json(contacts).contacts.length, 0)
  })

  test('a viewer may not import, a member may; without the CSRF token nobody may', async () => {
    const account = await createTestAccount(harness)
    const viewer = await member(account.accountId, 'viewer')
    const refused = await importCsv(viewer, 'email\nv@example.org\n')
    assert.equal(refused.statusCode, 403)
    assert.equal(json(refused).error.code, 'forbidden')
    const someone = await member(account.accountId, 'member')
    const noToken = await importCsv({ cookie: someone.cookie }, 'email\nm@example.org\n')
    assert.equal(noToken.statusCode, 403)
    assert.equal(json(noToken).error.code, 'csrf_invalid')
    const allowed = await importCsv(someone, 'email\nm@example.org\n')
    assert.equal(allowed.statusCode, 200)
    assert.equal((lines(allowed.body).at(-1) as { report: { created: number } }).report.created, 1)
    const anonymous = await importCsv({}, 'email\nx@example.org\n')
    assert.equal(anonymous.statusCode, 401)
  })

  test("the template check lists a draft's issues live and changes nothing; a name taken in the account is an issue", async () => {
    const account = await createTestAccount(harness)
    const viewer = await member(account.accountId, 'viewer')
    const check = (payload: Record<string, unknown>) =>
      harness.app.inject({ method: 'POST', url: '/app/templates/check', headers: viewer, payload })
    const starts = await check({ name: 'Gutschein', content: '{{1}} ist Ihr Code' })
    assert.equal(starts.statusCode, 200, starts.body)
    assert.deepEqual(
      json(starts).issues.map((i: { code: string }) => i.code),
      ['variable_at_start'],
    )
    assert.equal(json(starts).provider_name, 'gutschein')
    const fine = await check({ name: 'Gutschein', content: 'Ihr Code {{code}} gilt bis Sonntag.' })
    assert.deepEqual(json(fine).issues, [])
    assert.deepEqual(json(fine).variables, ['code'])

    const created = await harness.app.inject({
      method: 'POST',
      url: '/v1/templates',
      headers: { authorization: `Bearer ${account.key}` },
      payload: { name: 'Gutschein', content: 'Hallo', language: 'de' },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = json(created).template.id as string
    const clash = await check({ name: 'Gutschein', content: 'Ihr Code {{code}} gilt.', language: 'de' })
    assert.deepEqual(
      json(clash).issues.map((i: { field: string }) => i.field),
      ['name'],
    )
    const itself = await check({ id, name: 'Gutschein', content: 'Ihr Code {{code}} gilt.', language: 'de' })
    assert.deepEqual(json(itself).issues, [], 'the template being edited does not clash with itself')
    const invalid = await check({ name: 'x', content: 'y', channel: 'fax' })
    assert.equal(invalid.statusCode, 400)
    const anonymous = await harness.app.inject({
      method: 'POST',
      url: '/app/templates/check',
      payload: { name: 'x', content: 'y' },
    })
    assert.equal(anonymous.statusCode, 401)
  })
})
