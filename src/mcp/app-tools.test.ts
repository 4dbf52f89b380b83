import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { signedInMember } from '../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { harnessPerFile } from '../../test/helpers/test-file.ts'

// POST /app/{tool_name}: every tool over plain HTTP with the web app's session; the member's role gives the scopes,
// every call needs the session's CSRF token, and the errors are those of POST /v1/tools/{tool_name}.

let harness: Harness
harnessPerFile((created) => {
  harness = created
})

async function member(accountId: string, role: 'owner' | 'admin' | 'member' | 'viewer') {
  const email = `t${randomBytes(6).toString('hex')}@example.org`
  return (await signedInMember(harness, { accountId, email, name: 'Tess', password: 'long password 12', role })).headers
}

const call = (headers: Record<string, string>, tool: string, payload: unknown = {}) =>
  harness.app.inject({ method: 'POST', url: `/app/${tool}`, headers, payload: payload as Record<string, unknown> })

test('a member calls tools with the session: scopes of the role, CSRF token required, the REST errors', async () => {
  const account = await createTestAccount(harness)
  const other = await createTestAccount(harness)
  const owner = await member(account.accountId, 'owner')
  const viewer = await member(account.accountId, 'viewer')

  const me = await call(owner, 'get_account')
  assert.equal(me.statusCode, 200, me.body)
  assert.equal(me.json().account.id, account.accountId)
  assert.equal(me.json().auth_type, 'session')

  const created = await call(owner, 'create_contact', { name: 'Erika', email: 'erika@example.org' })
  assert.equal(created.statusCode, 200, created.body)
  const contactId = created.json().contact.id as string
  const found = await call(viewer, 'search_contacts', { query: 'erika' })
  assert.equal(found.statusCode, 200)
  assert.deepEqual(
    found.json().contacts.map((c: { id: string }) => c.id),
    [contactId],
  )

  // without the CSRF token nothing runs
  const noCsrf = await call({ cookie: owner.cookie }, 'create_contact', { name: 'Max', email: 'max@example.org' })
  assert.equal(noCsrf.statusCode, 403)
  assert.equal(noCsrf.json().error.code, 'csrf_invalid')
  // no session (an API key or OAuth token is not a session here)
  const noSession = await call({ authorization: `Bearer ${account.key}` }, 'get_account')
  assert.equal(noSession.statusCode, 401)
  assert.equal(noSession.json().error.code, 'unauthorized')

  // a viewer's role lacks contacts:write: the REST answer
  const refused = await call(viewer, 'create_contact', { name: 'Max', email: 'max@example.org' })
  assert.equal(refused.statusCode, 403)
  assert.equal(refused.json().error.key, 'apikey_scope_fehlt')

  // the same errors as /v1/tools: bad arguments, unknown tools, another account's id
  const bad = await call(owner, 'search_contacts', { limit: 0 })
  assert.equal(bad.statusCode, 400)
  assert.equal(bad.json().error.code, 'bad_request')
  const unknown = await call(owner, 'no_such_tool')
  const unknownRest = await harness.app.inject({
    method: 'POST',
    url: '/v1/tools/no_such_tool',
    headers: { authorization: `Bearer ${account.key}` },
    payload: {},
  })
  assert.equal(unknown.statusCode, unknownRest.statusCode)
  assert.equal(unknown.json().error.code, unknownRest.json().error.code)
  const otherOwner = await member(other.accountId, 'owner')
  const isolated = await call(otherOwner, 'get_contact', { contact_id: contactId })
  assert.equal(isolated.statusCode, 404)

  // two-step: a preview and a token bound to this session; the same call with it executes
  const preview = await call(owner, 'delete_contact', { contact_id: contactId })
  assert.equal(preview.statusCode, 200)
  assert.equal(preview.json().executed, false)
  const token = preview.json().confirm_token as string
  const admin = await member(account.accountId, 'admin')
  const elsewhere = await call(admin, 'delete_contact', { contact_id: contactId, confirm_token: token })
  assert.equal(elsewhere.statusCode, 400, 'another session cannot use the token')
  assert.equal(elsewhere.json().error.key, 'confirm_token_credential')
  const confirmed = await call(owner, 'delete_contact', { contact_id: contactId, confirm_token: token })
  assert.equal(confirmed.statusCode, 200, confirmed.body)
  assert.equal((await call(owner, 'get_contact', { contact_id: contactId })).statusCode, 404)
  const again = await call(owner, 'delete_contact', { contact_id: contactId, confirm_token: token })
  assert.equal(again.statusCode, 400)
  assert.equal(again.json().error.key, 'confirm_token_used')
})
