import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { appMember, type Json } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import type { Role } from '../../platform/auth/people.tables.ts'

// POST /app/automations/check: the builder's dry run. It must say exactly what a save would change or refuse, and
// change nothing.

let harness: Harness
harnessPerFile((created) => {
  harness = created
})

let counter = 0

async function member(role: Role, account?: TestAccount) {
  const owned = account ?? (await createTestAccount(harness))
  const { call } = await appMember(harness, owned, { role })
  return { account: owned, check: (payload: unknown) => call('POST', '/app/automations/check', payload as Json) }
}

async function template(account: TestAccount): Promise<string> {
  const created = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: { name: `Danke ${process.pid} ${++counter}`, content: 'Hallo {{name}}, danke für deinen Einkauf.' },
  })
  assert.equal(created.statusCode, 201, created.body)
  return created.json().template.id
}

async function stored(account: TestAccount): Promise<number> {
  const list = await account.request({ method: 'GET', url: '/v1/automations' })
  return (list.json().automations as Json[]).length
}

describe('POST /app/automations/check', () => {
  test("the safety rules' changes are the ones a save makes, and nothing is stored", async () => {
    const m = await member('member')
    const id = await template(m.account)
    const definition = {
      name: 'Willkommen',
      intent: 'newsletter',
      trigger: { type: 'manual' },
      steps: [
        { type: 'branch', condition: { type: 'has_tag', tag: 'vip' }, then_goto: 1, else_goto: 4 },
        { type: 'send_template', template_id: id },
        { type: 'wait', duration: { days: 1 } },
        { type: 'send_text', text: 'Schon gesehen?' },
        { type: 'add_tag', tag: 'erinnert' },
      ],
    }
    const checked = await m.check(definition)
    assert.equal(checked.status, 200, JSON.stringify(checked.body))
    assert.deepEqual(checked.body.problems, [])
    assert.deepEqual(checked.body.changes, [
      { kind: 'followup_cut', kept_through: 1, removed_from: 2, removed_to: 4 },
      { kind: 'double_optin_prepended', channel: 'chat' },
    ])
    assert.equal(await stored(m.account), 0, 'a check stores nothing')

    const saved = await m.account.request({ method: 'POST', url: '/v1/automations', payload: definition })
    assert.equal(saved.statusCode, 200, saved.body)
    assert.deepEqual(checked.body.steps, saved.json().steps, 'the steps as the save stores them')
    assert.equal(checked.body.notice, saved.json().notice, 'the notice the save sets')
    assert.deepEqual(checked.body.steps[0], { type: 'double_optin', channel: 'chat' })
    assert.equal(checked.body.steps.length, 3)
    assert.equal(checked.body.steps[1].else_goto, 'end', 'a branch target beyond the cut ends the run')

    // a definition the rules leave alone: no change, no notice
    const plain = await m.check({ trigger: { type: 'webhook' }, steps: [{ type: 'add_tag', tag: 'kunde' }] })
    assert.equal(plain.status, 200)
    assert.deepEqual([plain.body.problems, plain.body.changes, plain.body.notice], [[], [], null])
    assert.deepEqual(plain.body.steps, [{ type: 'add_tag', tag: 'kunde' }])
    // a mailing list gets an e-mail double opt-in
    const list = await m.check({
      intent: 'mailing_list',
      trigger: { type: 'manual' },
      steps: [{ type: 'add_tag', tag: 'liste' }],
    })
    assert.deepEqual(list.body.changes, [{ kind: 'double_optin_prepended', channel: 'email' }])
    assert.equal(await stored(m.account), 1)
  })

  test('what a save refuses is listed with the same words, and another account’s template does not exist here', async () => {
    const m = await member('admin')
    const foreign = await template((await member('owner')).account)
    const definition = {
      name: 'Kaputt',
      trigger: { type: 'manual' },
      steps: [
        { type: 'send_template', template_id: foreign },
        { type: 'wait', duration: { hours: 1 }, until_time: '09:00' },
        { type: 'branch', condition: { type: 'has_tag', tag: 'x' }, then_goto: 1 },
        { type: 'webhook', url: 'ftp://example.com/x' },
      ],
    }
    const checked = await m.check(definition)
    assert.equal(checked.status, 200, JSON.stringify(checked.body))
    assert.equal(checked.body.problems.length, 4)
    assert.ok(
      checked.body.problems.includes(`steps[0]: template ${foreign} does not exist`),
      JSON.stringify(checked.body.problems),
    )
    const saved = await m.account.request({ method: 'POST', url: '/v1/automations', payload: definition })
    assert.equal(saved.statusCode, 400)
    assert.equal(saved.json().error.key, 'automation_invalid')
    assert.deepEqual(checked.body.problems, saved.json().error.problems, 'the same reasons as the refused save')
    assert.equal(await stored(m.account), 0)
  })

  test('a body the schema refuses is a 400 envelope; the viewer may not; no session is a 401', async () => {
    const m = await member('member')
    for (const payload of [
      {},
      { trigger: { type: 'nope' }, steps: [{ type: 'add_tag', tag: 'a' }] },
      { trigger: { type: 'manual' }, steps: [] },
      { intent: 'spam', trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] },
    ]) {
      const bad = await m.check(payload)
      assert.equal(bad.status, 400, JSON.stringify(payload))
      assert.equal(bad.body.error.code, 'bad_request')
      assert.equal(typeof bad.body.error.message, 'string')
    }
    const viewer = await member('viewer', m.account)
    const refused = await viewer.check({ trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] })
    assert.equal(refused.status, 403)
    assert.equal(refused.body.error.code, 'forbidden')
    const anonymous = await harness.app.inject({
      method: 'POST',
      url: '/app/automations/check',
      payload: { trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] },
    })
    assert.equal(anonymous.statusCode, 401)
  })

  test('a schema refusal names each field with its rule, so the console can say it in the member’s words', async () => {
    const m = await member('member')
    const missing = await m.check({ trigger: { type: 'webhook' }, steps: [{ type: 'add_tag' }] })
    assert.equal(missing.status, 400)
    assert.equal(missing.body.error.code, 'bad_request')
    assert.equal(missing.body.error.key, 'bad_request')
    assert.deepEqual(missing.body.error.fields, [{ path: 'body.steps.0.tag', rule: 'required' }])
    const long = await m.check({ trigger: { type: 'webhook' }, steps: [{ type: 'add_tag', tag: 'x'.repeat(41) }] })
    assert.equal(long.status, 400)
    assert.deepEqual(long.body.error.fields, [{ path: 'body.steps.0.tag', rule: 'maxLength', limit: 40 }])
    // the API keeps the spec's envelope: no fields there
    const v1 = await m.account.request({
      method: 'POST',
      url: '/v1/automations',
      payload: { name: 'x', trigger: { type: 'webhook' }, steps: [{ type: 'add_tag' }] },
    })
    assert.equal(v1.statusCode, 400)
    assert.deepEqual(Object.keys(v1.json().error).sort(), ['code', 'key', 'message'])
  })
})
