import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import { contactsHarnessPerFile, create, createContact, getContact, type Json } from '../../../test/helpers/contacts.ts'
import { createKey, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { convertValue } from './contacts.fields.rules.ts'
import { convertedSql } from './contacts.fields.service.ts'
import type { FieldDefinition } from './contacts.fields-read.ts'
import { rowsOf } from './contacts.repository.ts'

// Custom fields (issue 33): the definitions under /v1/contact-fields and the values on the contact.

let harness: Harness
contactsHarnessPerFile((created) => {
  harness = created
})

const defineField = (account: TestAccount, payload: Json) =>
  account.request({ method: 'POST', url: '/v1/contact-fields', payload })

async function define(account: TestAccount, payload: Json): Promise<Json> {
  const response = await defineField(account, payload)
  assert.equal(response.statusCode, 201, response.body)
  return response.json().contact_field
}

const patchField = (account: TestAccount, key: string, payload: Json) =>
  account.request({ method: 'PATCH', url: `/v1/contact-fields/${key}`, payload })

const patchContact = (account: TestAccount, id: string, payload: Json) =>
  account.request({ method: 'PATCH', url: `/v1/contacts/${id}`, payload })

let counter = 0
const email = () => `fields-${process.pid}-${++counter}@example.org`

/** An account with the fields of every type. */
async function accountWithFields(): Promise<TestAccount> {
  const account = await createTestAccount(harness)
  await define(account, { key: 'customer_no', label: 'Kundennummer', type: 'number' })
  await define(account, { key: 'birthday', label: 'Geburtstag', type: 'date' })
  await define(account, { key: 'level', label: 'Stufe', type: 'choice', options: ['gold', 'silver'] })
  await define(account, { key: 'vip', label: 'VIP', type: 'boolean' })
  await define(account, { key: 'note', label: 'Notiz', type: 'text', max_length: 20 })
  return account
}

function expectError(response: { statusCode: number; json(): Json }, status: number, code: string, key: string) {
  assert.equal(response.statusCode, status, JSON.stringify(response.json()))
  assert.equal(response.json().error.code, code)
  assert.equal(response.json().error.key, key)
  return response.json().error as Json
}

describe('definitions: /v1/contact-fields', () => {
  test('create answers 201 with the definition; the list shows all in order in the list envelope; one by key', async () => {
    const account = await createTestAccount(harness)
    const created = await define(account, {
      key: 'level',
      label: 'Kundenstufe',
      type: 'choice',
      options: ['gold', 'silver'],
      default: 'silver',
    })
    assert.deepEqual(
      { ...created, created_at: undefined, updated_at: undefined },
      {
        key: 'level',
        label: 'Kundenstufe',
        type: 'choice',
        options: ['gold', 'silver'],
        default: 'silver',
        max_length: null,
        position: 1,
        created_at: undefined,
        updated_at: undefined,
      },
    )
    const note = await define(account, { key: 'note', label: 'Notiz', type: 'text' })
    assert.equal(note.max_length, 255)
    assert.equal(note.position, 2)
    const list = await account.request({ method: 'GET', url: '/v1/contact-fields' })
    assert.equal(list.statusCode, 200)
    assert.deepEqual(
      list.json().contact_fields.map((f: Json) => f.key),
      ['level', 'note'],
    )
    assert.deepEqual(
      { ...(list.json() as Json), contact_fields: undefined },
      { contact_fields: undefined, limit: 50, offset: 0, has_more: false, next_offset: null },
    )
    const one = await account.request({ method: 'GET', url: '/v1/contact-fields/level' })
    assert.deepEqual(one.json().contact_field, created)
  })

  test('every refusal: key malformed, reserved or digits, label, options, default, max_length, unknown field, existing key', async () => {
    const account = await createTestAccount(harness)
    await define(account, { key: 'customer_no', label: 'Kundennummer', type: 'number' })
    const refusals: Array<[Json, number, string, RegExp]> = [
      [{ key: 'name', label: 'Name', type: 'text' }, 400, 'field_key_invalid', /built-in variable/],
      [{ key: 'first_name', label: 'Vorname', type: 'text' }, 400, 'field_key_invalid', /built-in variable/],
      [{ key: 'greeting', label: 'Anrede', type: 'text' }, 400, 'field_key_invalid', /built-in variable/],
      [{ key: 'optin_chat', label: 'x', type: 'text' }, 400, 'field_key_invalid', /attribute of the contact/],
      [{ key: '123', label: 'x', type: 'text' }, 400, 'bad_request', /key/],
      [{ key: 'Kunden-Nr', label: 'x', type: 'text' }, 400, 'bad_request', /key/],
      [{ key: 'note', label: '', type: 'text' }, 400, 'bad_request', /label/],
      [{ key: 'note', label: 'x'.repeat(81), type: 'text' }, 400, 'bad_request', /label/],
      [{ key: 'note', label: 'Notiz', type: 'colour' }, 400, 'bad_request', /type/],
      [{ key: 'level', label: 'Stufe', type: 'choice' }, 400, 'field_options_invalid', /needs options/],
      [{ key: 'level', label: 'Stufe', type: 'choice', options: [] }, 400, 'bad_request', /options/],
      [{ key: 'level', label: 'Stufe', type: 'number', options: ['a'] }, 400, 'field_options_invalid', /only for/],
      [{ key: 'n', label: 'N', type: 'number', default: 'viele' }, 400, 'field_default_invalid', /n must be a number/],
      [{ key: 'n', label: 'N', type: 'number', max_length: 5 }, 400, 'field_max_length_invalid', /only for/],
      [{ key: 'n', label: 'N', type: 'text', max_length: 2000 }, 400, 'bad_request', /max_length/],
      [{ key: 'customer_no', label: 'Nummer', type: 'text' }, 409, 'field_exists', /customer_no/],
    ]
    for (const [payload, status, key, message] of refusals) {
      const response = await defineField(account, payload)
      assert.equal(response.statusCode, status, `${JSON.stringify(payload)}: ${response.body}`)
      assert.equal(response.json().error.key, key, JSON.stringify(payload))
      assert.match(response.json().error.message, message, JSON.stringify(payload))
    }
    const unknown = await defineField(account, { key: 'note', label: 'Notiz', type: 'text', required: true })
    assert.equal(unknown.statusCode, 400)
    assert.deepEqual(unknown.json().error.unknown_fields, ['required'])
    const keyInPatch = await patchField(account, 'customer_no', { key: 'kunde' })
    assert.deepEqual(keyInPatch.json().error.unknown_fields, ['key'])
    const list = await account.request({ method: 'GET', url: '/v1/contact-fields' })
    assert.deepEqual(
      list.json().contact_fields.map((f: Json) => f.key),
      ['customer_no'],
    )
  })

  test('at most 50 fields: the 51st is 400 field_limit', async () => {
    const account = await createTestAccount(harness)
    for (let i = 1; i <= 50; i++) await define(account, { key: `f${i}`, label: `Feld ${i}`, type: 'text' })
    const refused = await defineField(account, { key: 'f51', label: 'Feld 51', type: 'text' })
    expectError(refused, 400, 'bad_request', 'field_limit')
    const list = await account.request({ method: 'GET', url: '/v1/contact-fields' })
    assert.equal(list.json().contact_fields.length, 50)
  })

  test('scopes: reading with contacts:read, defining with settings:write', async () => {
    const account = await createTestAccount(harness)
    const reader = await createKey(harness, account.accountId, ['contacts:read', 'contacts:write'])
    const headers = { authorization: `Bearer ${reader}` }
    const listed = await harness.app.inject({ method: 'GET', url: '/v1/contact-fields', headers })
    assert.equal(listed.statusCode, 200)
    const refused = await harness.app.inject({
      method: 'POST',
      url: '/v1/contact-fields',
      headers,
      payload: { key: 'note', label: 'Notiz', type: 'text' },
    })
    expectError(refused, 403, 'forbidden', 'apikey_scope_fehlt')
  })

  test("another account's key is 404 on every route and its values stay", async () => {
    const owner = await accountWithFields()
    const contact = await createContact(owner, { email: email(), fields: { customer_no: 1 } })
    const other = await createTestAccount(harness)
    for (const request of [
      { method: 'GET' as const, url: '/v1/contact-fields/customer_no' },
      { method: 'PATCH' as const, url: '/v1/contact-fields/customer_no', payload: { type: 'text' } },
      { method: 'DELETE' as const, url: '/v1/contact-fields/customer_no' },
    ]) {
      expectError(await other.request(request), 404, 'not_found', 'not_found')
    }
    assert.deepEqual((await getContact(owner, contact.id)).fields, { customer_no: 1 })
    const values = await other.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { email: email(), fields: { customer_no: 1 } },
    })
    expectError(values, 400, 'bad_request', 'field_unknown')
  })

  test('a type change converts every value that fits: text to number, date, boolean; number to text; text to choice', async () => {
    const account = await createTestAccount(harness)
    await define(account, { key: 'code', label: 'Code', type: 'text' })
    await define(account, { key: 'day', label: 'Tag', type: 'text' })
    await define(account, { key: 'flag', label: 'Flag', type: 'text' })
    const a = await createContact(account, { email: email(), fields: { code: '42', day: '2026-01-31', flag: 'ja' } })
    const b = await createContact(account, { email: email(), fields: { code: '4,5', day: '2024-02-29', flag: 'nein' } })
    const c = await createContact(account, { email: email(), fields: { flag: 'TRUE' } })
    for (const [key, type] of [
      ['code', 'number'],
      ['day', 'date'],
      ['flag', 'boolean'],
    ]) {
      const response = await patchField(account, key, { type })
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(response.json().contact_field.type, type)
    }
    assert.deepEqual((await getContact(account, a.id)).fields, { code: 42, day: '2026-01-31', flag: true })
    assert.deepEqual((await getContact(account, b.id)).fields, { code: 4.5, day: '2024-02-29', flag: false })
    assert.deepEqual((await getContact(account, c.id)).fields, { flag: true })
    assert.equal((await patchField(account, 'code', { type: 'text' })).statusCode, 200)
    assert.deepEqual((await getContact(account, b.id)).fields.code, '4.5')
    const choice = await patchField(account, 'code', { type: 'choice', options: ['42', '4.5'] })
    assert.equal(choice.statusCode, 200, choice.body)
    assert.deepEqual((await getContact(account, a.id)).fields.code, '42')
  })

  test('a type change that some values do not fit is refused with their count; nothing changes', async () => {
    const account = await createTestAccount(harness)
    await define(account, { key: 'code', label: 'Code', type: 'text' })
    const good = await createContact(account, { email: email(), fields: { code: '42' } })
    await createContact(account, { email: email(), fields: { code: 'abc' } })
    await createContact(account, { email: email(), fields: { code: '12a' } })
    const refused = await patchField(account, 'code', { type: 'number', label: 'Nummer' })
    const error = expectError(refused, 409, 'field_values_incompatible', 'field_values_incompatible')
    assert.equal(error.count, 2)
    assert.equal(error.field, 'code')
    assert.match(error.message, /2 contacts have a value of code not convertible to number/)
    assert.deepEqual((await getContact(account, good.id)).fields, { code: '42' })
    const field = (await account.request({ method: 'GET', url: '/v1/contact-fields/code' })).json().contact_field
    assert.deepEqual([field.type, field.label], ['text', 'Code'])
    const date = await patchField(account, 'code', { type: 'date' })
    assert.equal(expectError(date, 409, 'field_values_incompatible', 'field_values_incompatible').count, 3)
  })

  test('removing an option that values use, or a max_length below a value, is refused with the count', async () => {
    const account = await accountWithFields()
    await createContact(account, { email: email(), fields: { level: 'gold', note: 'x'.repeat(20) } })
    await createContact(account, { email: email(), fields: { level: 'gold' } })
    await createContact(account, { email: email(), fields: { level: 'silver' } })
    const removed = await patchField(account, 'level', { options: ['silver', 'bronze'] })
    assert.equal(expectError(removed, 409, 'field_values_incompatible', 'field_values_incompatible').count, 2)
    const unused = await patchField(account, 'level', { options: ['gold', 'silver', 'bronze'] })
    assert.equal(unused.statusCode, 200)
    assert.equal((await patchField(account, 'level', { options: ['gold', 'silver'] })).statusCode, 200)
    const shorter = await patchField(account, 'note', { max_length: 10 })
    assert.equal(expectError(shorter, 409, 'field_values_incompatible', 'field_values_incompatible').count, 1)
    const longer = await patchField(account, 'note', { max_length: 100, label: 'Bemerkung', default: 'keine' })
    assert.equal(longer.statusCode, 200)
    assert.deepEqual([longer.json().contact_field.max_length, longer.json().contact_field.default], [100, 'keine'])
  })

  test('delete removes the definition and its value from every contact, 204; the other values stay', async () => {
    const account = await accountWithFields()
    const a = await createContact(account, { email: email(), fields: { customer_no: 1, vip: true } })
    const b = await createContact(account, { email: email(), fields: { customer_no: 2 } })
    const deleted = await account.request({ method: 'DELETE', url: '/v1/contact-fields/customer_no' })
    assert.equal(deleted.statusCode, 204)
    assert.equal(deleted.body, '')
    assert.deepEqual((await getContact(account, a.id)).fields, { vip: true })
    assert.deepEqual((await getContact(account, b.id)).fields, {})
    expectError(
      await account.request({ method: 'GET', url: '/v1/contact-fields/customer_no' }),
      404,
      'not_found',
      'not_found',
    )
    expectError(await patchContact(account, a.id, { fields: { customer_no: 3 } }), 400, 'bad_request', 'field_unknown')
  })
})

test('the SQL conversion of a type change is the rule of convertValue, value by value', async () => {
  const values = [
    '42',
    ' 7 ',
    '4,5',
    '-1.5e2',
    '1e15',
    '12a',
    '',
    '2026-01-31',
    '2024-02-29',
    '2026-02-29',
    '0000-01-01',
    '31.01.2026',
    'ja',
    'NEIN',
    'Yes',
    '0',
    'maybe',
    'gold',
    'x'.repeat(300),
    42,
    4.5,
    -3,
    0,
    true,
    false,
  ]
  const targets: Array<Pick<FieldDefinition, 'type' | 'options' | 'maxLength'>> = [
    { type: 'text', options: null, maxLength: 255 },
    { type: 'number', options: null, maxLength: null },
    { type: 'date', options: null, maxLength: null },
    { type: 'boolean', options: null, maxLength: null },
    { type: 'choice', options: ['gold', '42', 'true'], maxLength: null },
  ]
  for (const to of targets) {
    for (const value of values) {
      const result = await harness.database.orm.execute(
        sql`SELECT (${convertedSql(sql`${JSON.stringify(value)}::jsonb`, to)})::text AS converted`,
      )
      const converted = rowsOf<{ converted: string | null }>(result)[0].converted
      const expected = convertValue(value, to)
      assert.deepEqual(
        converted === null ? null : JSON.parse(converted),
        expected,
        `${JSON.stringify(value)} to ${to.type}`,
      )
    }
  }
})

describe('values on the contact', () => {
  test('create sets them; every read shows them (one, the list, a search, the event)', async () => {
    const account = await accountWithFields()
    const fields = { customer_no: 4711, birthday: '1990-05-17', level: 'gold', vip: false, note: 'Grüße; Zeile\n2' }
    const contact = await createContact(account, { name: 'Jörg', email: email(), fields })
    assert.deepEqual(contact.fields, fields)
    assert.deepEqual((await getContact(account, contact.id)).fields, fields)
    const list = await account.request({ method: 'GET', url: '/v1/contacts' })
    assert.deepEqual(list.json().contacts[0].fields, fields)
    const search = await account.request({ method: 'GET', url: '/v1/contacts?q=J%C3%B6rg' })
    assert.deepEqual(search.json().contacts[0].fields, fields)
    const bare = await createContact(account, { email: email() })
    assert.deepEqual(bare.fields, {})
    const [event] = await harness.database.query<{ data: Json }>(
      "SELECT data FROM events WHERE account_id = $1 AND contact_id = $2 AND name = 'contact.created'",
      [account.accountId, contact.id],
    )
    assert.deepEqual(event.data.fields, fields)
  })

  test('update merges: given keys set, null clears, keys not given stay', async () => {
    const account = await accountWithFields()
    const contact = await createContact(account, { email: email(), fields: { customer_no: 1, level: 'gold' } })
    const changed = await patchContact(account, contact.id, { fields: { customer_no: 2, vip: true, level: null } })
    assert.equal(changed.statusCode, 200, changed.body)
    assert.deepEqual(changed.json().contact.fields, { customer_no: 2, vip: true })
    const other = await patchContact(account, contact.id, { name: 'Neu' })
    assert.deepEqual(other.json().contact.fields, { customer_no: 2, vip: true })
    assert.deepEqual((await getContact(account, contact.id)).fields, { customer_no: 2, vip: true })
  })

  test('upsert merges into the existing contact; updated says whether anything changed', async () => {
    const account = await accountWithFields()
    const address = email()
    await createContact(account, { email: address, fields: { customer_no: 1, note: 'alt' } })
    const upsert = (fields: Json) => create(account, { email: address, upsert: true, fields })
    const first = await upsert({ level: 'silver', note: null })
    assert.equal(first.statusCode, 200, first.body)
    assert.deepEqual([first.json().updated, first.json().contact.fields], [true, { customer_no: 1, level: 'silver' }])
    const again = await upsert({ level: 'silver' })
    assert.equal(again.json().updated, false)
  })

  test('an unknown key or a wrong value is 400 naming the field and the rule; nothing is written', async () => {
    const account = await accountWithFields()
    const contact = await createContact(account, { email: email(), name: 'Alt', fields: { customer_no: 1 } })
    const unknown = await patchContact(account, contact.id, { name: 'Neu', fields: { shoe_size: 42, customer_no: 2 } })
    const error = expectError(unknown, 400, 'bad_request', 'field_unknown')
    assert.match(error.message, /shoe_size/)
    assert.deepEqual(error.fields, ['shoe_size'])
    const cases: Array<[Json, RegExp]> = [
      [{ customer_no: '42' }, /customer_no must be a number/],
      [{ birthday: '17.05.1990' }, /birthday must be a date YYYY-MM-DD/],
      [{ birthday: '2026-02-30' }, /birthday must be a date YYYY-MM-DD/],
      [{ level: 'bronze' }, /level must be one of gold, silver/],
      [{ vip: 'ja' }, /vip must be true or false/],
      [{ note: 'x'.repeat(21) }, /note: text longer than 20/],
    ]
    for (const [fields, message] of cases) {
      const response = await patchContact(account, contact.id, { name: 'Neu', fields })
      assert.match(expectError(response, 400, 'bad_request', 'field_invalid').message, message)
    }
    const after = await getContact(account, contact.id)
    assert.deepEqual([after.name, after.fields], ['Alt', { customer_no: 1 }])
    const before = await harness.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE account_id = $1',
      [account.accountId],
    )
    const refused = await create(account, { email: email(), fields: { customer_no: 'eins' } })
    expectError(refused, 400, 'bad_request', 'field_invalid')
    const upsert = await create(account, { email: contact.email, upsert: true, name: 'X', fields: { vip: 1 } })
    expectError(upsert, 400, 'bad_request', 'field_invalid')
    const now = await harness.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM contacts WHERE account_id = $1',
      [account.accountId],
    )
    assert.equal(now[0].n, before[0].n)
    assert.equal((await getContact(account, contact.id)).name, 'Alt')
  })
})
