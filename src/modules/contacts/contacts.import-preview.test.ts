import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { signedInMember } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'

// The web app's import preview (issue 33): what an import would do with a file's columns, before anything is
// written, and the custom field definitions under /app for the settings page.

let harness: Harness
harnessPerFile((created) => {
  harness = created
})

let n = 0
async function owner(role: 'owner' | 'member' = 'owner') {
  const account = await createTestAccount(harness)
  n += 1
  const member = await signedInMember(harness, {
    accountId: account.accountId,
    role,
    email: `preview-${process.pid}-${n}@example.org`,
    password: 'correct horse battery',
  })
  const request = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown, csv = false) =>
    harness.app.inject({
      method,
      url,
      headers: { ...member.headers, ...(csv ? { 'content-type': 'text/csv' } : {}) },
      ...(payload === undefined ? {} : { payload: payload as string }),
    })
  return { account, request }
}

const countContacts = async (accountId: string) => {
  const result = await harness.database.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM contacts WHERE account_id = '${accountId}'`,
  )
  return result[0].n
}

describe('POST /app/contacts (the web app’s contact form)', () => {
  test('a national number is read in the account’s country and stored in E.164; /v1 stays international', async () => {
    const { account, request } = await owner()
    const created = await request('POST', '/app/contacts', { name: 'Anna', phone: '0151 12345678' })
    assert.equal(created.statusCode, 201, created.body)
    assert.equal(created.json().contact.phone, '+4915112345678')
    const twice = await request('POST', '/app/contacts', { phone: '+49 151 12345678' })
    assert.equal(twice.statusCode, 409)
    const invalid = await request('POST', '/app/contacts', { phone: '0000 1234' })
    assert.equal(invalid.statusCode, 400)
    assert.equal(invalid.json().error.code, 'bad_request')
    assert.match(invalid.json().error.message, /DE/)
    assert.equal(await countContacts(account.accountId), 1)
    const publicApi = await account.request({ method: 'POST', url: '/v1/contacts', payload: { phone: '0171 2345678' } })
    assert.equal(publicApi.statusCode, 400, 'the public API takes international numbers only, as the spec says')
  })
})

describe('POST /app/contacts/import/preview', () => {
  test('the country national numbers are read in, and each line’s number as it will be stored', async () => {
    const { request } = await owner()
    const file =
      'E-Mail;Telefon\r\na@example.de;0151 12345678\r\nb@example.de;+43 664 1234567\r\nc@example.de;\r\nd@example.de;0000 1234\r\n'
    const inGermany = (await request('POST', '/app/contacts/import/preview', file, true)).json()
    assert.equal(inGermany.country, 'DE', 'the account’s time zone is Europe/Berlin')
    assert.deepEqual(inGermany.phones, ['+4915112345678', '+436641234567', '', null])
    const inAustria = await request('POST', '/app/contacts/import/preview?country=AT', file, true)
    assert.equal(inAustria.statusCode, 200, inAustria.body)
    assert.equal(inAustria.json().country, 'AT')
    assert.deepEqual(inAustria.json().phones, ['+4315112345678', '+436641234567', '', null])
    const unknown = await request('POST', '/app/contacts/import/preview?country=XY', file, true)
    assert.equal(unknown.statusCode, 400)
    assert.equal(unknown.json().error.key, 'csv_invalid')

    // the account's settings: the country set under /app, null follows the time zone again
    const got = (await request('GET', '/app/account')).json().account
    assert.deepEqual([got.country, got.country_set], ['DE', false])
    const set = await request('PATCH', '/app/account', { country: 'at' })
    assert.equal(set.statusCode, 200, set.body)
    assert.deepEqual([set.json().account.country, set.json().account.country_set], ['AT', true])
    assert.equal((await request('POST', '/app/contacts/import/preview', file, true)).json().country, 'AT')
    for (const country of ['XY', 'DEU', 1]) {
      const refused = await request('PATCH', '/app/account', { country })
      assert.equal(refused.statusCode, 400, String(country))
      assert.equal(refused.json().error.code, 'bad_request')
    }
    const auto = await request('PATCH', '/app/account', { country: null })
    assert.deepEqual([auto.json().account.country, auto.json().account.country_set], ['DE', false])
  })

  test('a German Excel file: columns, their targets and the first lines, nothing written', async () => {
    const { account, request } = await owner()
    const created = await request('POST', '/app/contact-fields', {
      key: 'customer_no',
      label: 'Kundennummer',
      type: 'number',
    })
    assert.equal(created.statusCode, 201, created.body)
    const file = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('Name;E-Mail;Telefon;Kundennummer;Notizen\r\nJörg Groß;j@example.org;0151 2345678;4711;"a; b"\r\n'),
    ])
    const response = await request('POST', '/app/contacts/import/preview', file, true)
    assert.equal(response.statusCode, 200, response.body)
    const preview = response.json()
    assert.equal(preview.encoding, 'utf-8')
    assert.equal(preview.delimiter, ';')
    assert.deepEqual(
      preview.columns.map((c: { header: string; target: string | null }) => [c.header, c.target]),
      [
        ['Name', 'name'],
        ['E-Mail', 'email'],
        ['Telefon', 'phone'],
        ['Kundennummer', 'customer_no'],
        ['Notizen', null],
      ],
    )
    assert.deepEqual(preview.rows, [['Jörg Groß', 'j@example.org', '0151 2345678', '4711', 'a; b']])
    assert.equal(preview.has_address, true)
    assert.deepEqual(preview.fields, [{ key: 'customer_no', label: 'Kundennummer' }])
    assert.equal(await countContacts(account.accountId), 0, 'the preview writes nothing')
  })

  test('the member changes mappings: map and create_fields show what the import would do', async () => {
    const { account, request } = await owner()
    const file = 'Email Address,First Name,Filiale,Intern\nb@example.org,Björn,Köln,x\n'
    const changed = await request(
      'POST',
      `/app/contacts/import/preview?create_fields=true&map=${encodeURIComponent('Intern=-,First Name=name')}`,
      file,
      true,
    )
    assert.equal(changed.statusCode, 200, changed.body)
    assert.deepEqual(
      changed
        .json()
        .columns.map((c: { header: string; target: string | null; new_field: boolean }) => [
          c.header,
          c.target,
          c.new_field,
        ]),
      [
        ['Email Address', 'email', false],
        ['First Name', 'name', false],
        ['Filiale', 'filiale', true],
        ['Intern', null, false],
      ],
    )
    assert.equal(
      (
        await harness.database.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM contact_fields WHERE account_id = '${account.accountId}'`,
        )
      )[0].n,
      0,
      'no field is created by the preview',
    )
    // the import with the same choices does what the preview said
    const imported = await request(
      'POST',
      `/app/contacts/import?create_fields=true&map=${encodeURIComponent('Intern=-,First Name=name')}`,
      file,
      true,
    )
    assert.equal(imported.statusCode, 200, imported.body)
    const report = JSON.parse(imported.body.trim().split('\n').at(-1) ?? '').report
    assert.deepEqual(report.created_fields, ['filiale'])
    const contact = await harness.database.query<{ name: string; fields: unknown }>(
      `SELECT name, fields FROM contacts WHERE account_id = '${account.accountId}'`,
    )
    assert.deepEqual(contact, [{ name: 'Björn', fields: { filiale: 'Köln' } }])
  })

  test('a Windows-1252 file is read as such; only the start of a long file is read, a cut line left out', async () => {
    const { request } = await owner()
    const lines = ['email,name', ...Array.from({ length: 20_000 }, (_, i) => `k${i}@example.org,Groß ${i}`)]
    const file = Buffer.from(`${lines.join('\n')}\n`, 'latin1')
    assert.ok(file.length > 256 * 1024)
    const response = await request('POST', '/app/contacts/import/preview', file, true)
    assert.equal(response.statusCode, 200, response.body)
    const preview = response.json()
    assert.equal(preview.encoding, 'windows-1252')
    assert.equal(preview.rows.length, 5)
    assert.deepEqual(preview.rows[0], ['k0@example.org', 'Groß 0'])
  })

  test('refusals: no address column is reported, a map naming a missing column is a 400, not CSV a 415', async () => {
    const { request } = await owner()
    const noAddress = await request('POST', '/app/contacts/import/preview', 'Vorname,Ort\nA,B\n', true)
    assert.equal(noAddress.statusCode, 200, noAddress.body)
    assert.equal(noAddress.json().has_address, false)
    const badMap = await request(
      'POST',
      `/app/contacts/import/preview?map=${encodeURIComponent('Fax=phone')}`,
      'email\na@example.org\n',
      true,
    )
    assert.equal(badMap.statusCode, 400, badMap.body)
    assert.equal(badMap.json().error.key, 'csv_invalid')
    assert.match(badMap.json().error.message, /Fax/)
    const empty = await request('POST', '/app/contacts/import/preview', '', true)
    assert.equal(empty.statusCode, 400, empty.body)
    const json = await request('POST', '/app/contacts/import/preview', { a: 1 })
    assert.equal(json.statusCode, 415, json.body)
  })
})

describe('/app/contact-fields', () => {
  test('the settings page lists, defines, changes and deletes fields; a member may read but not define', async () => {
    const { account, request } = await owner()
    const created = await request('POST', '/app/contact-fields', {
      key: 'level',
      label: 'Stufe',
      type: 'choice',
      options: ['gold', 'silver'],
    })
    assert.equal(created.statusCode, 201, created.body)
    assert.equal(created.json().contact_field.key, 'level')
    const unknown = await request('POST', '/app/contact-fields', { key: 'x1', label: 'X', type: 'text', colour: 'red' })
    assert.equal(unknown.statusCode, 400, unknown.body)
    const changed = await request('PATCH', '/app/contact-fields/level', { label: 'Kundenstufe' })
    assert.equal(changed.statusCode, 200, changed.body)
    const list = await request('GET', '/app/contact-fields')
    assert.equal(list.statusCode, 200, list.body)
    assert.deepEqual(
      list.json().contact_fields.map((f: { key: string; label: string }) => [f.key, f.label]),
      [['level', 'Kundenstufe']],
    )

    n += 1
    const member = await signedInMember(harness, {
      accountId: account.accountId,
      role: 'member',
      email: `preview-member-${process.pid}-${n}@example.org`,
      password: 'correct horse battery',
    })
    const read = await harness.app.inject({ method: 'GET', url: '/app/contact-fields', headers: member.headers })
    assert.equal(read.statusCode, 200, read.body)
    const define = await harness.app.inject({
      method: 'POST',
      url: '/app/contact-fields',
      headers: member.headers,
      payload: { key: 'branch', label: 'Filiale', type: 'text' },
    })
    assert.equal(define.statusCode, 403, define.body)

    const other = await owner()
    assert.equal((await other.request('DELETE', '/app/contact-fields/level')).statusCode, 404)
    assert.equal((await request('DELETE', '/app/contact-fields/level')).statusCode, 204)
    assert.deepEqual((await request('GET', '/app/contact-fields')).json().contact_fields, [])
  })
})
