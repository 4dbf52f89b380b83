import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import * as auto from '../../../test/helpers/automations.ts'
import { nextPhone } from '../../../test/helpers/fixtures.ts'
import { createKey, createTestAccount } from '../../../test/helpers/harness.ts'
import { startReceiver } from '../../../test/helpers/webhook-receiver.ts'
import { sandboxOutboxOf } from '../channels/index.ts'
import { nextTimeOfDay } from './automations.rules.ts'

auto.withAutomationsHarness()

describe('automations: create, read, change, delete', () => {
  test('POST answers 200 with a draft; GET, list, PATCH and DELETE work; another account sees 404', async () => {
    const account = await auto.sandboxAccount()
    const created = await auto.create(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'add_tag', tag: 'neu' }],
    })
    assert.equal(created.statusCode, 200, created.body)
    const body = created.json()
    assert.equal(body.status, 'draft')
    assert.equal(body.intent, 'transactional')
    assert.equal(body.notice, null)
    assert.match(body.signing_secret, /^whsec_[0-9a-f]{64}$/)
    assert.equal(body.webhook_url, null)

    const got = await account.request({ method: 'GET', url: `/v1/automations/${body.id}` })
    assert.equal(got.statusCode, 200)
    assert.equal(got.json().signing_secret, undefined)
    const list = await account.request({ method: 'GET', url: '/v1/automations' })
    assert.deepEqual(
      list.json().automations.map((a: auto.Json) => a.id),
      [body.id],
    )
    assert.equal(list.json().has_more, false)

    const patched = await account.request({
      method: 'PATCH',
      url: `/v1/automations/${body.id}`,
      payload: { name: 'Neu getaggt' },
    })
    assert.equal(patched.statusCode, 200)
    assert.equal(patched.json().name, 'Neu getaggt')

    const other = await createTestAccount(auto.harness)
    for (const [method, url] of [
      ['GET', `/v1/automations/${body.id}`],
      ['PATCH', `/v1/automations/${body.id}`],
      ['DELETE', `/v1/automations/${body.id}`],
      ['POST', `/v1/automations/${body.id}/activate`],
      ['GET', `/v1/automations/${body.id}/runs`],
    ] as const) {
      const response = await other.request({ method, url, ...(method === 'PATCH' ? { payload: { name: 'x' } } : {}) })
      assert.equal(response.statusCode, 404, `${method} ${url}`)
      assert.equal(auto.errorOf(response).code, 'not_found')
    }

    const deleted = await account.request({ method: 'DELETE', url: `/v1/automations/${body.id}` })
    assert.deepEqual(deleted.json(), { id: body.id, deleted: true })
    assert.equal((await account.request({ method: 'GET', url: `/v1/automations/${body.id}` })).statusCode, 404)
  })

  test('scopes: read lists, write creates and triggers, delete is separate from write', async () => {
    const account = await auto.sandboxAccount()
    const reader = await createKey(auto.harness, account.accountId, ['automations:read'])
    const writer = await createKey(auto.harness, account.accountId, ['automations:write'])
    const as = (key: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: auto.Json) =>
      auto.harness.app.inject({ method, url, payload, headers: { authorization: `Bearer ${key}` } })
    const body = { name: 'x', trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] }
    const refused = await as(reader, 'POST', '/v1/automations', body)
    assert.equal(refused.statusCode, 403)
    assert.equal(auto.errorOf(refused).key, 'apikey_scope_fehlt')
    const made = await as(writer, 'POST', '/v1/automations', body)
    assert.equal(made.statusCode, 200)
    assert.equal((await as(reader, 'GET', '/v1/automations')).statusCode, 200)
    assert.equal((await as(writer, 'GET', '/v1/automations')).statusCode, 403)
    assert.equal((await as(writer, 'DELETE', `/v1/automations/${made.json().id}`)).statusCode, 403)
    assert.equal((await as(reader, 'GET', '/v1/automation-webhooks')).statusCode, 403)
  })

  test('bad input is a 400 naming every problem, and nothing is stored', async () => {
    const account = await auto.sandboxAccount()
    const response = await auto.create(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'send_template', template_id: '00000000-0000-4000-8000-000000000000' },
        { type: 'wait', duration: { hours: 1 }, until_time: '09:00' },
        { type: 'branch', condition: { type: 'has_tag', tag: 'x' }, then_goto: 1 },
        { type: 'webhook', url: 'ftp://example.com/x' },
      ],
    })
    assert.equal(response.statusCode, 400)
    const error = auto.errorOf(response)
    assert.equal(error.code, 'bad_request')
    assert.equal(error.key, 'automation_invalid')
    assert.equal(error.problems.length, 4)
    for (const payload of [
      { trigger: { type: 'nope' }, steps: [{ type: 'add_tag', tag: 'a' }] },
      { trigger: { type: 'manual' }, steps: [] },
      { trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a'.repeat(41) }] },
      { trigger: { type: 'manual' }, steps: [{ type: 'teleport' }] },
    ]) {
      const bad = await auto.create(account, payload)
      assert.equal(bad.statusCode, 400, JSON.stringify(payload))
      assert.equal(auto.errorOf(bad).code, 'bad_request')
    }
    const list = await account.request({ method: 'GET', url: '/v1/automations' })
    assert.deepEqual(list.json().automations, [])
  })
})

describe('safety rules on create and update', () => {
  test('a newsletter intent gets a double opt-in step prepended; notice and its alias hinweis say so', async () => {
    const account = await auto.sandboxAccount()
    const response = await auto.create(account, {
      intent: 'newsletter',
      trigger: { type: 'tag_added', tag: 'interessent' },
      steps: [{ type: 'add_tag', tag: 'liste' }],
    })
    assert.equal(response.statusCode, 200)
    const body = response.json()
    assert.deepEqual(body.steps[0], { type: 'double_optin', channel: 'chat' })
    assert.match(body.notice, /double opt-in/)
    assert.equal(body.hinweis, body.notice)
  })

  test('a follow-up sequence in disguise is cut off after its first message, on PATCH too', async () => {
    const account = await auto.sandboxAccount()
    const template = await auto.approvedTemplate(account)
    const created = await auto.create(account, { trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] })
    const response = await account.request({
      method: 'PATCH',
      url: `/v1/automations/${created.json().id}`,
      payload: {
        steps: [
          { type: 'send_template', template_id: template },
          { type: 'wait', duration: { days: 2 } },
          { type: 'send_text', text: 'Wie war es?' },
        ],
      },
    })
    assert.equal(response.statusCode, 200, response.body)
    assert.deepEqual(response.json().steps, [{ type: 'send_template', template_id: template }])
    assert.match(response.json().notice, /follow-up sequence/)
  })
})

describe('triggers and steps', () => {
  test('contact.created starts a run: a tag is added and an approved template is sent through the send pipeline', async () => {
    const account = await auto.sandboxAccount()
    const template = await auto.approvedTemplate(account)
    const automation = await auto.active(account, {
      trigger: { type: 'contact_created' },
      steps: [
        { type: 'add_tag', tag: 'willkommen' },
        { type: 'send_template', template_id: template },
      ],
    })
    const contactId = await auto.createContact(account)
    const [pending] = await auto.runsOf(account, automation.id)
    assert.equal(pending.state, 'running')
    assert.equal(pending.contact_id, contactId)
    assert.equal(pending.source, 'event')
    await auto.drain()
    const [run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.deepEqual(await auto.tagsOf(account, contactId), ['willkommen'])
    // not confirmed: the send step is skipped with the reason, nothing sent
    assert.equal(run.steps[1].result, 'skipped')
    assert.equal(run.steps[1].reason, 'contact_not_optin')
    assert.equal((await sandboxOutboxOf(auto.harness.database.orm, account.accountId, 'chat')).length, 0)
  })

  test('opt-in confirmed starts a run whose template send reaches the sandbox once', async () => {
    const account = await auto.sandboxAccount()
    const template = await auto.approvedTemplate(account)
    const automation = await auto.active(account, {
      trigger: { type: 'optin_confirmed', channel: 'chat' },
      steps: [{ type: 'send_template', template_id: template }],
    })
    await auto.confirmedContact(account)
    await auto.drain()
    const [run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.equal(run.steps[0].result, 'queued')
    const send = await account.request({ method: 'GET', url: `/v1/sends/${run.steps[0].detail.send_id}` })
    assert.equal(send.statusCode, 200)
    assert.equal(send.json().status, 'sent')
    const outbox = await sandboxOutboxOf(auto.harness.database.orm, account.accountId, 'chat')
    assert.equal(outbox.length, 1)
  })

  test("an automation's template message leaves the conversation automated_only until the customer answers", async () => {
    const account = await auto.sandboxAccount()
    const template = await auto.approvedTemplate(account)
    await auto.active(account, {
      trigger: { type: 'optin_confirmed', channel: 'chat' },
      steps: [{ type: 'send_template', template_id: template }],
    })
    const phone = nextPhone()
    const contactId = await auto.createContact(account, { phone })
    await auto.confirm(account, contactId)
    await auto.drain()
    const conversation = async () => {
      const response = await account.request({ method: 'GET', url: '/v1/inbox/conversations' })
      assert.equal(response.statusCode, 200, response.body)
      const list = response.json().conversations.filter((c: auto.Json) => c.contact.id === contactId)
      assert.equal(list.length, 1, response.body)
      return list[0]
    }
    const before = await conversation()
    assert.equal(before.last_message.direction, 'outbound')
    assert.equal(before.automated_only, true, 'only the campaign message so far')
    const reply = await account.request({
      method: 'POST',
      url: '/v1/sandbox/inbound',
      payload: { from: phone, text: 'Danke!' },
    })
    assert.equal(reply.statusCode, 200, reply.body)
    assert.equal((await conversation()).automated_only, false, 'a real customer reaction')
  })

  test('tag added and a keyword in an inbound chat message start runs; other tags and words do not', async () => {
    const account = await auto.sandboxAccount()
    const byTag = await auto.active(account, {
      trigger: { type: 'tag_added', tag: 'vip' },
      steps: [{ type: 'add_tag', tag: 'vip-begruesst' }],
    })
    const byKeyword = await auto.active(account, {
      trigger: { type: 'keyword', keywords: ['Termin'] },
      steps: [{ type: 'add_tag', tag: 'termin-anfrage' }],
    })
    const contactId = await auto.createContact(account)
    await account.request({ method: 'POST', url: `/v1/contacts/${contactId}/tags`, payload: { tags: ['stamm'] } })
    assert.equal((await auto.runsOf(account, byTag.id)).length, 0)
    const tagged = await account.request({
      method: 'POST',
      url: `/v1/contacts/${contactId}/tags`,
      payload: { tags: ['vip'] },
    })
    assert.equal(tagged.statusCode, 200, tagged.body)
    assert.equal((await auto.runsOf(account, byTag.id)).length, 1)

    const phone = nextPhone()
    for (const text of ['Hallo!', 'Ich brauche einen termin bitte']) {
      const inbound = await account.request({
        method: 'POST',
        url: '/v1/sandbox/inbound',
        payload: { from: phone, text },
      })
      assert.equal(inbound.statusCode, 200, inbound.body)
    }
    await auto.drain()
    const [run] = await auto.runsOf(account, byKeyword.id)
    assert.equal(run.state, 'completed')
    assert.equal((await auto.runsOf(account, byKeyword.id)).length, 1)
    assert.ok((await auto.tagsOf(account, run.contact_id)).includes('termin-anfrage'))
    assert.deepEqual((await auto.tagsOf(account, contactId)).sort(), ['stamm', 'vip', 'vip-begruesst'])
  })

  test('a wait until a time of day that is exactly now goes on at once, not a day later', async () => {
    const account = await auto.sandboxAccount()
    const automation = await auto.active(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'wait', until_time: '09:30' },
        { type: 'add_tag', tag: 'morgens' },
      ],
    })
    const contactId = await auto.createContact(account)
    auto.harness.clock.set(nextTimeOfDay(auto.harness.clock.now(), '09:30', 'Europe/Berlin')) // the account's timezone
    await auto.trigger(account, automation.id, contactId)
    await auto.drain() // the clock has not moved
    const [run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'completed', JSON.stringify(run.steps))
    assert.deepEqual(await auto.tagsOf(account, contactId), ['morgens'])
  })

  test('a wait holds the run until the clock passes it; until_time waits for the time of day in the account zone', async () => {
    const account = await auto.sandboxAccount()
    const automation = await auto.active(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'wait', duration: { hours: 2 } },
        { type: 'add_tag', tag: 'nach-2h' },
        { type: 'wait', until_time: '09:30' },
        { type: 'add_tag', tag: 'morgens' },
      ],
    })
    const contactId = await auto.createContact(account)
    await auto.trigger(account, automation.id, contactId)
    await auto.drain()
    let [run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.equal(run.current_step, 0)
    assert.deepEqual(await auto.tagsOf(account, contactId), [])
    auto.harness.clock.advance(2 * auto.HOUR + 1000)
    await auto.drain()
    ;[run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.equal(run.current_step, 2)
    assert.deepEqual(await auto.tagsOf(account, contactId), ['nach-2h'])
    const until = new Date(run.wait_until)
    const shown = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      hour: '2-digit',
      minute: '2-digit',
    }).format(until)
    assert.equal(shown, '09:30')
    auto.harness.clock.set(new Date(until.getTime() + 1000))
    await auto.drain()
    ;[run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.equal(run.current_step, null)
    assert.deepEqual((await auto.tagsOf(account, contactId)).sort(), ['morgens', 'nach-2h'])
    assert.deepEqual(
      run.steps.map((s: auto.Json) => s.result),
      ['waiting', 'done', 'done', 'waiting', 'done', 'done'],
    )
  })

  test('a branch on a tag and on the trigger data picks the path', async () => {
    const account = await auto.sandboxAccount()
    const automation = await auto.active(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'branch', condition: { type: 'field', field: 'order.total', equals: 100 }, else_goto: 2 },
        { type: 'add_tag', tag: 'grosskunde' },
        { type: 'branch', condition: { type: 'has_tag', tag: 'grosskunde' }, then_goto: 'end' },
        { type: 'add_tag', tag: 'normal' },
      ],
    })
    const big = await auto.createContact(account)
    const small = await auto.createContact(account)
    for (const [contactId, total] of [
      [big, 100],
      [small, 5],
    ] as const) {
      await auto.trigger(account, automation.id, contactId, { order: { total } })
    }
    await auto.drain()
    assert.deepEqual(await auto.tagsOf(account, big), ['grosskunde'])
    assert.deepEqual(await auto.tagsOf(account, small), ['normal'])
  })

  test('free text outside the 24-hour window fails the run with the reason; inside it is sent', async () => {
    const account = await auto.sandboxAccount()
    const automation = await auto.active(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'send_text', text: 'Danke für deine Nachricht!' }],
    })
    const quiet = await auto.createContact(account)
    await auto.confirm(account, quiet)
    const phone = nextPhone()
    await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from: phone, text: 'Hallo' } })
    const contacts = await account.request({ method: 'GET', url: `/v1/contacts?q=${encodeURIComponent(phone)}` })
    const writer = contacts.json().contacts[0].id
    await auto.confirm(account, writer)
    for (const contactId of [quiet, writer]) {
      await auto.trigger(account, automation.id, contactId)
    }
    await auto.drain()
    const runs = await auto.runsOf(account, automation.id)
    const byContact = new Map(runs.map((r) => [r.contact_id, r]))
    assert.equal(byContact.get(quiet)?.state, 'failed')
    assert.match(byContact.get(quiet)?.reason, /send_failed/)
    assert.equal(byContact.get(writer)?.state, 'completed')
    assert.equal(byContact.get(writer)?.steps[0].result, 'done')
  })

  test('a double opt-in step starts the consent flow: the contact becomes pending', async () => {
    const account = await auto.sandboxAccount()
    const automation = await auto.active(account, {
      intent: 'newsletter',
      trigger: { type: 'manual' },
      steps: [{ type: 'add_tag', tag: 'newsletter-interesse' }],
    })
    const contactId = await auto.createContact(account)
    await auto.trigger(account, automation.id, contactId)
    await auto.drain()
    const contact = await account.request({ method: 'GET', url: `/v1/contacts/${contactId}` })
    assert.equal(contact.json().contact.optin_chat, 'pending')
    const [run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.equal(run.steps[0].type, 'double_optin')
    assert.equal(run.steps[0].result, 'done')
  })

  test('an outbound webhook step is signed like event deliveries; notify_team sends an e-mail', async () => {
    const receiver = await startReceiver({ now: () => auto.harness.clock.now() })
    try {
      const account = await auto.sandboxAccount({ email: true })
      const automation = await auto.active(account, {
        trigger: { type: 'manual' },
        steps: [
          { type: 'webhook', url: `${receiver.url}/crm` },
          { type: 'notify_team', to: ['chefin@shop.example'], subject: 'Neuer Lead', text: 'Bitte melden.' },
        ],
      })
      receiver.secret = automation.signing_secret
      const contactId = await auto.createContact(account)
      await auto.trigger(account, automation.id, contactId, { source: 'shop' })
      await auto.drain()
      const [delivery] = receiver.received
      assert.equal(delivery.verified, true, delivery.reason ?? '')
      assert.equal(delivery.event, 'automation.step')
      assert.equal(delivery.body.data.contact_id, contactId)
      assert.deepEqual(delivery.body.data.trigger, { source: 'shop' })
      const mails = await sandboxOutboxOf(auto.harness.database.orm, account.accountId, 'email')
      assert.equal(mails.length, 1)
      const [run] = await auto.runsOf(account, automation.id)
      assert.equal(run.state, 'completed')
    } finally {
      await receiver.close()
    }
  })

  test('a failing webhook step is retried and, after its attempts, fails the run with the status', async () => {
    const receiver = await startReceiver({ answer: () => 500 })
    try {
      const account = await auto.sandboxAccount()
      const automation = await auto.active(account, {
        trigger: { type: 'manual' },
        steps: [{ type: 'webhook', url: receiver.url }],
      })
      const contactId = await auto.createContact(account)
      await auto.trigger(account, automation.id, contactId)
      for (let i = 0; i < 6; i++) {
        await auto.drain()
        auto.harness.clock.advance(2 * auto.HOUR)
      }
      const [run] = await auto.runsOf(account, automation.id)
      assert.equal(run.state, 'failed')
      assert.equal(run.reason, 'http_500')
      assert.equal(receiver.received.length, 5)
    } finally {
      await receiver.close()
    }
  })
})
