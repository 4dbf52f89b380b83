import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import {
  confirmBoth,
  contactsHarnessPerFile,
  create,
  createContact,
  csvFile,
  getContact,
  type Json,
} from '../../../test/helpers/contacts.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { consentHistory, importContacts } from './index.ts'

/** PATCH /v1/contacts/{id} with `payload`. */
const patchContact = (account: TestAccount, id: string, payload: Record<string, unknown>) =>
  account.request({ method: 'PATCH', url: `/v1/contacts/${id}`, payload })

/** The account whose deletions the probe module's cleanup counts send jobs for (a later module's table). */
let cleanupAccount: string | null = null

let harness: Harness
contactsHarnessPerFile(
  (created) => {
    harness = created
  },
  {
    // a later module's table, declared the way the messaging module does
    extraModules: [
      {
        name: 'probe',
        reactions: {
          contactCleanup: async (_tx, accountId): Promise<Record<string, number>> =>
            accountId === cleanupAccount ? { send_jobs: 2 } : {},
        },
      },
    ],
  },
)

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
      const patch = await patchContact(account, contact.id, { name: 'P', ...extra })
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
    const response = await patchContact(account, contact.id, { name: 'Carla' })
    assert.equal(response.statusCode, 200)
    assert.equal(response.json().ok, true)
    assert.deepEqual(response.json().contact, { ...contact, name: 'Carla' })
  })

  test('email may be cleared with null while a phone remains; clearing both gives 400', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 'c@example.com', phone: '+4915166666666' })
    const cleared = await patchContact(account, contact.id, { email: null })
    assert.equal(cleared.statusCode, 200)
    assert.equal(cleared.json().contact.email, '')
    const none = await patchContact(account, contact.id, { phone: null })
    assert.equal(none.statusCode, 400)
    assert.equal(none.json().error.key, 'email_or_phone_required')
    assert.equal((await getContact(account, contact.id)).phone, '+4915166666666')
  })

  test('a changed email resets optin_email to none and leaves optin_chat; consent is recorded', async () => {
    const account = await createTestAccount(harness)
    const contact = await createContact(account, { email: 'c@example.com', phone: '+4915166666666' })
    await confirmBoth(account.accountId, contact.id)
    const response = await patchContact(account, contact.id, { email: 'new@example.com' })
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
    const same = await patchContact(account, contact.id, { phone: '+49 151 666-66666' })
    assert.equal(same.json().contact.optin_chat, 'confirmed')
    const changed = await patchContact(account, contact.id, { phone: '+4915177777777' })
    assert.equal(changed.json().contact.optin_chat, 'none')
    assert.equal(changed.json().contact.optin_email, 'confirmed')
  })

  test('an email or phone of another contact gives 409 contact_exists', async () => {
    const account = await createTestAccount(harness)
    const a = await createContact(account, { email: 'a@example.com', phone: '+4915188888888' })
    const b = await createContact(account, { email: 'b@example.com' })
    const email = await patchContact(account, b.id, { email: 'a@example.com' })
    assert.equal(email.statusCode, 409)
    assert.equal(email.json().error.code, 'contact_exists')
    assert.equal(email.json().error.key, 'kontakt_email_doppelt')
    assert.equal(email.json().error.contact_id, a.id)
    const phone = await patchContact(account, b.id, { phone: '+4915188888888' })
    assert.equal(phone.json().error.key, 'kontakt_nummer_doppelt')
    assert.equal((await getContact(account, b.id)).email, 'b@example.com')
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
    cleanupAccount = account.accountId
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

describe('time-ordered ids', () => {
  const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

  test('a contact created by the API has a UUID of version 7, after the one created before it', async () => {
    const account = await createTestAccount(harness)
    const first = await createContact(account, { email: 'first@example.com' })
    const second = await createContact(account, { email: 'second@example.com' })
    assert.match(first.id, UUID_V7)
    assert.match(second.id, UUID_V7)
    assert.ok(first.id < second.id)
  })

  test('an import gives its contacts and their contact.created events ids in the order of the lines', async () => {
    const account = await createTestAccount(harness)
    const emails = ['m@example.com', 'b@example.com', 'z@example.com', 'a@example.com']
    const file = csvFile(['email', ...emails])
    await importContacts(harness.database.orm, harness.clock, { accountId: account.accountId, file })
    const rows = await harness.database.query<{ email: string; id: string; event_id: string }>(
      `SELECT c.email, c.id, e.id AS event_id FROM contacts c
       JOIN events e ON e.account_id = c.account_id AND e.contact_id = c.id AND e.name = 'contact.created'
       WHERE c.account_id = $1 ORDER BY c.id`,
      [account.accountId],
    )
    assert.deepEqual(
      rows.map((r) => r.email),
      emails,
    )
    for (const row of rows) {
      assert.match(row.id, UUID_V7)
      assert.match(row.event_id, UUID_V7)
    }
    const eventIds = rows.map((r) => r.event_id)
    assert.deepEqual([...eventIds].sort(), eventIds)
  })
})
