import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { toWire } from '../../platform/http/serializer.ts'
import {
  consentHistory,
  contactsServiceFor,
  importContacts,
  recordOptinChange,
  registerContactCleanup,
} from './index.ts'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

let harness: Harness
before(async () => {
  harness = await createHarness()
})
after(async () => {
  await harness.close()
})

const create = (account: TestAccount, payload: Record<string, unknown>, url = '/v1/contacts') =>
  account.request({ method: 'POST', url, payload })

async function createContact(account: TestAccount, payload: Record<string, unknown>): Promise<Json> {
  const response = await create(account, payload)
  assert.equal(response.statusCode, 201, response.body)
  return response.json().contact
}

async function confirmBoth(accountId: string, contactId: string): Promise<void> {
  await harness.database.orm.transaction(async (tx) => {
    for (const channel of ['chat', 'email'] as const) {
      await recordOptinChange(tx, harness.clock, { accountId, contactId, channel, to: 'confirmed', source: 'test' })
    }
  })
}

const getContact = async (account: TestAccount, id: string): Promise<Json> =>
  (await account.request({ method: 'GET', url: `/v1/contacts/${id}` })).json().contact

function csvFile(lines: string[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'herold-import-'))
  const file = path.join(dir, 'contacts.csv')
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}

describe('POST /v1/contacts', () => {
  test('creates a contact with both opt-ins none, phone in E.164 and email lower-cased', async () => {
    const account = await createTestAccount(harness)
    const response = await create(account, { name: 'Anna', email: 'Anna@Example.DE', phone: '+49 151-2345 6789' })
    assert.equal(response.statusCode, 201)
    const body = response.json()
    assert.equal(body.ok, true)
    assert.equal(body.created, true)
    assert.equal(body.contact.email, 'anna@example.de')
    assert.equal(body.contact.phone, '+4915123456789')
    assert.equal(body.contact.optin_chat, 'none')
    assert.equal(body.contact.optin_email, 'none')
    assert.equal(body.contact.acquisition, 'marketing')
    assert.deepEqual(body.contact.tags, [])
    assert.match(body.contact.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    assert.deepEqual(await getContact(account, body.contact.id), body.contact)
  })

  test('writes contact.created with the contact fields to the outbox in the same transaction', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { name: 'Ben', email: 'ben@example.com' })
    const events = await harness.database.query<{ name: string; contact_id: string; data: Json }>(
      'SELECT name, contact_id, data FROM events WHERE account_id = $1',
      [account.accountId],
    )
    assert.equal(events.length, 1)
    assert.equal(events[0].name, 'contact.created')
    assert.equal(events[0].contact_id, contact.id)
    const { acquisition: _, ...fields } = contact
    assert.deepEqual(events[0].data, fields)
  })

  test('needs an email or a phone', async () => {
    const account = await createTestAccount(harness)
    const response = await create(account, { name: 'Nobody' })
    assert.equal(response.statusCode, 400)
    assert.equal(response.json().error.code, 'bad_request')
    assert.equal(response.json().error.key, 'email_or_phone_required')
  })

  test('a phone that cannot be normalised gives 400 naming the field', async () => {
    const account = await createTestAccount(harness)
    const response = await create(account, { phone: '12345' })
    assert.equal(response.statusCode, 400)
    assert.equal(response.json().error.code, 'bad_request')
    assert.equal(response.json().error.field, 'phone')
    assert.match(response.json().error.message, /phone/)
  })

  test('a name over 120 characters and a malformed email give 400', async () => {
    const account = await createTestAccount(harness)
    const long = await create(account, { name: 'x'.repeat(121), email: 'a@example.com' })
    assert.equal(long.statusCode, 400)
    assert.match(long.json().error.message, /name/)
    const bad = await create(account, { email: 'not-an-email' })
    assert.equal(bad.statusCode, 400)
    assert.equal(bad.json().error.code, 'bad_request')
  })

  test('a duplicate email gives 409 contact_exists with key kontakt_email_doppelt and contact_id', async () => {
    const account = await createTestAccount(harness)
    const first = await createContact(account, { email: 'dup@example.com' })
    const response = await create(account, { email: 'DUP@example.com', name: 'Other' })
    assert.equal(response.statusCode, 409)
    assert.deepEqual(response.json().error, {
      code: 'contact_exists',
      key: 'kontakt_email_doppelt',
      message: response.json().error.message,
      contact_id: first.id,
    })
  })

  test('a duplicate phone gives kontakt_nummer_doppelt, both give kontakt_doppelt', async () => {
    const account = await createTestAccount(harness)
    const first = await createContact(account, { email: 'p@example.com', phone: '+4915111111111' })
    const byPhone = await create(account, { phone: '+49 151 11111111' })
    assert.equal(byPhone.statusCode, 409)
    assert.equal(byPhone.json().error.key, 'kontakt_nummer_doppelt')
    assert.equal(byPhone.json().error.contact_id, first.id)
    const byBoth = await create(account, { email: 'p@example.com', phone: '+4915111111111' })
    assert.equal(byBoth.statusCode, 409)
    assert.equal(byBoth.json().error.key, 'kontakt_doppelt')
    assert.equal(byBoth.json().error.contact_id, first.id)
  })

  test('email of one contact and phone of another give 409 contact_conflict with contact_ids', async () => {
    const account = await createTestAccount(harness)
    const a = await createContact(account, { email: 'a@example.com' })
    const b = await createContact(account, { phone: '+4915122222222' })
    for (const url of ['/v1/contacts', '/v1/contacts?upsert=true']) {
      const response = await create(account, { email: 'a@example.com', phone: '+4915122222222' }, url)
      assert.equal(response.statusCode, 409)
      assert.equal(response.json().error.code, 'contact_conflict')
      assert.deepEqual(response.json().error.contact_ids, [a.id, b.id])
    }
  })

  test('upsert in the body updates the existing contact: 200 created false', async () => {
    const account = await createTestAccount(harness)
    const first = await createContact(account, { name: 'Old', email: 'up@example.com' })
    const response = await create(account, { name: 'New', email: 'up@example.com', upsert: true })
    assert.equal(response.statusCode, 200)
    const body = response.json()
    assert.equal(body.created, false)
    assert.equal(body.updated, true)
    assert.equal(body.contact.id, first.id)
    assert.equal(body.contact.name, 'New')
    const again = await create(account, { name: 'New', email: 'up@example.com', upsert: true })
    assert.equal(again.json().updated, false)
  })

  test('upsert as a query flag works the same, and a changed phone resets optin_chat to none', async () => {
    const account = await createTestAccount(harness)
    const first = await createContact(account, { email: 'q@example.com', phone: '+4915133333333' })
    await confirmBoth(account.accountId, first.id)
    const response = await create(
      account,
      { email: 'q@example.com', phone: '+4915144444444' },
      '/v1/contacts?upsert=true',
    )
    assert.equal(response.statusCode, 200)
    assert.equal(response.json().contact.phone, '+4915144444444')
    assert.equal(response.json().contact.optin_chat, 'none')
    assert.equal(response.json().contact.optin_email, 'confirmed')
    const history = await consentHistory(harness.database.orm, account.accountId, first.id)
    const reset = history.at(-1)!
    assert.deepEqual(
      [reset.channel, reset.fromState, reset.toState, reset.address],
      ['chat', 'confirmed', 'none', '+4915133333333'],
    )
  })

  test('ten concurrent creates of one email produce exactly one contact', async () => {
    const account = await createTestAccount(harness)
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => create(account, { name: `Racer ${i}`, email: 'race@example.com' })),
    )
    const statuses = responses.map((r) => r.statusCode).sort()
    assert.deepEqual(statuses, [201, ...Array(9).fill(409)])
    const winner = responses.find((r) => r.statusCode === 201)!.json().contact.id
    for (const r of responses.filter((r) => r.statusCode === 409)) {
      assert.equal(r.json().error.code, 'contact_exists')
      assert.equal(r.json().error.contact_id, winner)
    }
    const rows = await harness.database.query('SELECT id FROM contacts WHERE account_id = $1', [account.accountId])
    assert.equal(rows.length, 1)
  })

  test("403 limit_reached at the plan's contact limit; upsert of an existing contact still works", async () => {
    const account = await createTestAccount(harness, { plan: { contacts: 2 } })
    await createContact(account, { email: 'l1@example.com' })
    await createContact(account, { email: 'l2@example.com' })
    const response = await create(account, { email: 'l3@example.com' })
    assert.equal(response.statusCode, 403)
    assert.equal(response.json().error.code, 'limit_reached')
    const upsert = await create(account, { email: 'l2@example.com', name: 'Two', upsert: true })
    assert.equal(upsert.statusCode, 200)
    const rows = await harness.database.query('SELECT id FROM contacts WHERE account_id = $1', [account.accountId])
    assert.equal(rows.length, 2)
  })

  test('a deleted contact frees its place under the plan limit', async () => {
    const account = await createTestAccount(harness, { plan: { contacts: 1 } })
    const contact = await createContact(account, { email: 'f1@example.com' })
    await account.request({ method: 'DELETE', url: `/v1/contacts/${contact.id}` })
    assert.equal((await create(account, { email: 'f2@example.com' })).statusCode, 201)
  })

  test('the same Idempotency-Key replays the first response without creating again', async () => {
    const account = await createTestAccount(harness)
    const send = () =>
      account.request({
        method: 'POST',
        url: '/v1/contacts',
        headers: { 'idempotency-key': 'create-1' },
        payload: { email: 'idem@example.com' },
      })
    const first = await send()
    const second = await send()
    assert.equal(first.statusCode, 201)
    assert.equal(second.statusCode, 201)
    assert.equal(second.headers['idempotent-replayed'], 'true')
    assert.equal(second.json().contact.id, first.json().contact.id)
  })
})

describe('no request of the API raises an opt-in', () => {
  const raise = { optin_chat: 'confirmed', optin_email: 'confirmed' }
  const shapes: Array<[string, Record<string, unknown>]> = [
    ['flat fields', raise],
    ['pending', { optin_chat: 'pending', optin_email: 'pending' }],
    ['a nested contact', { contact: raise }],
    ['opt-in objects', { optin: { chat: 'confirmed', email: 'confirmed' }, consent: true, double_optin: true }],
    ['German names', { einwilligung_chat: 'confirmed', optin_whatsapp: true }],
  ]

  // strict input: a field that would raise an opt-in is not a field of these operations, so it is refused by name
  const refused = (response: { statusCode: number; json(): Json }, extra: Record<string, unknown>) => {
    assert.equal(response.statusCode, 400)
    assert.equal(response.json().error.code, 'bad_request')
    assert.deepEqual(response.json().error.unknown_fields, Object.keys(extra))
  }

  for (const [shape, extra] of shapes) {
    test(`POST with ${shape} is refused naming the fields; no contact is created`, async () => {
      const account = await createTestAccount(harness)
      refused(await create(account, { email: 'o@example.com', phone: '+4915155555555', ...extra }), extra)
      const rows = await harness.database.query('SELECT id FROM contacts WHERE account_id = $1', [account.accountId])
      assert.equal(rows.length, 0)
    })

    test(`upsert and PATCH with ${shape} are refused naming the fields; the opt-ins stay none`, async () => {
      const account = await createTestAccount(harness)
      const contact = await createContact(account, { email: 'o@example.com' })
      refused(await create(account, { email: 'o@example.com', name: 'U', upsert: true, ...extra }), extra)
      const patch = await account.request({
        method: 'PATCH',
        url: `/v1/contacts/${contact.id}`,
        payload: { name: 'P', ...extra },
      })
      refused(patch, extra)
      const after = await getContact(account, contact.id)
      assert.equal(after.name, contact.name)
      assert.equal(after.optin_chat, 'none')
      assert.equal(after.optin_email, 'none')
    })
  }

  test('tags named like consent and an import with opt-in columns raise nothing', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 't@example.com' })
    const tags = await account.request({
      method: 'POST',
      url: `/v1/contacts/${contact.id}/tags`,
      payload: { tags: ['optin_chat:confirmed', 'confirmed'] },
    })
    assert.equal(tags.statusCode, 200)
    const file = csvFile([
      'email,optin_chat,optin_email',
      't@example.com,confirmed,confirmed',
      'n@example.com,confirmed,confirmed',
    ])
    await importContacts(harness.database.orm, harness.clock, { accountId: account.accountId, file })
    const rows = await harness.database.query<{ optin_chat: string; optin_email: string }>(
      'SELECT optin_chat, optin_email FROM contacts WHERE account_id = $1',
      [account.accountId],
    )
    assert.equal(rows.length, 2)
    for (const row of rows) assert.deepEqual(row, { optin_chat: 'none', optin_email: 'none' })
  })
})

describe('PATCH /v1/contacts/{id}', () => {
  test('only given fields change', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { name: 'Carl', email: 'c@example.com', phone: '+4915166666666' })
    const response = await account.request({
      method: 'PATCH',
      url: `/v1/contacts/${contact.id}`,
      payload: { name: 'Carla' },
    })
    assert.equal(response.statusCode, 200)
    assert.equal(response.json().ok, true)
    assert.deepEqual(response.json().contact, { ...contact, name: 'Carla' })
  })

  test('email may be cleared with null while a phone remains; clearing both gives 400', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 'c@example.com', phone: '+4915166666666' })
    const cleared = await account.request({
      method: 'PATCH',
      url: `/v1/contacts/${contact.id}`,
      payload: { email: null },
    })
    assert.equal(cleared.statusCode, 200)
    assert.equal(cleared.json().contact.email, '')
    const none = await account.request({ method: 'PATCH', url: `/v1/contacts/${contact.id}`, payload: { phone: null } })
    assert.equal(none.statusCode, 400)
    assert.equal(none.json().error.key, 'email_or_phone_required')
    assert.equal((await getContact(account, contact.id)).phone, '+4915166666666')
  })

  test('a changed email resets optin_email to none and leaves optin_chat; consent is recorded', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 'c@example.com', phone: '+4915166666666' })
    await confirmBoth(account.accountId, contact.id)
    const response = await account.request({
      method: 'PATCH',
      url: `/v1/contacts/${contact.id}`,
      payload: { email: 'new@example.com' },
    })
    assert.equal(response.json().contact.optin_email, 'none')
    assert.equal(response.json().contact.optin_chat, 'confirmed')
    const history = await consentHistory(harness.database.orm, account.accountId, contact.id)
    assert.deepEqual(
      history.map((r) => [r.channel, r.fromState, r.toState, r.source]),
      [
        ['chat', 'none', 'confirmed', 'test'],
        ['email', 'none', 'confirmed', 'test'],
        ['email', 'confirmed', 'none', 'api'],
      ],
    )
  })

  test('a changed phone resets optin_chat; the same phone written differently changes nothing', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 'c@example.com', phone: '+4915166666666' })
    await confirmBoth(account.accountId, contact.id)
    const same = await account.request({
      method: 'PATCH',
      url: `/v1/contacts/${contact.id}`,
      payload: { phone: '+49 151 666-66666' },
    })
    assert.equal(same.json().contact.optin_chat, 'confirmed')
    const changed = await account.request({
      method: 'PATCH',
      url: `/v1/contacts/${contact.id}`,
      payload: { phone: '+4915177777777' },
    })
    assert.equal(changed.json().contact.optin_chat, 'none')
    assert.equal(changed.json().contact.optin_email, 'confirmed')
  })

  test('an email or phone of another contact gives 409 contact_exists', async () => {
    const account = await createTestAccount(harness)
    const a = await createContact(account, { email: 'a@example.com', phone: '+4915188888888' })
    const b = await createContact(account, { email: 'b@example.com' })
    const email = await account.request({
      method: 'PATCH',
      url: `/v1/contacts/${b.id}`,
      payload: { email: 'a@example.com' },
    })
    assert.equal(email.statusCode, 409)
    assert.equal(email.json().error.code, 'contact_exists')
    assert.equal(email.json().error.key, 'kontakt_email_doppelt')
    assert.equal(email.json().error.contact_id, a.id)
    const phone = await account.request({
      method: 'PATCH',
      url: `/v1/contacts/${b.id}`,
      payload: { phone: '+4915188888888' },
    })
    assert.equal(phone.json().error.key, 'kontakt_nummer_doppelt')
    assert.equal((await getContact(account, b.id)).email, 'b@example.com')
  })
})

describe('GET /v1/contacts', () => {
  async function seed(account: TestAccount) {
    const made: Json[] = []
    for (const [name, email, phone] of [
      ['Anna Schmidt', 'anna@example.com', '+49 151 23456789'],
      ['Bernd Meyer', 'bernd@shop.de', '+43 664 1234567'],
      ['Clara Vogel', 'clara@example.com', ''],
    ]) {
      made.push(await createContact(account, { name, email, ...(phone ? { phone } : {}) }))
      harness.clock.advance(1000)
    }
    return made
  }

  test('lists newest first with limit, offset, has_more and next_offset', async () => {
    const account = await createTestAccount(harness)
    const [a, b, c] = await seed(account)
    const first = (await account.request({ method: 'GET', url: '/v1/contacts?limit=2' })).json()
    assert.deepEqual(
      first.contacts.map((x: Json) => x.id),
      [c.id, b.id],
    )
    assert.deepEqual([first.limit, first.offset, first.has_more, first.next_offset], [2, 0, true, 2])
    assert.equal('q' in first, false)
    const second = (await account.request({ method: 'GET', url: '/v1/contacts?limit=2&offset=2' })).json()
    assert.deepEqual(
      second.contacts.map((x: Json) => x.id),
      [a.id],
    )
    assert.deepEqual([second.has_more, second.next_offset], [false, null])
  })

  test('q matches part of name, email or phone, case-insensitively, and is echoed', async () => {
    const account = await createTestAccount(harness)
    const [a, b, c] = await seed(account)
    const search = async (q: string) =>
      (await account.request({ method: 'GET', url: `/v1/contacts?q=${encodeURIComponent(q)}` })).json()
    assert.deepEqual(
      (await search('SCHMI')).contacts.map((x: Json) => x.id),
      [a.id],
    )
    assert.deepEqual(
      (await search('example.com')).contacts.map((x: Json) => x.id),
      [c.id, a.id],
    )
    assert.deepEqual(
      (await search('shop')).contacts.map((x: Json) => x.id),
      [b.id],
    )
    assert.equal((await search('shop')).q, 'shop')
    assert.equal((await search('100%')).contacts.length, 0)
  })

  test('a phone term matches whatever spaces and hyphens it has', async () => {
    const account = await createTestAccount(harness)
    const [a, b] = await seed(account)
    for (const q of ['2345 6789', '151-234', '+49 151 2345', '0151 23456789', '23456789']) {
      const body = (await account.request({ method: 'GET', url: `/v1/contacts?q=${encodeURIComponent(q)}` })).json()
      assert.deepEqual(
        body.contacts.map((x: Json) => x.id),
        [a.id],
        q,
      )
    }
    const austria = (
      await account.request({ method: 'GET', url: `/v1/contacts?q=${encodeURIComponent('664 12-34')}` })
    ).json()
    assert.deepEqual(
      austria.contacts.map((x: Json) => x.id),
      [b.id],
    )
  })

  test('an empty q means no filter', async () => {
    const account = await createTestAccount(harness)
    await seed(account)
    const body = (await account.request({ method: 'GET', url: '/v1/contacts?q=' })).json()
    assert.equal(body.contacts.length, 3)
  })

  test('created_after is strictly after', async () => {
    const account = await createTestAccount(harness)
    const [a, b, c] = await seed(account)
    const body = (
      await account.request({ method: 'GET', url: `/v1/contacts?created_after=${encodeURIComponent(a.created_at)}` })
    ).json()
    assert.deepEqual(
      body.contacts.map((x: Json) => x.id),
      [c.id, b.id],
    )
  })

  test('limit over 200, offset over 100000 and q over 100 characters give 400', async () => {
    const account = await createTestAccount(harness)
    for (const query of ['limit=201', 'limit=0', 'offset=100001', `q=${'x'.repeat(101)}`, 'created_after=yesterday']) {
      const response = await account.request({ method: 'GET', url: `/v1/contacts?${query}` })
      assert.equal(response.statusCode, 400, query)
      assert.equal(response.json().error.code, 'bad_request')
    }
  })
})

describe('DELETE /v1/contacts/{id}', () => {
  test('contacts:write is not enough: 403 forbidden with key apikey_scope_fehlt', async () => {
    const account = await createTestAccount(harness, { scopes: ['contacts:read', 'contacts:write'] })
    const contact = await createContact(account, { email: 'd@example.com' })
    const response = await account.request({ method: 'DELETE', url: `/v1/contacts/${contact.id}` })
    assert.equal(response.statusCode, 403)
    assert.equal(response.json().error.code, 'forbidden')
    assert.equal(response.json().error.key, 'apikey_scope_fehlt')
    assert.equal((await getContact(account, contact.id)).id, contact.id)
  })

  test('removes the contact and its tags, counts rows per table, anonymizes events and consent records', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 'd@example.com', phone: '+4915199999999' })
    await account.request({ method: 'POST', url: `/v1/contacts/${contact.id}/tags`, payload: { tags: ['a', 'b'] } })
    await confirmBoth(account.accountId, contact.id)
    // a later module's table, registered the way the messaging module will
    registerContactCleanup(
      async (_tx, accountId): Promise<Record<string, number>> =>
        accountId === account.accountId ? { send_jobs: 2 } : {},
    )
    const response = await account.request({ method: 'DELETE', url: `/v1/contacts/${contact.id}` })
    assert.equal(response.statusCode, 200)
    const body = response.json()
    assert.equal(body.ok, true)
    assert.deepEqual(body.removed, {
      send_jobs: 2,
      automation_runs: 0,
      followup_enrollments: 0,
      messages: 0,
      conversations: 0,
      link_clicks: 0,
      tracked_links: 0,
      ai_replies: 0,
      ai_tag_suggestions: 0,
      contact_tags: 2,
      contacts: 1,
    })
    assert.deepEqual(body.anonymized, { events: 1, consent_records: 2 })
    assert.equal(body.confirmation_sent, false)
    assert.equal(body.bestaetigung_gesendet, false)
    assert.equal((await account.request({ method: 'GET', url: `/v1/contacts/${contact.id}` })).statusCode, 404)
    const events = await harness.database.query<{ contact_id: string | null; data: Json }>(
      'SELECT contact_id, data FROM events WHERE account_id = $1',
      [account.accountId],
    )
    assert.deepEqual(events, [{ contact_id: null, data: { anonymized: true } }])
    const consent = await harness.database.query<Json>(
      'SELECT contact_id, address, channel, to_state FROM consent_records WHERE account_id = $1 ORDER BY channel',
      [account.accountId],
    )
    assert.deepEqual(consent, [
      { contact_id: null, address: null, channel: 'chat', to_state: 'confirmed' },
      { contact_id: null, address: null, channel: 'email', to_state: 'confirmed' },
    ])
  })
})

describe('tags', () => {
  const addTags = (account: TestAccount, id: string, payload: Record<string, unknown>) =>
    account.request({ method: 'POST', url: `/v1/contacts/${id}/tags`, payload })

  test('API tags get origin manuell, with German aliases hinzugefuegt, verworfen and herkunft', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 't@example.com' })
    const response = await addTags(account, contact.id, { tag: 'vip' })
    assert.equal(response.statusCode, 200)
    assert.deepEqual(response.json(), {
      ok: true,
      tags: [{ name: 'vip', origin: 'manuell', herkunft: 'manuell' }],
      added: ['vip'],
      rejected: [],
      hinzugefuegt: ['vip'],
      verworfen: [],
    })
    assert.deepEqual((await getContact(account, contact.id)).tags, ['vip'])
  })

  test('adding an existing tag changes nothing', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 't@example.com' })
    await addTags(account, contact.id, { tags: ['vip'] })
    const again = (await addTags(account, contact.id, { tag: 'vip', tags: ['vip'] })).json()
    assert.deepEqual([again.added, again.rejected], [[], []])
    assert.deepEqual(again.tags, [{ name: 'vip', origin: 'manuell', herkunft: 'manuell' }])
  })

  test('at most 30 tags per contact: the rest are rejected', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 't@example.com' })
    const names = Array.from({ length: 32 }, (_, i) => `tag-${String(i).padStart(2, '0')}`)
    const body = (await addTags(account, contact.id, { tags: names })).json()
    assert.equal(body.added.length, 30)
    assert.deepEqual(body.rejected, ['tag-30', 'tag-31'])
    assert.deepEqual(body.verworfen, ['tag-30', 'tag-31'])
    const more = (await addTags(account, contact.id, { tag: 'one-more' })).json()
    assert.deepEqual([more.added, more.rejected], [[], ['one-more']])
    assert.equal((await getContact(account, contact.id)).tags.length, 30)
  })

  test('a tag over 40 characters gives 400', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 't@example.com' })
    const response = await addTags(account, contact.id, { tag: 'x'.repeat(41) })
    assert.equal(response.statusCode, 400)
  })

  test('system tags give 400 on add and on remove', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 't@example.com' })
    for (const tag of ['herkunft:website', 'Kauf', 'marketing']) {
      const add = await addTags(account, contact.id, { tags: ['fine', tag] })
      assert.equal(add.statusCode, 400, tag)
      assert.equal(add.json().error.code, 'bad_request')
      assert.equal(add.json().error.key, 'system_tag')
      const remove = await account.request({
        method: 'DELETE',
        url: `/v1/contacts/${contact.id}/tags/${encodeURIComponent(tag)}`,
      })
      assert.equal(remove.statusCode, 400, tag)
      assert.equal(remove.json().error.key, 'system_tag')
    }
    assert.deepEqual((await getContact(account, contact.id)).tags, [])
  })

  test('a name under several origins shows once with the strongest; a system-origin name cannot be removed', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 't@example.com' })
    await addTags(account, contact.id, { tags: ['stammkunde', 'lead'] })
    await harness.database.query(
      `INSERT INTO contact_tags (account_id, contact_id, name, origin) VALUES ($1, $2, 'stammkunde', 'system'), ($1, $2, 'lead', 'ki')`,
      [account.accountId, contact.id],
    )
    const body = (await addTags(account, contact.id, { tag: 'new' })).json()
    assert.deepEqual(
      body.tags.map((t: Json) => [t.name, t.origin]),
      [
        ['lead', 'ki'],
        ['new', 'manuell'],
        ['stammkunde', 'system'],
      ],
    )
    assert.deepEqual((await getContact(account, contact.id)).tags, ['lead', 'new', 'stammkunde'])
    const remove = await account.request({ method: 'DELETE', url: `/v1/contacts/${contact.id}/tags/stammkunde` })
    assert.equal(remove.statusCode, 400)
    const counts = (await account.request({ method: 'GET', url: '/v1/contacts/tags' })).json()
    assert.deepEqual(
      counts.tags.find((t: Json) => t.name === 'stammkunde'),
      { name: 'stammkunde', origin: 'system', count: 1, herkunft: 'system', anzahl: 1 },
    )
  })

  test('DELETE removes a URL-encoded tag name', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 't@example.com' })
    await addTags(account, contact.id, { tags: ['Sommer 2025/Aktion', 'keep'] })
    const response = await account.request({
      method: 'DELETE',
      url: `/v1/contacts/${contact.id}/tags/${encodeURIComponent('Sommer 2025/Aktion')}`,
    })
    assert.equal(response.statusCode, 200)
    assert.equal(response.json().removed, true)
    assert.deepEqual((await getContact(account, contact.id)).tags, ['keep'])
  })

  test('GET /contacts/tags counts tags with aliases; under 1000 contacts capped is false', async () => {
    const account = await createTestAccount(harness)
    const a = await createContact(account, { email: 'a@example.com' })
    const b = await createContact(account, { email: 'b@example.com' })
    await addTags(account, a.id, { tags: ['vip', 'lead'] })
    await addTags(account, b.id, { tags: ['vip'] })
    const body = (await account.request({ method: 'GET', url: '/v1/contacts/tags' })).json()
    assert.deepEqual(body, {
      tags: [
        { name: 'vip', origin: 'manuell', count: 2, herkunft: 'manuell', anzahl: 2 },
        { name: 'lead', origin: 'manuell', count: 1, herkunft: 'manuell', anzahl: 1 },
      ],
      checked: 2,
      capped: false,
      geprueft: 2,
      gedeckelt: false,
    })
  })

  test('tag counting checks at most 1000 contacts, the newest, and says it was capped', async () => {
    const account = await createTestAccount(harness)
    const lines = ['name,email,tags']
    for (let i = 0; i < 1001; i++) lines.push(`P${i},p${i}@example.com,${i === 0 ? 'oldest' : 'bulk'}`)
    const report = await importContacts(harness.database.orm, harness.clock, {
      accountId: account.accountId,
      file: csvFile(lines),
    })
    assert.equal(report.created, 1001)
    // make the first line the oldest contact
    await harness.database.query(
      `UPDATE contacts SET created_at = created_at - interval '1 day' WHERE account_id = $1 AND email = 'p0@example.com'`,
      [account.accountId],
    )
    const body = (await account.request({ method: 'GET', url: '/v1/contacts/tags' })).json()
    assert.equal(body.checked, 1000)
    assert.equal(body.capped, true)
    assert.equal(body.gedeckelt, true)
    assert.deepEqual(body.tags, [{ name: 'bulk', origin: 'manuell', count: 1000, herkunft: 'manuell', anzahl: 1000 }])
  })
})

describe('account isolation', () => {
  test("another account's contact id gives 404 on every contact route", async () => {
    const owner = await createTestAccount(harness)
    const other = await createTestAccount(harness)
    const contact = await createContact(owner, { email: 'mine@example.com' })
    await owner.request({ method: 'POST', url: `/v1/contacts/${contact.id}/tags`, payload: { tag: 'vip' } })
    const routes: Array<[string, string, Record<string, unknown>?]> = [
      ['GET', `/v1/contacts/${contact.id}`],
      ['PATCH', `/v1/contacts/${contact.id}`, { name: 'Stolen' }],
      ['DELETE', `/v1/contacts/${contact.id}`],
      ['POST', `/v1/contacts/${contact.id}/tags`, { tag: 'x' }],
      ['DELETE', `/v1/contacts/${contact.id}/tags/vip`],
    ]
    for (const [method, url, payload] of routes) {
      const response = await other.request({ method: method as 'GET', url, ...(payload ? { payload } : {}) })
      assert.equal(response.statusCode, 404, `${method} ${url}`)
      assert.equal(response.json().error.code, 'not_found')
    }
    const list = (await other.request({ method: 'GET', url: '/v1/contacts?q=mine' })).json()
    assert.deepEqual(list.contacts, [])
    assert.deepEqual((await other.request({ method: 'GET', url: '/v1/contacts/tags' })).json().tags, [])
    const mine = await getContact(owner, contact.id)
    assert.deepEqual([mine.name, mine.tags], ['', ['vip']])
    // and an unknown id of the right shape is 404 too
    const unknown = await other.request({ method: 'GET', url: `/v1/contacts/${randomUUID()}` })
    assert.equal(unknown.statusCode, 404)
  })

  test('contacts asked for at once, of two accounts, each get their own; a crossed or unknown id gets nothing', async () => {
    const a = await createTestAccount(harness)
    const b = await createTestAccount(harness)
    const ofA = await createContact(a, { email: 'batch-a@example.com' })
    const ofB = await createContact(b, { email: 'batch-b@example.com' })
    // the requests of one turn of the event loop share one statement (contacts.repository's contactJson)
    const responses = await Promise.all(
      [
        [a, ofA.id],
        [b, ofB.id],
        [a, ofB.id],
        [b, ofA.id],
        [a, randomUUID()],
        [a, ofA.id],
      ].map(([caller, id]) => (caller as TestAccount).request({ method: 'GET', url: `/v1/contacts/${id}` })),
    )
    assert.deepEqual(
      responses.map((response) => response.statusCode),
      [200, 200, 404, 404, 404, 200],
    )
    assert.equal(responses[0].json().contact.email, 'batch-a@example.com')
    assert.equal(responses[1].json().contact.email, 'batch-b@example.com')
    assert.deepEqual(responses[5].json(), responses[0].json())
  })

  test('the same email may exist once in each account', async () => {
    const a = await createTestAccount(harness)
    const b = await createTestAccount(harness)
    await createContact(a, { email: 'shared@example.com' })
    assert.equal((await create(b, { email: 'shared@example.com' })).statusCode, 201)
  })
})

describe('import contacts', () => {
  test('creates, updates and rejects lines with a reason each, never raising an opt-in', async () => {
    const account = await createTestAccount(harness)
    const existing = await createContact(account, { name: 'Old', email: 'old@example.com', phone: '+4915100000001' })
    await confirmBoth(account.accountId, existing.id)
    const file = csvFile([
      'Name,E-Mail,Telefon,Tags',
      'New One,new1@example.com,+49 151 00000002,"a, b"',
      'Old Renamed,old@example.com,+4915100000009,',
      'Broken,not-an-email,,',
      'No Address,,,',
      'Bad Phone,,0151 123,',
      'Twice,new1@example.com,,c',
    ])
    const report = await importContacts(harness.database.orm, harness.clock, { accountId: account.accountId, file })
    assert.deepEqual([report.rows, report.created, report.updated, report.rejected], [6, 1, 2, 3])
    assert.deepEqual(
      report.rejected_lines.map((r) => r.line),
      [4, 5, 6],
    )
    assert.match(report.rejected_lines[0].reason, /email/)
    assert.match(report.rejected_lines[1].reason, /no email and no phone/)
    assert.match(report.rejected_lines[2].reason, /phone/)
    const old = await getContact(account, existing.id)
    assert.deepEqual(
      [old.name, old.phone, old.optin_chat, old.optin_email],
      ['Old Renamed', '+4915100000009', 'none', 'confirmed'],
    )
    const list = (await account.request({ method: 'GET', url: '/v1/contacts?q=new1' })).json()
    assert.deepEqual(
      list.contacts.map((c: Json) => [c.name, c.source, c.tags, c.optin_chat, c.optin_email]),
      [['Twice', 'import', ['a', 'b', 'c'], 'none', 'none']],
    )
    const events = await harness.database.query('SELECT id FROM events WHERE account_id = $1', [account.accountId])
    assert.equal(events.length, 2)
  })

  test('lines beyond the plan limit are rejected with the reason', async () => {
    const account = await createTestAccount(harness, { plan: { contacts: 2 } })
    const file = csvFile(['email', 'a@example.com', 'b@example.com', 'c@example.com'])
    const report = await importContacts(harness.database.orm, harness.clock, { accountId: account.accountId, file })
    assert.equal(report.created, 2)
    assert.deepEqual(report.rejected_lines, [{ line: 4, reason: "the plan's limit of 2 contacts is reached" }])
    assert.equal((await create(account, { email: 'd@example.com' })).json().error.code, 'limit_reached')
  })
})

describe('GET /contacts without a search: the page written as JSON by the database', () => {
  test('shows exactly what the contact view shows, page by page, with has_more, next_offset and created_after', async () => {
    const account = await createTestAccount(harness)
    const names = ['Anna "Quote" Back\\slash', 'Zeile\nzwei\tTab\u0001', 'Ümlaut Öl', 'Emoji 😀 Name', '']
    const ids: string[] = []
    for (const [i, name] of names.entries()) {
      const response = await account.request({
        method: 'POST',
        url: '/v1/contacts',
        payload:
          i % 2 ? { name, phone: `+4915112345${String(i).padStart(3, '0')}` } : { name, email: `p${i}@x.example` },
      })
      assert.equal(response.statusCode, 201, response.body)
      ids.push(response.json().contact.id)
    }
    // a creation time with microseconds (shown to the millisecond, as the rows are), and tags under several origins,
    // of mixed case, with umlauts and outside the basic plane (code point order differs from UTF-16's there)
    await harness.database.query(
      `UPDATE contacts SET created_at = '2026-03-01 10:00:00.123987+00' WHERE account_id = $1 AND id = $2`,
      [account.accountId, ids[2]],
    )
    await harness.database.query(
      `INSERT INTO contact_tags (account_id, contact_id, name, origin) VALUES
        ($1, $2, 'vip', 'manuell'), ($1, $2, 'vip', 'system'), ($1, $2, 'Zebra', 'ki'), ($1, $2, 'apfel', 'manuell'),
        ($1, $2, 'Äpfel', 'manuell'), ($1, $2, '😀 froh', 'manuell'), ($1, $2, 'ﬀ ligatur', 'manuell'),
        ($1, $3, 'vip', 'ki')`,
      [account.accountId, ids[0], ids[3]],
    )
    const service = contactsServiceFor(harness)
    const tenant = { accountId: account.accountId, account: { plan: 'default', language: 'de' } }
    const queries: Array<{ limit: number; offset: number; created_after?: string; q?: string }> = [
      { limit: 50, offset: 0 },
      { limit: 2, offset: 0 },
      { limit: 2, offset: 2 },
      { limit: 2, offset: 4 },
      { limit: 3, offset: 10 },
      { limit: 50, offset: 0, created_after: '2026-03-01T10:00:00.123Z' },
      { limit: 50, offset: 0, q: '  ' },
    ]
    for (const query of queries) {
      const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))
      const response = await account.request({ method: 'GET', url: `/v1/contacts?${search}` })
      assert.equal(response.statusCode, 200, response.body)
      assert.match(String(response.headers['content-type']), /^application\/json/)
      const { items, ...rest } = await service.list(tenant, query)
      const expected = JSON.parse(JSON.stringify(toWire({ contacts: items, ...rest })))
      assert.deepEqual(response.json(), expected, JSON.stringify(query))
    }
    const all = (await account.request({ method: 'GET', url: '/v1/contacts?limit=50' })).json()
    assert.equal(all.contacts.length, 5)
    const tagged = all.contacts.find((c: Json) => c.id === ids[0])
    assert.deepEqual(tagged.tags, ['Zebra', 'apfel', 'vip', 'Äpfel', 'ﬀ ligatur', '😀 froh'])
    const dated = all.contacts.find((c: Json) => c.id === ids[2])
    assert.equal(dated.created_at, '2026-03-01T10:00:00.123Z')
    assert.equal(all.contacts.find((c: Json) => c.id === ids[1]).name, 'Zeile\nzwei\tTab\u0001')
    // each contact read alone (also written by the database) shows what the contact view shows, and the list
    for (const id of ids) {
      const response = await account.request({ method: 'GET', url: `/v1/contacts/${id}` })
      assert.equal(response.statusCode, 200, response.body)
      assert.match(String(response.headers['content-type']), /^application\/json/)
      const expected = JSON.parse(JSON.stringify(toWire({ contact: await service.get(tenant, id) })))
      assert.deepEqual(response.json(), expected)
      assert.deepEqual(
        response.json().contact,
        all.contacts.find((c: Json) => c.id === id),
      )
    }
  })
})
