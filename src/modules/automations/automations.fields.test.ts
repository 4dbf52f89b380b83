import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import * as auto from '../../../test/helpers/automations.ts'
import { defineFields, setFieldValues } from '../../../test/helpers/fields.ts'

// Automation branches on the contact's custom fields (issue 33): the condition is read when the step runs, and one
// that does not fit the account's fields is refused on save, naming the step, the field and the rule.

auto.withAutomationsHarness()

describe('automation branches on custom fields', () => {
  test('a contact_field branch takes then or else by the contact’s value when the step runs', async () => {
    auto.harness.clock.set('2026-12-29T08:00:00Z')
    const account = await auto.sandboxAccount()
    await defineFields(auto.harness.database.orm, account.accountId)
    const automation = await auto.active(account, {
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
    const gold = await auto.createContact(account)
    const silver = await auto.createContact(account)
    const none = await auto.createContact(account)
    const db = auto.harness.database.orm
    await setFieldValues(db, account.accountId, gold, { level: 'gold', birthday: '1980-01-03' })
    await setFieldValues(db, account.accountId, silver, { level: 'silver', birthday: '1980-06-03' })
    for (const contactId of [gold, silver, none]) {
      await auto.trigger(account, automation.id, contactId)
    }
    await auto.drain()
    assert.deepEqual((await auto.tagsOf(account, gold)).sort(), ['birthday-soon', 'gold'])
    assert.deepEqual(await auto.tagsOf(account, silver), [])
    assert.deepEqual(await auto.tagsOf(account, none), [])
    const runs = await auto.runsOf(account, automation.id)
    const goldRun = runs.find((r: auto.Json) => r.contact_id === gold) as auto.Json
    assert.equal(goldRun.state, 'completed')
    assert.deepEqual(
      goldRun.steps.filter((s: auto.Json) => s.type === 'branch').map((s: auto.Json) => s.detail.condition),
      [true, true],
      JSON.stringify(goldRun.steps),
    )
  })

  test('a contact_field condition on an unknown field or with an op that does not fit is a 400 naming both', async () => {
    const account = await auto.sandboxAccount()
    await defineFields(auto.harness.database.orm, account.accountId)
    const response = await auto.create(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'add_tag', tag: 'a' },
        { type: 'branch', condition: { type: 'contact_field', field: 'shoe_size', op: 'is_set' } },
        { type: 'branch', condition: { type: 'contact_field', field: 'vip', op: 'greater_than', value: 1 } },
        { type: 'add_tag', tag: 'b' },
      ],
    })
    assert.equal(response.statusCode, 400, response.body)
    const error = auto.errorOf(response)
    assert.equal(error.key, 'automation_invalid')
    assert.deepEqual(error.problems, [
      'steps[1].condition: shoe_size is not a custom field of this account',
      'steps[2].condition (vip): greater_than does not apply to a boolean field (it takes equals, not_equals, is_set, is_empty)',
    ])
    const list = (await account.request({ method: 'GET', url: '/v1/automations' })).json()
    assert.equal(list.automations.length, 0)
  })
})
