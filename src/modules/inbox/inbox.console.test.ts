import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type Json, sandboxAccount, signedInMember, unique } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import type { Role } from '../../platform/auth/people.tables.ts'

// The console's read-only /app routes for the inbox list, the names of a list's contacts and a new account's first
// steps: a session, account-scoped, bad input refused in the envelope.

let harness: Harness
harnessPerFile((created) => {
  harness = created
})

async function member(account: TestAccount, role: Role = 'owner') {
  const { cookie, csrf } = await signedInMember(harness, {
    accountId: account.accountId,
    email: `phone-${unique()}@example.org`,
    password: 'phone password 12',
    role,
  })
  return async (url: string, method: 'GET' | 'POST' = 'GET') => {
    const headers = method === 'GET' ? { cookie } : { cookie, 'x-csrf-token': csrf }
    const response = await harness.app.inject({ method, url, headers, payload: method === 'GET' ? undefined : {} })
    return { status: response.statusCode, body: response.json() as Json }
  }
}

async function api(account: TestAccount, method: 'GET' | 'POST', url: string, payload?: unknown) {
  const answer = await account.request({ method, url, payload: payload as Json })
  assert.ok(answer.statusCode < 300, `${url}: ${answer.body}`)
  return answer.json() as Json
}

describe('GET /app/conversations', () => {
  test('the conversations by latest activity, each with its contact’s name, phone and e-mail, and the account’s unread total', async () => {
    const account = await sandboxAccount(harness)
    await api(account, 'POST', '/v1/sandbox/inbound', { from: '+4915123456789', text: 'Hallo, Brezeln?' })
    harness.clock.advance(1000)
    await api(account, 'POST', '/v1/sandbox/inbound', { from: '+4917612345678', text: 'Dinkelbrot?', name: 'Dora' })
    harness.clock.advance(1000)
    await api(account, 'POST', '/v1/sandbox/inbound', { from: '+4917612345678', text: 'Und Kuchen?' })
    const get = await member(account, 'viewer')
    const answer = await get('/app/conversations')
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const [dora, unnamed] = answer.body.conversations
    assert.deepEqual(
      { ...dora.contact, id: undefined },
      { id: undefined, name: 'Dora', phone: '+4917612345678', email: '' },
    )
    assert.equal(dora.contact.id, dora.contact_id)
    assert.equal(dora.last_message.preview, 'Und Kuchen?')
    assert.equal(dora.unread_count, 2)
    assert.deepEqual(
      { name: unnamed.contact.name, phone: unnamed.contact.phone },
      { name: '', phone: '+4915123456789' },
    )
    assert.equal(answer.body.unread_count, 3)
    assert.equal(answer.body.has_more, false)

    const paged = await get('/app/conversations?limit=1')
    assert.deepEqual(
      paged.body.conversations.map((c: Json) => c.id),
      [dora.id],
    )
    assert.equal(paged.body.has_more, true)
    // the title counts every conversation's unread messages, not only the page's
    assert.equal(paged.body.unread_count, 3)
    const next = await get('/app/conversations?limit=1&offset=1')
    assert.deepEqual(
      next.body.conversations.map((c: Json) => c.id),
      [unnamed.id],
    )
    assert.equal((await get('/app/conversations?offset=50')).body.unread_count, 3)
    const answerer = await member(account, 'member')
    assert.equal((await answerer(`/app/conversations/${dora.id}/read`, 'POST')).status, 200)
    assert.equal((await get('/app/conversations?limit=1')).body.unread_count, 1)

    // another account sees its own (none)
    const other = await member(await createTestAccount(harness))
    const others = (await other('/app/conversations')).body
    assert.deepEqual([others.conversations, others.unread_count], [[], 0])
  })

  test('bad paging and unknown parameters are 400s in the envelope; without a session 401', async () => {
    const get = await member(await createTestAccount(harness))
    for (const url of ['/app/conversations?limit=0', '/app/conversations?limit=201', '/app/conversations?offset=-1']) {
      const answer = await get(url)
      assert.equal(answer.status, 400, url)
      assert.ok(answer.body.error.code, url)
    }
    const unknown = await get('/app/conversations?colour=blue')
    assert.equal(unknown.status, 400)
    assert.match(JSON.stringify(unknown.body.error), /colour/)
    const anonymous = await harness.app.inject({ method: 'GET', url: '/app/conversations' })
    assert.equal(anonymous.statusCode, 401)
  })
})

describe('GET /app/contacts/labels', () => {
  test('name, phone and e-mail of the account’s own contacts; others left out; bad ids refused', async () => {
    const account = await createTestAccount(harness)
    const a = await api(account, 'POST', '/v1/contacts', { name: 'Anna', phone: '+4915111111111' })
    const b = await api(account, 'POST', '/v1/contacts', { email: 'bert@example.org' })
    const other = await createTestAccount(harness)
    const c = await api(other, 'POST', '/v1/contacts', { name: 'Carla', email: 'carla@example.org' })
    const get = await member(account, 'viewer')
    const answer = await get(`/app/contacts/labels?ids=${a.contact.id},${b.contact.id},${c.contact.id}`)
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const byId = new Map(answer.body.contacts.map((x: Json) => [x.id, x]))
    assert.deepEqual(byId.get(a.contact.id), { id: a.contact.id, name: 'Anna', phone: '+4915111111111', email: '' })
    assert.deepEqual(byId.get(b.contact.id), { id: b.contact.id, name: '', phone: '', email: 'bert@example.org' })
    assert.equal(byId.has(c.contact.id), false, 'another account’s contact is not named')

    const bad = await get('/app/contacts/labels?ids=not-a-uuid')
    assert.equal(bad.status, 400)
    assert.equal(bad.body.error.key, 'invalid_ids')
    const many = Array.from({ length: 101 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`)
    assert.equal((await get(`/app/contacts/labels?ids=${many.join(',')}`)).status, 400)
    assert.equal((await get('/app/contacts/labels')).status, 400, 'ids is required')
  })
})

describe('GET /app/first-steps', () => {
  test('the four steps of a new account follow what it holds', async () => {
    const account = await createTestAccount(harness)
    const get = await member(account)
    const none = await get('/app/first-steps')
    assert.equal(none.status, 200, JSON.stringify(none.body))
    assert.deepEqual(none.body, {
      connect_number: false,
      optin_template: false,
      import_contacts: false,
      invite_team: false,
    })

    await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    await api(account, 'POST', '/v1/contacts', { name: 'Anna', phone: '+4915111111112' })
    // a second member (the viewer signs in as one)
    const viewer = await member(account, 'viewer')
    const some = await viewer('/app/first-steps')
    assert.deepEqual(some.body, {
      connect_number: true,
      optin_template: false,
      import_contacts: true,
      invite_team: true,
    })

    // an opt-in template counts once approved (the sandbox approves on submit)
    const template = await api(account, 'POST', '/v1/templates', {
      name: 'Bestaetigung',
      content: 'Bitte bestätigen Sie den Empfang unserer Nachrichten.',
      purpose: 'optin_confirm',
      language: 'de',
    })
    await api(account, 'POST', `/v1/templates/${template.template.id}/submit`)
    assert.equal((await get('/app/first-steps')).body.optin_template, true)

    // another account's state is its own
    assert.equal(
      (await (await member(await createTestAccount(harness)))('/app/first-steps')).body.import_contacts,
      false,
    )
  })
})
