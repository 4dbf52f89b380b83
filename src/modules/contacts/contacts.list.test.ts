import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { contactsHarnessPerFile, createContact, type Json } from '../../../test/helpers/contacts.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { toWire } from '../../platform/http/serializer.ts'

// GET /v1/contacts: paging, the search and its filters, and the page the database writes as JSON.

let harness: Harness
contactsHarnessPerFile((created) => {
  harness = created
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
    const service = harness.services.contacts
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
