import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { AdminError, dataCommands, parseCommandArgs } from '../../cli/commands.ts'
import { createMember } from '../people/index.ts'
import { importContacts } from './index.ts'

// The files people have, byte for byte as Excel and Mailchimp write them, through the real import path.

let harness: Harness
harnessPerFile((created) => {
  harness = created
})

function file(bytes: Uint8Array): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'herold-import-files-'))
  const name = path.join(dir, 'contacts.csv')
  writeFileSync(name, bytes)
  return name
}

/** Windows-1252 bytes of text (Latin-1 letters only, as in these files). */
const cp1252 = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0))

const BOM = Buffer.from([0xef, 0xbb, 0xbf])

/** Excel "CSV UTF-8 (Trennzeichen-getrennt)" in German: byte-order mark, `;`, CRLF. */
const germanExcel = () =>
  Buffer.concat([
    BOM,
    Buffer.from(
      'Name;E-Mail;Telefon;Kundennummer\r\n' +
        'Björn Groß;bjoern@example.de;+49 151 23456701;K-1001\r\n' +
        '"Müller; Anna";anna@example.de;;K-1002\r\n' +
        ';;+49 151 23456703;K-1003\r\n',
    ),
  ])

/** Mailchimp's audience export: quoted where needed, the tags each quoted inside their cell. */
const mailchimp = () =>
  Buffer.from(
    'Email Address,First Name,Last Name,Phone Number,TAGS\n' +
      'jane@example.com,Jane,Doe,+49 151 23456711,"""Stammkunde"",""VIP"""\n' +
      'john@example.com,John,,,\n',
  )

/** Older Excel and many shop systems: Windows-1252. */
const windows1252 = () => cp1252('Name;E-Mail\r\nBjörn Groß;bjoern@example.com\r\n')

type Json = Record<string, unknown>

async function contactsOf(account: TestAccount): Promise<Json[]> {
  const response = await account.request({ method: 'GET', url: '/v1/contacts?limit=100' })
  assert.equal(response.statusCode, 200, response.body)
  const contacts = response.json().contacts as Json[]
  return contacts
    .map((c) => ({
      name: c.name,
      email: c.email,
      phone: c.phone,
      tags: c.tags,
      optin_chat: c.optin_chat,
      optin_email: c.optin_email,
    }))
    .sort((a, b) => String(a.email).localeCompare(String(b.email)) || String(a.phone).localeCompare(String(b.phone)))
}

const none = { optin_chat: 'none', optin_email: 'none' }

describe('import contacts: the files people have', () => {
  test('German Excel (BOM, ;, CRLF): Name, E-Mail, Telefon read; Kundennummer ignored', async () => {
    const account = await createTestAccount(harness)
    const report = await importContacts(harness.database.orm, harness.clock, {
      accountId: account.accountId,
      file: file(germanExcel()),
    })
    assert.deepEqual([report.rows, report.created, report.rejected], [3, 3, 0])
    assert.deepEqual(report.ignored_columns, ['Kundennummer'])
    assert.deepEqual(await contactsOf(account), [
      { name: '', email: '', phone: '+4915123456703', tags: [], ...none },
      { name: 'Müller; Anna', email: 'anna@example.de', phone: '', tags: [], ...none },
      { name: 'Björn Groß', email: 'bjoern@example.de', phone: '+4915123456701', tags: [], ...none },
    ])
  })

  test('Mailchimp: Email Address, First Name + Last Name joined, Phone Number, TAGS', async () => {
    const account = await createTestAccount(harness)
    const report = await importContacts(harness.database.orm, harness.clock, {
      accountId: account.accountId,
      file: file(mailchimp()),
    })
    assert.deepEqual([report.rows, report.created, report.rejected], [2, 2, 0])
    assert.deepEqual(report.ignored_columns, [])
    assert.deepEqual(await contactsOf(account), [
      { name: 'Jane Doe', email: 'jane@example.com', phone: '+4915123456711', tags: ['Stammkunde', 'VIP'], ...none },
      { name: 'John', email: 'john@example.com', phone: '', tags: [], ...none },
    ])
  })

  test('in small batches (inside the server on the embedded database) the same contacts as in one', async () => {
    // addresses repeated within and across batches: each line sees the effect of the ones before it
    const csv = Buffer.from(
      'name,email,phone,tags\n' +
        'Anna,anna@example.de,,a\n' +
        'Anna Zwei,anna@example.de,+49 151 23456731,b\n' +
        'Bernd,bernd@example.de,,\n' +
        ',,+49 151 23456731,c\n' +
        'Carla,carla@example.de,,\n' +
        'Bernd B.,bernd@example.de,,d\n' +
        'Dora,dora@example.de,+49 151 23456732,\n',
    )
    const whole = await createTestAccount(harness)
    const sliced = await createTestAccount(harness)
    const one = await importContacts(harness.database.orm, harness.clock, {
      accountId: whole.accountId,
      file: file(csv),
    })
    const many = await importContacts(harness.database.orm, harness.clock, {
      accountId: sliced.accountId,
      file: file(csv),
      batchSize: 2,
    })
    assert.deepEqual(
      [many.rows, many.created, many.updated, many.unchanged, many.rejected],
      [one.rows, one.created, one.updated, one.unchanged, one.rejected],
    )
    assert.equal(one.created, 4)
    assert.deepEqual(await contactsOf(sliced), await contactsOf(whole))
  })

  test('Windows-1252: Björn Groß stored exactly', async () => {
    const account = await createTestAccount(harness)
    const report = await importContacts(harness.database.orm, harness.clock, {
      accountId: account.accountId,
      file: file(windows1252()),
    })
    assert.equal(report.created, 1)
    const [contact] = await contactsOf(account)
    assert.equal(contact.name, 'Björn Groß')
  })

  test('UTF-16 with a byte-order mark and tabs (Excel "Unicode text")', async () => {
    const account = await createTestAccount(harness)
    const text = '\ufeffVorname\tNachname\tE-Mail-Adresse\tMobil\r\nJürgen\tÖzdemir\tj@example.de\t+49 151 23456721\r\n'
    await importContacts(harness.database.orm, harness.clock, {
      accountId: account.accountId,
      file: file(Buffer.from(text, 'utf16le')),
    })
    assert.deepEqual(await contactsOf(account), [
      { name: 'Jürgen Özdemir', email: 'j@example.de', phone: '+4915123456721', tags: [], ...none },
    ])
  })

  test('no column raises an opt-in: opt-in and marketing consent columns are ignored', async () => {
    const account = await createTestAccount(harness)
    const report = await importContacts(harness.database.orm, harness.clock, {
      accountId: account.accountId,
      file: file(
        Buffer.from(
          'First Name,Last Name,Email,Accepts Email Marketing,Phone,Accepts SMS Marketing,optin_chat,optin_email,Tags\n' +
            'Eva,Kern,eva@example.com,yes,+49 151 23456731,yes,confirmed,confirmed,sommer\n',
        ),
      ),
    })
    assert.deepEqual(report.ignored_columns, [
      'Accepts Email Marketing',
      'Accepts SMS Marketing',
      'optin_chat',
      'optin_email',
    ])
    assert.deepEqual(await contactsOf(account), [
      { name: 'Eva Kern', email: 'eva@example.com', phone: '+4915123456731', tags: ['sommer'], ...none },
    ])
  })

  test('a byte that is not UTF-8 after the first 64 KiB refuses the file before anything is imported, naming the line and --encoding cp1252', async () => {
    const account = await createTestAccount(harness)
    const head = Buffer.from(`email;name\r\n${'a@example.com;Anna\r\n'.repeat(4000)}`)
    const bytes = Buffer.concat([head, cp1252('b@example.com;Björn\r\n')])
    await assert.rejects(
      importContacts(harness.database.orm, harness.clock, { accountId: account.accountId, file: file(bytes) }),
      /line 4002 is not UTF-8.*--encoding cp1252/,
    )
    assert.deepEqual(await contactsOf(account), [])
  })
})

describe('herold import contacts: --map, --delimiter, --encoding', () => {
  const command = dataCommands['import contacts']
  const run = async (argv: string[]) => {
    const { values, positionals } = parseCommandArgs(command, argv)
    command.prepare?.(values, positionals)
    return command.run(harness.database, values, positionals)
  }

  test('override the detection and map columns the reader does not know', async () => {
    const account = await createTestAccount(harness)
    const csv = file(cp1252('Rufname|Mail|Nummer\r\nBjörn|b@example.com|+49 151 23456741\r\n'))
    const result = await run([
      '--account',
      account.accountId,
      csv,
      '--map',
      'Rufname=first_name,Mail=email,Nummer=phone',
      '--delimiter',
      '|',
      '--encoding',
      'cp1252',
    ])
    assert.equal(result.created, 1)
    assert.deepEqual(await contactsOf(account), [
      { name: 'Björn', email: 'b@example.com', phone: '+4915123456741', tags: [], ...none },
    ])
  })

  test('the human report lists the ignored columns', async () => {
    const account = await createTestAccount(harness)
    const result = await run(['--account', account.accountId, file(germanExcel())])
    assert.match(command.human(result), /columns ignored: Kundennummer \(name them with --map, or --create-fields\)/)
  })

  test('an unknown field, delimiter, encoding or option is an error naming it', async () => {
    const account = await createTestAccount(harness)
    const csv = file(germanExcel())
    const refusals: Array<[string[], RegExp]> = [
      [['--map', 'Kundennummer=customer_no'], /Kundennummer: unknown field "customer_no"/],
      [['--map', 'Mobl=phone'], /column the file does not have: Mobl/],
      [['--delimiter', ':'], /unknown delimiter ":"/],
      [['--encoding', 'ebcdic'], /unknown encoding "ebcdic"/],
      [['--separator', ';'], /--separator/],
    ]
    for (const [options, message] of refusals) {
      await assert.rejects(
        run(['--account', account.accountId, csv, ...options]),
        (error: Error) => error instanceof AdminError && message.test(error.message),
        options.join(' '),
      )
    }
    assert.deepEqual(await contactsOf(account), [])
  })
})

describe('the web app import (/app/contacts/import): the same reader, the same overrides', () => {
  let counter = 0
  /** A signed-in owner's headers for a change. */
  async function owner(accountId: string) {
    const email = `csv-reader-${process.pid}-${++counter}@example.org`
    const password = 'correct horse battery'
    await createMember(harness.database.orm, { accountId, email, name: 'owner', password, role: 'owner' })
    const signIn = await harness.app.inject({
      method: 'POST',
      url: '/app/sign-in',
      payload: { email, password },
      remoteAddress: `10.8.${counter}.1`,
    })
    assert.equal(signIn.statusCode, 200, signIn.body)
    return { cookie: String(signIn.headers['set-cookie']).split(';')[0], 'x-csrf-token': signIn.json().csrf_token }
  }
  const upload = async (accountId: string, bytes: Uint8Array, query = '') =>
    harness.app.inject({
      method: 'POST',
      url: `/app/contacts/import${query}`,
      headers: { ...(await owner(accountId)), 'content-type': 'text/csv' },
      payload: Buffer.from(bytes),
    })
  const reportOf = (body: string) => JSON.parse(body.trim().split('\n').at(-1) ?? '').report

  test('German Excel is read and its unknown column reported', async () => {
    const account = await createTestAccount(harness)
    const response = await upload(account.accountId, germanExcel())
    assert.equal(response.statusCode, 200, response.body)
    const report = reportOf(response.body)
    assert.deepEqual([report.created, report.ignored_columns], [3, ['Kundennummer']])
  })

  test('encoding, delimiter and map in the query override the detection; an unknown value is a 400 naming it', async () => {
    const account = await createTestAccount(harness)
    const bytes = cp1252('Rufname|Mail\r\nBjörn|b@example.com\r\n')
    const query = `?encoding=cp1252&delimiter=${encodeURIComponent('|')}&map=${encodeURIComponent('Rufname=name,Mail=email')}`
    const response = await upload(account.accountId, bytes, query)
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(reportOf(response.body).created, 1)
    assert.equal((await contactsOf(account))[0].name, 'Björn')
    const refused = await upload(account.accountId, bytes, '?encoding=ebcdic')
    assert.equal(refused.statusCode, 400)
    assert.equal(refused.json().error.key, 'csv_invalid')
    assert.match(refused.json().error.message, /unknown encoding "ebcdic"/)
  })
})
