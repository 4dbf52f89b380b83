import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { csvFile, type Json } from '../../../test/helpers/contacts.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { McpClients, toolConfirmed, toolFails, toolOk } from '../../../test/helpers/mcp-client.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { dataCommands, parseCommandArgs } from '../../cli/commands.ts'
import { createMember } from '../people/index.ts'
import { importMayLoadUnchecked } from './contacts.repository.ts'
import { importContacts } from './index.ts'

// Custom fields in imports and exports (issue 33): columns named as a field fill it, --map and --create-fields,
// a value that does not fit rejects its line, and an exported file imports back unchanged. Also the field tools.

let harness: Harness
const mcpClients = new McpClients()
harnessPerFile({ mcp: mcpClients }, (created) => {
  harness = created
})

async function account() {
  const created = await createTestAccount(harness, { plan: { requestsPerMinute: 10_000 } })
  return { ...created, client: await mcpClients.connect(created.key) }
}

async function define(account: TestAccount, payload: Json): Promise<void> {
  const response = await account.request({ method: 'POST', url: '/v1/contact-fields', payload })
  assert.equal(response.statusCode, 201, response.body)
}

const FIELDS: Json[] = [
  { key: 'customer_no', label: 'Kundennummer', type: 'number' },
  { key: 'birthday', label: 'Geburtstag', type: 'date' },
  { key: 'level', label: 'Kundenstufe', type: 'choice', options: ['gold', 'silver'] },
  { key: 'vip', label: 'VIP-Kunde', type: 'boolean' },
  { key: 'note', label: 'Notiz', type: 'text' },
  { key: 'shoe_size', label: 'Schuhgröße', type: 'number' },
]

async function withFields(account: TestAccount): Promise<void> {
  for (const field of FIELDS) await define(account, field)
}

async function contactsByEmail(account: TestAccount): Promise<Map<string, Json>> {
  const response = await account.request({ method: 'GET', url: '/v1/contacts?limit=200' })
  assert.equal(response.statusCode, 200, response.body)
  return new Map(response.json().contacts.map((c: Json) => [c.email, c]))
}

const run = (accountId: string, lines: string[], format: Json = {}) =>
  importContacts(harness.database.orm, harness.clock, { accountId, file: csvFile(lines), format })

describe('import into custom fields', () => {
  test('a column named as a field (key or label, case and accents ignored) fills it; a bad value rejects its line', async () => {
    const target = await createTestAccount(harness)
    await withFields(target)
    const existing = await target.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { email: 'alt@example.org', fields: { vip: true, customer_no: 1 } },
    })
    assert.equal(existing.statusCode, 201)
    const report = await run(target.accountId, [
      'E-Mail;KUNDENNUMMER;schuhgrosse;Level;Geburtstag;VIP-Kunde;Lieblingsfarbe',
      'anna@example.org;4711;42,5;Gold;17.05.1990;ja;blau',
      'ben@example.org;zwölf;40;silver;;;',
      'carl@example.org;;;bronze;;;',
      'dora@example.org;;;;2026-02-30;;',
      'alt@example.org;2;;;;;',
    ])
    assert.deepEqual([report.created, report.updated, report.rejected], [1, 1, 3])
    assert.deepEqual(report.rejected_lines, [
      { line: 3, reason: 'customer_no must be a number (the value is "zwölf")' },
      { line: 4, reason: 'level must be one of gold, silver (the value is "bronze")' },
      { line: 5, reason: 'birthday must be a date YYYY-MM-DD (the value is "2026-02-30")' },
    ])
    assert.deepEqual(report.ignored_columns, ['Lieblingsfarbe'])
    assert.deepEqual(
      report.field_columns.map((c) => c.field),
      ['customer_no', 'shoe_size', 'level', 'birthday', 'vip'],
    )
    const contacts = await contactsByEmail(target)
    assert.deepEqual(contacts.get('anna@example.org')?.fields, {
      customer_no: 4711,
      shoe_size: 42.5,
      level: 'gold',
      birthday: '1990-05-17',
      vip: true,
    })
    // an existing contact's values merge: given ones set, the others stay
    assert.deepEqual(contacts.get('alt@example.org')?.fields, { vip: true, customer_no: 2 })
    assert.ok(!contacts.has('ben@example.org'))
    assert.deepEqual(
      [contacts.get('anna@example.org')?.optin_chat, contacts.get('anna@example.org')?.optin_email],
      ['none', 'none'],
    )
  })

  test("an imported contact's contact.created event carries the contact as the API shows it, tags and fields too", async () => {
    const target = await createTestAccount(harness)
    await withFields(target)
    const report = await run(target.accountId, [
      'name,email,phone,tags,customer_no,level,note',
      '"Anna ""A"" Berg",anna@example.org,+49 151 23456789,"Kunde_A,Messe",4711,gold,"Grüße; Zeile\n2"',
      ',bare@example.org,,,,,',
    ])
    assert.equal(report.created, 2)
    const events = await harness.database.query<{ contact_id: string; data: Json }>(
      "SELECT contact_id, data FROM events WHERE account_id = $1 AND name = 'contact.created'",
      [target.accountId],
    )
    assert.equal(events.length, 2)
    for (const event of events) {
      const response = await target.request({ method: 'GET', url: `/v1/contacts/${event.contact_id}` })
      assert.equal(response.statusCode, 200, response.body)
      const { acquisition: _, ...contact } = response.json().contact
      assert.deepEqual(event.data, contact)
    }
    const anna = events.find((e) => e.data.email === 'anna@example.org')
    assert.deepEqual(anna?.data.tags, ['Kunde_A', 'Messe'])
    assert.deepEqual(anna?.data.fields, { customer_no: 4711, level: 'gold', note: 'Grüße; Zeile\n2' })
  })

  test('--map names a field by its key; an unknown key is an error naming it', async () => {
    const target = await createTestAccount(harness)
    await withFields(target)
    const report = await run(target.accountId, ['Mail,Nummer', 'x@example.org,7'], {
      map: 'Mail=email,Nummer=customer_no',
    })
    assert.equal(report.created, 1)
    assert.deepEqual((await contactsByEmail(target)).get('x@example.org')?.fields, { customer_no: 7 })
    await assert.rejects(run(target.accountId, ['email,Nummer', 'y@example.org,7'], { map: 'Nummer=kunde' }), {
      message: /Nummer: unknown field "kunde"/,
    })
  })

  test('--create-fields makes every otherwise ignored column a text field first; Herold’s own columns stay ignored', async () => {
    const target = await createTestAccount(harness)
    await define(target, { key: 'customer_no', label: 'Kundennummer', type: 'number' })
    const report = await run(
      target.accountId,
      [
        'email,Kundennummer,Größe (cm),Greeting,optin_chat,created_at,Nummer',
        'a@example.org,12,180,Moin,confirmed,2020-01-01T00:00:00Z,N-1',
      ],
      { createFields: true, map: 'Nummer=member_no' },
    )
    assert.deepEqual(report.created_fields, ['member_no', 'groesse_cm', 'greeting_2'])
    assert.deepEqual(report.ignored_columns, ['optin_chat', 'created_at'])
    const contact = (await contactsByEmail(target)).get('a@example.org')
    assert.deepEqual(contact?.fields, { customer_no: 12, groesse_cm: '180', greeting_2: 'Moin', member_no: 'N-1' })
    assert.equal(contact?.optin_chat, 'none')
    const fields = await target.request({ method: 'GET', url: '/v1/contact-fields' })
    assert.deepEqual(
      fields.json().contact_fields.map((f: Json) => [f.key, f.label, f.type]),
      [
        ['customer_no', 'Kundennummer', 'number'],
        ['member_no', 'Nummer', 'text'],
        ['groesse_cm', 'Größe (cm)', 'text'],
        ['greeting_2', 'Greeting', 'text'],
      ],
    )
  })

  test('herold import contacts takes --map to a field key and --create-fields', async () => {
    const target = await createTestAccount(harness)
    await define(target, { key: 'customer_no', label: 'Kundennummer', type: 'number' })
    const command = dataCommands['import contacts']
    const argv = ['--account', target.accountId, csvFile(['email;Nr;Filiale', 'c@example.org;5;Bonn'])]
    const { values, positionals } = parseCommandArgs(command, [...argv, '--map', 'Nr=customer_no', '--create-fields'])
    command.prepare?.(values, positionals)
    const result = await command.run(harness.database, values, positionals)
    assert.deepEqual([result.created, result.created_fields], [1, ['filiale']])
    assert.match(command.human(result), /text fields created: filiale/)
    const contact = (await contactsByEmail(target)).get('c@example.org')
    assert.deepEqual(contact?.fields, { customer_no: 5, filiale: 'Bonn' })
  })

  test('--create-fields beyond 50 fields is refused before anything is imported', async () => {
    const target = await createTestAccount(harness)
    for (let i = 1; i <= 49; i++) await define(target, { key: `f${i}`, label: `Feld ${i}`, type: 'text' })
    await assert.rejects(run(target.accountId, ['email,Eins,Zwei', 'a@example.org,1,2'], { createFields: true }), {
      message: /would make 51 custom fields/,
    })
    assert.equal((await contactsByEmail(target)).size, 0)
  })

  test('the web app import takes create_fields as a query parameter', async () => {
    const target = await createTestAccount(harness)
    const email = `fields-import-${process.pid}@example.org`
    await createMember(harness.database.orm, {
      accountId: target.accountId,
      email,
      name: 'owner',
      password: 'correct horse battery',
      role: 'owner',
    })
    const signIn = await harness.app.inject({
      method: 'POST',
      url: '/app/sign-in',
      payload: { email, password: 'correct horse battery' },
      remoteAddress: '10.9.0.1',
    })
    assert.equal(signIn.statusCode, 200, signIn.body)
    const response = await harness.app.inject({
      method: 'POST',
      url: '/app/contacts/import?create_fields=true',
      headers: {
        cookie: String(signIn.headers['set-cookie']).split(';')[0],
        'x-csrf-token': signIn.json().csrf_token,
        'content-type': 'text/csv',
      },
      payload: 'email;Filiale\nw@example.org;Köln\n',
    })
    assert.equal(response.statusCode, 200, response.body)
    const report = JSON.parse(response.body.trim().split('\n').at(-1) ?? '').report
    assert.deepEqual(report.created_fields, ['filiale'])
    assert.deepEqual((await contactsByEmail(target)).get('w@example.org')?.fields, { filiale: 'Köln' })
  })
})

describe('the bulk load', () => {
  test('runs without per-row foreign key checks, and its contacts still count in the statistics', async () => {
    // the test databases let the role set session_replication_role (PGlite; postgres on PostgreSQL), and every
    // trigger of contacts fires in that role too (migration 0066): the import's fast path is the one taken
    assert.equal(await importMayLoadUnchecked(harness.database.orm), true)
    const target = await account()
    await withFields(target)
    const report = await run(target.accountId, [
      'email,name,Kundenstufe,tags',
      'bulk-a@example.com,A,gold,messe',
      'bulk-b@example.com,B,silver,',
    ])
    assert.equal(report.created, 2, JSON.stringify(report.rejected_lines))
    const response = await target.request({ method: 'GET', url: '/v1/stats?range=7d' })
    assert.equal(response.statusCode, 200, response.body)
    const stats = response.json().stats
    assert.equal(stats.contacts.total, 2)
    assert.equal(stats.contacts.optin_chat.none, 2)
    assert.equal(stats.days.at(-1).contacts_new, 2)
    const contacts = await contactsByEmail(target)
    assert.equal(contacts.get('bulk-a@example.com')?.fields.level, 'gold')
    assert.deepEqual(contacts.get('bulk-a@example.com')?.tags, ['messe'])
  })
})

describe('export and import back', () => {
  const VALUES: Array<{ email: string; name: string; tags?: string[]; fields: Json }> = [
    {
      email: 'joerg@example.org',
      name: 'Jörg Groß',
      tags: ['Stammkunde', 'VIP'],
      fields: {
        customer_no: 4711,
        birthday: '1990-05-17',
        level: 'gold',
        vip: true,
        note: 'Grüße; an "alle"\nZeile 2',
        shoe_size: 42.5,
      },
    },
    { email: 'minus@example.org', name: 'Minus', fields: { customer_no: -12, vip: false, note: '-kein Rabatt' } },
    { email: 'leer@example.org', name: 'Leer', fields: {} },
  ]

  async function source() {
    const from = await account()
    await withFields(from)
    for (const value of VALUES) {
      const { contact } = await toolOk(from.client, 'create_contact', {
        name: value.name,
        email: value.email,
        fields: value.fields,
      })
      if (value.tags) await toolOk(from.client, 'add_contact_tags', { contact_id: contact.id, tags: value.tags })
    }
    const exported = await toolOk(from.client, 'export_contacts_csv', {})
    assert.equal(exported.rows, VALUES.length)
    assert.match(exported.csv, /,customer_no,birthday,level,vip,note,shoe_size\n/)
    return { from, csv: exported.csv as string }
  }

  test('into an account with the same definitions: every contact as it was', async () => {
    const { from, csv } = await source()
    const into = await account()
    await withFields(into)
    const { report } = await toolOk(into.client, 'import_contacts_csv', { csv })
    assert.deepEqual([report.created, report.rejected, report.created_fields], [VALUES.length, 0, []])
    const before = await contactsByEmail(from)
    const after = await contactsByEmail(into)
    for (const value of VALUES) {
      const [a, b] = [before.get(value.email), after.get(value.email)]
      assert.deepEqual([b?.name, b?.phone, b?.tags, b?.fields], [a?.name, a?.phone, a?.tags, a?.fields], value.email)
      assert.deepEqual(b?.fields, value.fields)
    }
  })

  test('with create_fields into an account without definitions: the values as text', async () => {
    const { csv } = await source()
    const into = await account()
    const { report } = await toolOk(into.client, 'import_contacts_csv', { csv, create_fields: true })
    assert.deepEqual(
      report.created_fields,
      FIELDS.map((f) => f.key),
    )
    const after = await contactsByEmail(into)
    for (const value of VALUES) {
      const asText = Object.fromEntries(Object.entries(value.fields).map(([k, v]) => [k, String(v)]))
      assert.deepEqual(after.get(value.email)?.fields, asText, value.email)
    }
  })
})

describe('the field tools', () => {
  test('list, create, update and delete (two-step) with the scopes of the routes; values on contact tools', async () => {
    const { client } = await account()
    await toolOk(client, 'create_contact_field', { key: 'level', label: 'Stufe', type: 'choice', options: ['a', 'b'] })
    await toolFails(client, 'create_contact_field', { key: 'email', label: 'Mail', type: 'text' }, 'bad_request')
    const listed = await toolOk(client, 'list_contact_fields', {})
    assert.deepEqual(
      listed.contact_fields.map((f: Json) => f.key),
      ['level'],
    )
    const { contact } = await toolOk(client, 'upsert_contact', { email: 'tool@example.org', fields: { level: 'a' } })
    assert.deepEqual(contact.fields, { level: 'a' })
    await toolFails(client, 'update_contact', { contact_id: contact.id, fields: { level: 'c' } }, 'bad_request')
    const refused = await toolFails(
      client,
      'update_contact_field',
      { key: 'level', options: ['b'] },
      'field_values_incompatible',
    )
    assert.equal(refused.count, 1)
    const changed = await toolOk(client, 'update_contact_field', { key: 'level', type: 'text' })
    assert.equal(changed.contact_field.type, 'text')
    const deleted = await toolConfirmed(client, 'delete_contact_field', { key: 'level' })
    assert.equal(deleted.values_removed, 1)
    assert.deepEqual((await toolOk(client, 'get_contact', { contact_id: contact.id })).contact.fields, {})
  })
})
