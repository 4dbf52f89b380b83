import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { contactsHarnessPerFile, createContact, getContact, type Json } from '../../../test/helpers/contacts.ts'
import { defineFields, setFieldValues } from '../../../test/helpers/fields.ts'
import { signedInMember } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'

// The contact list and the account-wide operations by custom field (issue 33): GET /v1/contacts?fields= (a JSON
// array), the web app's count and export (the same query parameter), and the bulk bodies (the condition array).

let harness: Harness
contactsHarnessPerFile((created) => {
  harness = created
})

let counter = 0

/** An account with the five fields and four contacts named by their level. */
async function scene() {
  const account = await createTestAccount(harness)
  await defineFields(harness.database.orm, account.accountId)
  const ids: Record<string, string> = {}
  for (const [name, fields] of [
    ['gold', { level: 'gold', visits: 12 }],
    ['silver', { level: 'silver', visits: 3 }],
    ['bronze', { level: 'bronze', visits: 30, vip: true }],
    ['none', {}],
  ] as const) {
    const contact = await createContact(account, { name, email: `${name}-${++counter}@example.com` })
    await setFieldValues(harness.database.orm, account.accountId, contact.id, fields)
    ids[name] = contact.id
    harness.clock.advance(1000)
  }
  const { headers } = await signedInMember(harness, {
    accountId: account.accountId,
    email: `filter-${process.pid}-${++counter}@example.org`,
    password: 'filter password 1',
    role: 'owner',
  })
  const app = (method: 'GET' | 'POST', url: string, payload?: Json) =>
    harness.app.inject({ method, url, headers, ...(payload ? { payload } : {}) })
  return { account, ids, app }
}

const q = (conditions: unknown) => encodeURIComponent(JSON.stringify(conditions))

async function listed(account: TestAccount, query: string): Promise<string[]> {
  const response = await account.request({ method: 'GET', url: `/v1/contacts?${query}` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().contacts.map((c: Json) => c.name)
}

describe('GET /v1/contacts?fields=', () => {
  test('selects the contacts whose fields match every condition, newest first, with q and paging', async () => {
    const { account } = await scene()
    assert.deepEqual(await listed(account, `fields=${q([{ field: 'level', op: 'equals', value: 'gold' }])}`), ['gold'])
    assert.deepEqual(await listed(account, `fields=${q([{ field: 'visits', op: 'greater_than', value: 5 }])}`), [
      'bronze',
      'gold',
    ])
    assert.deepEqual(
      await listed(
        account,
        `fields=${q([
          { field: 'visits', op: 'greater_than', value: 5 },
          { field: 'vip', op: 'is_empty' },
        ])}`,
      ),
      ['gold'],
    )
    assert.deepEqual(await listed(account, `q=bron&fields=${q([{ field: 'level', op: 'is_set' }])}`), ['bronze'])
    const page = (
      await account.request({
        method: 'GET',
        url: `/v1/contacts?limit=1&fields=${q([{ field: 'level', op: 'is_set' }])}`,
      })
    ).json()
    assert.deepEqual([page.contacts.length, page.has_more, page.next_offset], [1, true, 1])
    assert.deepEqual(await listed(account, `fields=${q([])}`), ['none', 'bronze', 'silver', 'gold'])
  })

  test('an unknown field, an op that does not fit, bad JSON and an unknown key are 400s naming them', async () => {
    const { account } = await scene()
    const get = (query: string) => account.request({ method: 'GET', url: `/v1/contacts?${query}` })
    const unknown = await get(`fields=${q([{ field: 'shoe_size', op: 'is_set' }])}`)
    assert.equal(unknown.statusCode, 400)
    assert.deepEqual(
      [unknown.json().error.key, unknown.json().error.field, unknown.json().error.rule],
      ['field_condition_invalid', 'shoe_size', 'field_unknown'],
    )
    assert.match(unknown.json().error.message, /query\.fields\[0\]: shoe_size is not a custom field/)
    const wrongOp = await get(`fields=${q([{ field: 'level', op: 'greater_than', value: 'gold' }])}`)
    assert.deepEqual([wrongOp.statusCode, wrongOp.json().error.rule], [400, 'op_not_for_type'])
    const badJson = await get('fields=level%3Dgold')
    assert.equal(badJson.statusCode, 400)
    assert.match(badJson.json().error.message, /query\.fields must be a JSON array/)
    const extra = await get(`fields=${q([{ field: 'level', op: 'is_set', where: 1 }])}`)
    assert.equal(extra.statusCode, 400)
    assert.deepEqual(extra.json().error.unknown_fields, ['query.fields[0].where'])
  })
})

describe('account-wide operations by field (/app and the tool server)', () => {
  test('GET /app/contacts/condition-fields lists the fields with the ops each type takes', async () => {
    const { app } = await scene()
    const response = await app('GET', '/app/contacts/condition-fields')
    assert.equal(response.statusCode, 200, response.body)
    const byKey = Object.fromEntries(response.json().fields.map((f: Json) => [f.key, f]))
    assert.deepEqual(Object.keys(byKey), ['customer_no', 'visits', 'birthday', 'vip', 'level'])
    assert.deepEqual(byKey.birthday.ops, [
      'equals',
      'not_equals',
      'is_set',
      'is_empty',
      'before',
      'after',
      'within_next_days',
    ])
    assert.deepEqual(byKey.visits.ops.slice(4), ['greater_than', 'less_than'])
    assert.deepEqual([byKey.level.type, byKey.level.options], ['choice', ['gold', 'silver', 'bronze']])
  })

  test('count and export take fields as a JSON query parameter', async () => {
    const { app } = await scene()
    const count = await app('GET', `/app/contacts/count?fields=${q([{ field: 'visits', op: 'less_than', value: 20 }])}`)
    assert.equal(count.statusCode, 200, count.body)
    assert.equal(count.json().matching, 2)
    const exported = await app(
      'GET',
      `/app/contacts/export?fields=${q([{ field: 'level', op: 'not_equals', value: 'gold' }])}`,
    )
    assert.equal(exported.statusCode, 200, exported.body)
    const names = exported.body
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.split(',')[1])
    assert.deepEqual(names, ['silver', 'bronze'])
    const refused = await app('GET', `/app/contacts/count?fields=${q([{ field: 'level', op: 'equals', value: 'x' }])}`)
    assert.deepEqual([refused.statusCode, refused.json().error.rule], [400, 'value_not_an_option'])
  })

  test('bulk tag and delete by field change exactly the matching contacts; a condition that does not fit changes nothing', async () => {
    const { account, ids, app } = await scene()
    const tagged = await app('POST', '/app/contacts/bulk/tag', {
      filter: { fields: [{ field: 'visits', op: 'greater_than', value: 10 }] },
      tag: 'stammkunde',
    })
    assert.equal(tagged.statusCode, 200, tagged.body)
    assert.deepEqual([tagged.json().matched, tagged.json().tagged], [2, 2])
    for (const [name, tags] of [
      ['gold', ['stammkunde']],
      ['silver', []],
      ['bronze', ['stammkunde']],
      ['none', []],
    ] as const) {
      assert.deepEqual((await getContact(account, ids[name])).tags, tags, name)
    }
    const untagged = await app('POST', '/app/contacts/bulk/untag', {
      filter: { fields: [{ field: 'vip', op: 'equals', value: true }] },
      tag: 'stammkunde',
    })
    assert.deepEqual(untagged.json().untagged, 1)
    assert.deepEqual((await getContact(account, ids.bronze)).tags, [])

    const refused = await app('POST', '/app/contacts/bulk/delete', {
      filter: { fields: [{ field: 'visits', op: 'before', value: '2026-01-01' }] },
    })
    assert.equal(refused.statusCode, 400)
    assert.deepEqual(
      [refused.json().error.key, refused.json().error.field, refused.json().error.rule],
      ['field_condition_invalid', 'visits', 'op_not_for_type'],
    )
    assert.equal((await listed(account, '')).length, 4, 'nothing deleted')
    const noCriterion = await app('POST', '/app/contacts/bulk/delete', { filter: { fields: [] } })
    assert.deepEqual([noCriterion.statusCode, noCriterion.json().error.key], [400, 'filter_required'])
    const deleted = await app('POST', '/app/contacts/bulk/delete', {
      filter: { fields: [{ field: 'level', op: 'is_empty' }] },
    })
    assert.equal(deleted.statusCode, 200, deleted.body)
    assert.equal(deleted.json().deleted, 1)
    assert.deepEqual(await listed(account, ''), ['bronze', 'silver', 'gold'])
  })
})
