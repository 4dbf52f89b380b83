import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  active,
  create,
  createContact,
  drain,
  errorOf,
  harness,
  type Json,
  runsOf,
  sandboxAccount,
  tagsOf,
  withAutomationsHarness,
} from '../../../test/helpers/automations.ts'
import { defineFields, setFieldValues } from '../../../test/helpers/fields.ts'

// Automation branches on the contact's custom fields (issue 33): the condition is read when the step runs, and one
// that does not fit the account's fields is refused on save, naming the step, the field and the rule.

withAutomationsHarness()

describe('automation branches on custom fields', () => {
  test('a contact_field branch takes then or else by the contact’s value when the step runs', async () => {
    harness.clock.set('2026-12-29T08:00:00Z')
    const account = await sandboxAccount()
    await defineFields(harness.database.orm, account.accountId)
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [
        {
          type: 'branch',
          condition: { type: 'contact_field', field: 'level', op: 'equals', value: 'gold' },
          else_goto: 2,
        },
        { type: 'add_tag', tag: 'gold' },
        {
          type: 'branch',
          condition: { type: 'contact_field', field: 'birthday', op: 'within_next_days', days: 7, ignore_year: true },
          then_goto: 4,
          else_goto: 'end',
        },
        { type: 'add_tag', tag: 'never' },
        { type: 'add_tag', tag: 'birthday-soon' },
      ],
    })
    const gold = await createContact(account)
    const silver = await createContact(account)
    const none = await createContact(account)
    const db = harness.database.orm
    await setFieldValues(db, account.accountId, gold, { level: 'gold', birthday: '1980-01-03' })
    await setFieldValues(db, account.accountId, silver, { level: 'silver', birthday: '1980-06-03' })
    for (const contactId of [gold, silver, none]) {
      const response = await account.request({
        method: 'POST',
        url: `/v1/automations/${automation.id}/trigger`,
        payload: { contact_id: contactId },
      })
      assert.equal(response.statusCode, 202, response.body)
    }
    await drain()
    assert.deepEqual((await tagsOf(account, gold)).sort(), ['birthday-soon', 'gold'])
    assert.deepEqual(await tagsOf(account, silver), [])
    assert.deepEqual(await tagsOf(account, none), [])
    const runs = await runsOf(account, automation.id)
    const goldRun = runs.find((r: Json) => r.contact_id === gold) as Json
    assert.equal(goldRun.state, 'completed')
    assert.deepEqual(
      goldRun.steps.filter((s: Json) => s.type === 'branch').map((s: Json) => s.detail.condition),
      [true, true],
      JSON.stringify(goldRun.steps),
    )
  })

  test('a contact_field condition on an unknown field or with an op that does not fit is a 400 naming both', async () => {
    const account = await sandboxAccount()
    await defineFields(harness.database.orm, account.accountId)
    const response = await create(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'add_tag', tag: 'a' },
        { type: 'branch', condition: { type: 'contact_field', field: 'shoe_size', op: 'is_set' } },
        { type: 'branch', condition: { type: 'contact_field', field: 'vip', op: 'greater_than', value: 1 } },
        { type: 'add_tag', tag: 'b' },
      ],
    })
    assert.equal(response.statusCode, 400, response.body)
    const error = errorOf(response)
    assert.equal(error.key, 'automation_invalid')
    assert.deepEqual(error.problems, [
      'steps[1].condition: shoe_size is not a custom field of this account',
      'steps[2].condition (vip): greater_than does not apply to a boolean field (it takes equals, not_equals, is_set, is_empty)',
    ])
    const list = (await account.request({ method: 'GET', url: '/v1/automations' })).json()
    assert.equal(list.automations.length, 0)
  })
})
