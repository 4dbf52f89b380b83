import assert from 'node:assert/strict'
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
import { importContacts } from './index.ts'

// Tags of contacts (origins, limits, system tags, counts) and the contact import.

let harness: Harness
contactsHarnessPerFile((created) => {
  harness = created
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
