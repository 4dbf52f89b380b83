import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { drainJobs, sandboxAccount as fixtureAccount, nextPhone, setOptin } from '../../../test/helpers/fixtures.ts'
import {
  createHarness,
  createKey,
  createTestAccount,
  type Harness,
  type TestAccount,
} from '../../../test/helpers/harness.ts'
import { startReceiver } from '../../../test/helpers/webhook-receiver.ts'
import { pauseSending, resumeSending } from '../../platform/auth/accounts.service.ts'
import { channelsServiceFor, sandboxOutboxOf } from '../channels/index.ts'
import { followupsServiceFor } from '../followups/index.ts'
import { nextTimeOfDay } from './automations.rules.ts'

let harness: Harness

before(async () => {
  harness = await createHarness({ config: { allowPrivateTargets: true }, workers: true })
  // jobs run only inside drain(), so a test sees each state between steps
  await harness.jobs!.stop()
})
after(() => harness.close())

const HOUR = 3600_000
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
const deps = () => ({ config: harness.config, database: harness.database, clock: harness.clock })
let counter = 0

const drain = () => drainJobs(harness)

async function sandboxAccount(options: { email?: boolean } = {}) {
  const account = await fixtureAccount(harness, { messagesPerMonth: 100 })
  if (options.email) {
    await channelsServiceFor(deps()).connect(account.accountId, {
      channel: 'email',
      provider: 'sandbox',
      address: 'team@shop.example',
    })
  }
  return account
}

async function createContact(account: TestAccount, body: Json = {}): Promise<string> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/contacts',
    payload: { name: 'Erika Mustermann', phone: nextPhone(), ...body },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().contact.id
}

const confirm = (account: TestAccount, contactId: string) => setOptin(harness, account.accountId, contactId)

async function approvedTemplate(account: TestAccount): Promise<string> {
  const created = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: {
      name: `Danke ${process.pid} ${++counter}`,
      content: 'Hallo {{name}}, danke für deinen Einkauf bei uns.',
      language: 'de',
    },
  })
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().template.id
  const submitted = await account.request({ method: 'POST', url: `/v1/templates/${id}/submit` })
  assert.equal(submitted.json().template.provider_status, 'approved', submitted.body)
  return id
}

const create = (account: TestAccount, payload: Json) =>
  account.request({ method: 'POST', url: '/v1/automations', payload: { name: 'Willkommen', ...payload } })

async function active(account: TestAccount, payload: Json): Promise<Json> {
  const created = await create(account, payload)
  assert.equal(created.statusCode, 200, created.body)
  const activated = await account.request({ method: 'POST', url: `/v1/automations/${created.json().id}/activate` })
  assert.equal(activated.statusCode, 200, activated.body)
  return { ...activated.json(), signing_secret: created.json().signing_secret }
}

async function runsOf(account: TestAccount, id: string): Promise<Json[]> {
  const response = await account.request({ method: 'GET', url: `/v1/automations/${id}/runs` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().runs
}

async function tagsOf(account: TestAccount, contactId: string): Promise<string[]> {
  const response = await account.request({ method: 'GET', url: `/v1/contacts/${contactId}` })
  return response.json().contact.tags
}

const errorOf = (response: { json(): unknown }) => (response.json() as { error: Json }).error

describe('automations: create, read, change, delete', () => {
  test('POST answers 200 with a draft; GET, list, PATCH and DELETE work; another account sees 404', async () => {
    const account = await sandboxAccount()
    const created = await create(account, { trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'neu' }] })
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
      list.json().automations.map((a: Json) => a.id),
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

    const other = await createTestAccount(harness)
    for (const [method, url] of [
      ['GET', `/v1/automations/${body.id}`],
      ['PATCH', `/v1/automations/${body.id}`],
      ['DELETE', `/v1/automations/${body.id}`],
      ['POST', `/v1/automations/${body.id}/activate`],
      ['GET', `/v1/automations/${body.id}/runs`],
    ] as const) {
      const response = await other.request({ method, url, ...(method === 'PATCH' ? { payload: { name: 'x' } } : {}) })
      assert.equal(response.statusCode, 404, `${method} ${url}`)
      assert.equal(errorOf(response).code, 'not_found')
    }

    const deleted = await account.request({ method: 'DELETE', url: `/v1/automations/${body.id}` })
    assert.deepEqual(deleted.json(), { id: body.id, deleted: true })
    assert.equal((await account.request({ method: 'GET', url: `/v1/automations/${body.id}` })).statusCode, 404)
  })

  test('scopes: read lists, write creates and triggers, delete is separate from write', async () => {
    const account = await sandboxAccount()
    const reader = await createKey(harness, account.accountId, ['automations:read'])
    const writer = await createKey(harness, account.accountId, ['automations:write'])
    const as = (key: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: Json) =>
      harness.app.inject({ method, url, payload, headers: { authorization: `Bearer ${key}` } })
    const body = { name: 'x', trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] }
    const refused = await as(reader, 'POST', '/v1/automations', body)
    assert.equal(refused.statusCode, 403)
    assert.equal(errorOf(refused).key, 'apikey_scope_fehlt')
    const made = await as(writer, 'POST', '/v1/automations', body)
    assert.equal(made.statusCode, 200)
    assert.equal((await as(reader, 'GET', '/v1/automations')).statusCode, 200)
    assert.equal((await as(writer, 'GET', '/v1/automations')).statusCode, 403)
    assert.equal((await as(writer, 'DELETE', `/v1/automations/${made.json().id}`)).statusCode, 403)
    assert.equal((await as(reader, 'GET', '/v1/automation-webhooks')).statusCode, 403)
  })

  test('bad input is a 400 naming every problem, and nothing is stored', async () => {
    const account = await sandboxAccount()
    const response = await create(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'send_template', template_id: '00000000-0000-4000-8000-000000000000' },
        { type: 'wait', duration: { hours: 1 }, until_time: '09:00' },
        { type: 'branch', condition: { type: 'has_tag', tag: 'x' }, then_goto: 1 },
        { type: 'webhook', url: 'ftp://example.com/x' },
      ],
    })
    assert.equal(response.statusCode, 400)
    const error = errorOf(response)
    assert.equal(error.code, 'bad_request')
    assert.equal(error.key, 'automation_invalid')
    assert.equal(error.problems.length, 4)
    for (const payload of [
      { trigger: { type: 'nope' }, steps: [{ type: 'add_tag', tag: 'a' }] },
      { trigger: { type: 'manual' }, steps: [] },
      { trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a'.repeat(41) }] },
      { trigger: { type: 'manual' }, steps: [{ type: 'teleport' }] },
    ]) {
      const bad = await create(account, payload)
      assert.equal(bad.statusCode, 400, JSON.stringify(payload))
      assert.equal(errorOf(bad).code, 'bad_request')
    }
    const list = await account.request({ method: 'GET', url: '/v1/automations' })
    assert.deepEqual(list.json().automations, [])
  })
})

describe('safety rules on create and update', () => {
  test('a newsletter intent gets a double opt-in step prepended; notice and its alias hinweis say so', async () => {
    const account = await sandboxAccount()
    const response = await create(account, {
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
    const account = await sandboxAccount()
    const template = await approvedTemplate(account)
    const created = await create(account, { trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] })
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
    const account = await sandboxAccount()
    const template = await approvedTemplate(account)
    const automation = await active(account, {
      trigger: { type: 'contact_created' },
      steps: [
        { type: 'add_tag', tag: 'willkommen' },
        { type: 'send_template', template_id: template },
      ],
    })
    const contactId = await createContact(account)
    const [pending] = await runsOf(account, automation.id)
    assert.equal(pending.state, 'running')
    assert.equal(pending.contact_id, contactId)
    assert.equal(pending.source, 'event')
    await drain()
    const [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.deepEqual(await tagsOf(account, contactId), ['willkommen'])
    // not confirmed: the send step is skipped with the reason, nothing sent
    assert.equal(run.steps[1].result, 'skipped')
    assert.equal(run.steps[1].reason, 'contact_not_optin')
    assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).length, 0)
  })

  test('opt-in confirmed starts a run whose template send reaches the sandbox once', async () => {
    const account = await sandboxAccount()
    const template = await approvedTemplate(account)
    const automation = await active(account, {
      trigger: { type: 'optin_confirmed', channel: 'chat' },
      steps: [{ type: 'send_template', template_id: template }],
    })
    const contactId = await createContact(account)
    await confirm(account, contactId)
    await drain()
    const [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.equal(run.steps[0].result, 'queued')
    const send = await account.request({ method: 'GET', url: `/v1/sends/${run.steps[0].detail.send_id}` })
    assert.equal(send.statusCode, 200)
    assert.equal(send.json().status, 'sent')
    const outbox = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.equal(outbox.length, 1)
  })

  test("an automation's template message leaves the conversation automated_only until the customer answers", async () => {
    const account = await sandboxAccount()
    const template = await approvedTemplate(account)
    await active(account, {
      trigger: { type: 'optin_confirmed', channel: 'chat' },
      steps: [{ type: 'send_template', template_id: template }],
    })
    const phone = nextPhone()
    const contactId = await createContact(account, { phone })
    await confirm(account, contactId)
    await drain()
    const conversation = async () => {
      const response = await account.request({ method: 'GET', url: '/v1/inbox/conversations' })
      assert.equal(response.statusCode, 200, response.body)
      const list = response.json().conversations.filter((c: Json) => c.contact.id === contactId)
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
    const account = await sandboxAccount()
    const byTag = await active(account, {
      trigger: { type: 'tag_added', tag: 'vip' },
      steps: [{ type: 'add_tag', tag: 'vip-begruesst' }],
    })
    const byKeyword = await active(account, {
      trigger: { type: 'keyword', keywords: ['Termin'] },
      steps: [{ type: 'add_tag', tag: 'termin-anfrage' }],
    })
    const contactId = await createContact(account)
    await account.request({ method: 'POST', url: `/v1/contacts/${contactId}/tags`, payload: { tags: ['stamm'] } })
    assert.equal((await runsOf(account, byTag.id)).length, 0)
    const tagged = await account.request({
      method: 'POST',
      url: `/v1/contacts/${contactId}/tags`,
      payload: { tags: ['vip'] },
    })
    assert.equal(tagged.statusCode, 200, tagged.body)
    assert.equal((await runsOf(account, byTag.id)).length, 1)

    const phone = nextPhone()
    for (const text of ['Hallo!', 'Ich brauche einen termin bitte']) {
      const inbound = await account.request({
        method: 'POST',
        url: '/v1/sandbox/inbound',
        payload: { from: phone, text },
      })
      assert.equal(inbound.statusCode, 200, inbound.body)
    }
    await drain()
    const [run] = await runsOf(account, byKeyword.id)
    assert.equal(run.state, 'completed')
    assert.equal((await runsOf(account, byKeyword.id)).length, 1)
    assert.ok((await tagsOf(account, run.contact_id)).includes('termin-anfrage'))
    assert.deepEqual((await tagsOf(account, contactId)).sort(), ['stamm', 'vip', 'vip-begruesst'])
  })

  test('a wait until a time of day that is exactly now goes on at once, not a day later', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'wait', until_time: '09:30' },
        { type: 'add_tag', tag: 'morgens' },
      ],
    })
    const contactId = await createContact(account)
    harness.clock.set(nextTimeOfDay(harness.clock.now(), '09:30', 'Europe/Berlin')) // the account's timezone
    const started = await account.request({
      method: 'POST',
      url: `/v1/automations/${automation.id}/trigger`,
      payload: { contact_id: contactId },
    })
    assert.equal(started.statusCode, 202, started.body)
    await drain() // the clock has not moved
    const [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed', JSON.stringify(run.steps))
    assert.deepEqual(await tagsOf(account, contactId), ['morgens'])
  })

  test('a wait holds the run until the clock passes it; until_time waits for the time of day in the account zone', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'wait', duration: { hours: 2 } },
        { type: 'add_tag', tag: 'nach-2h' },
        { type: 'wait', until_time: '09:30' },
        { type: 'add_tag', tag: 'morgens' },
      ],
    })
    const contactId = await createContact(account)
    const started = await account.request({
      method: 'POST',
      url: `/v1/automations/${automation.id}/trigger`,
      payload: { contact_id: contactId },
    })
    assert.equal(started.statusCode, 202, started.body)
    await drain()
    let [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.equal(run.current_step, 0)
    assert.deepEqual(await tagsOf(account, contactId), [])
    harness.clock.advance(2 * HOUR + 1000)
    await drain()
    ;[run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.equal(run.current_step, 2)
    assert.deepEqual(await tagsOf(account, contactId), ['nach-2h'])
    const until = new Date(run.wait_until)
    const shown = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      hour: '2-digit',
      minute: '2-digit',
    }).format(until)
    assert.equal(shown, '09:30')
    harness.clock.set(new Date(until.getTime() + 1000))
    await drain()
    ;[run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.equal(run.current_step, null)
    assert.deepEqual((await tagsOf(account, contactId)).sort(), ['morgens', 'nach-2h'])
    assert.deepEqual(
      run.steps.map((s: Json) => s.result),
      ['waiting', 'done', 'done', 'waiting', 'done', 'done'],
    )
  })

  test('a branch on a tag and on the trigger data picks the path', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'branch', condition: { type: 'field', field: 'order.total', equals: 100 }, else_goto: 2 },
        { type: 'add_tag', tag: 'grosskunde' },
        { type: 'branch', condition: { type: 'has_tag', tag: 'grosskunde' }, then_goto: 'end' },
        { type: 'add_tag', tag: 'normal' },
      ],
    })
    const big = await createContact(account)
    const small = await createContact(account)
    for (const [contactId, total] of [
      [big, 100],
      [small, 5],
    ] as const) {
      const response = await account.request({
        method: 'POST',
        url: `/v1/automations/${automation.id}/trigger`,
        payload: { contact_id: contactId, data: { order: { total } } },
      })
      assert.equal(response.statusCode, 202)
    }
    await drain()
    assert.deepEqual(await tagsOf(account, big), ['grosskunde'])
    assert.deepEqual(await tagsOf(account, small), ['normal'])
  })

  test('free text outside the 24-hour window fails the run with the reason; inside it is sent', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'send_text', text: 'Danke für deine Nachricht!' }],
    })
    const quiet = await createContact(account)
    await confirm(account, quiet)
    const phone = nextPhone()
    await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from: phone, text: 'Hallo' } })
    const contacts = await account.request({ method: 'GET', url: `/v1/contacts?q=${encodeURIComponent(phone)}` })
    const writer = contacts.json().contacts[0].id
    await confirm(account, writer)
    for (const contactId of [quiet, writer]) {
      await account.request({
        method: 'POST',
        url: `/v1/automations/${automation.id}/trigger`,
        payload: { contact_id: contactId },
      })
    }
    await drain()
    const runs = await runsOf(account, automation.id)
    const byContact = new Map(runs.map((r) => [r.contact_id, r]))
    assert.equal(byContact.get(quiet)?.state, 'failed')
    assert.match(byContact.get(quiet)?.reason, /send_failed/)
    assert.equal(byContact.get(writer)?.state, 'completed')
    assert.equal(byContact.get(writer)?.steps[0].result, 'done')
  })

  test('a double opt-in step starts the consent flow: the contact becomes pending', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, {
      intent: 'newsletter',
      trigger: { type: 'manual' },
      steps: [{ type: 'add_tag', tag: 'newsletter-interesse' }],
    })
    const contactId = await createContact(account)
    await account.request({
      method: 'POST',
      url: `/v1/automations/${automation.id}/trigger`,
      payload: { contact_id: contactId },
    })
    await drain()
    const contact = await account.request({ method: 'GET', url: `/v1/contacts/${contactId}` })
    assert.equal(contact.json().contact.optin_chat, 'pending')
    const [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.equal(run.steps[0].type, 'double_optin')
    assert.equal(run.steps[0].result, 'done')
  })

  test('an outbound webhook step is signed like event deliveries; notify_team sends an e-mail', async () => {
    const receiver = await startReceiver({ now: () => harness.clock.now() })
    try {
      const account = await sandboxAccount({ email: true })
      const automation = await active(account, {
        trigger: { type: 'manual' },
        steps: [
          { type: 'webhook', url: `${receiver.url}/crm` },
          { type: 'notify_team', to: ['chefin@shop.example'], subject: 'Neuer Lead', text: 'Bitte melden.' },
        ],
      })
      receiver.secret = automation.signing_secret
      const contactId = await createContact(account)
      await account.request({
        method: 'POST',
        url: `/v1/automations/${automation.id}/trigger`,
        payload: { contact_id: contactId, data: { source: 'shop' } },
      })
      await drain()
      const [delivery] = receiver.received
      assert.equal(delivery.verified, true, delivery.reason ?? '')
      assert.equal(delivery.event, 'automation.step')
      assert.equal(delivery.body.data.contact_id, contactId)
      assert.deepEqual(delivery.body.data.trigger, { source: 'shop' })
      const mails = await sandboxOutboxOf(harness.database.orm, account.accountId, 'email')
      assert.equal(mails.length, 1)
      const [run] = await runsOf(account, automation.id)
      assert.equal(run.state, 'completed')
    } finally {
      await receiver.close()
    }
  })

  test('a failing webhook step is retried and, after its attempts, fails the run with the status', async () => {
    const receiver = await startReceiver({ answer: () => 500 })
    try {
      const account = await sandboxAccount()
      const automation = await active(account, {
        trigger: { type: 'manual' },
        steps: [{ type: 'webhook', url: receiver.url }],
      })
      const contactId = await createContact(account)
      await account.request({
        method: 'POST',
        url: `/v1/automations/${automation.id}/trigger`,
        payload: { contact_id: contactId },
      })
      for (let i = 0; i < 6; i++) {
        await drain()
        harness.clock.advance(2 * HOUR)
      }
      const [run] = await runsOf(account, automation.id)
      assert.equal(run.state, 'failed')
      assert.equal(run.reason, 'http_500')
      assert.equal(receiver.received.length, 5)
    } finally {
      await receiver.close()
    }
  })
})

describe('trigger route, pause and deletion', () => {
  test('409 while not active; Idempotency-Key replays the first run; another account’s contact is 404', async () => {
    const account = await sandboxAccount()
    const created = await create(account, { trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] })
    const id = created.json().id
    const contactId = await createContact(account)
    const trigger = (headers: Record<string, string> = {}, contact = contactId) =>
      account.request({
        method: 'POST',
        url: `/v1/automations/${id}/trigger`,
        payload: { contact_id: contact },
        headers,
      })
    const draft = await trigger()
    assert.equal(draft.statusCode, 409)
    assert.equal(errorOf(draft).code, 'automation_not_active')
    await account.request({ method: 'POST', url: `/v1/automations/${id}/activate` })
    const first = await trigger({ 'idempotency-key': 'trigger-1' })
    const again = await trigger({ 'idempotency-key': 'trigger-1' })
    assert.equal(first.statusCode, 202)
    assert.equal(again.headers['idempotent-replayed'], 'true')
    assert.equal(again.json().run_id, first.json().run_id)
    assert.equal((await runsOf(account, id)).length, 1)
    const stranger = await createContact(await sandboxAccount())
    assert.equal((await trigger({}, stranger)).statusCode, 404)
    const run = await account.request({ method: 'GET', url: `/v1/automations/${id}/runs/${first.json().run_id}` })
    assert.equal(run.statusCode, 200)
    assert.equal(run.json().state, 'running')
  })

  test('pausing holds runs before their next step; activating again lets them go on', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'add_tag', tag: 'weiter' }],
    })
    const contactId = await createContact(account)
    await account.request({
      method: 'POST',
      url: `/v1/automations/${automation.id}/trigger`,
      payload: { contact_id: contactId },
    })
    await account.request({ method: 'POST', url: `/v1/automations/${automation.id}/pause` })
    await drain()
    let [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.deepEqual(await tagsOf(account, contactId), [])
    await account.request({ method: 'POST', url: `/v1/automations/${automation.id}/activate` })
    await drain()
    ;[run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.deepEqual(await tagsOf(account, contactId), ['weiter'])
  })

  test('paused sending holds a send step; it goes once sending is resumed', async () => {
    const account = await sandboxAccount()
    const template = await approvedTemplate(account)
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'send_template', template_id: template }],
    })
    const contactId = await createContact(account)
    await confirm(account, contactId)
    await pauseSending(harness.database.orm, account.accountId)
    await account.request({
      method: 'POST',
      url: `/v1/automations/${automation.id}/trigger`,
      payload: { contact_id: contactId },
    })
    await drain()
    let [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).length, 0)
    await resumeSending(harness.database.orm, account.accountId)
    harness.clock.advance(10 * 60_000)
    await drain()
    ;[run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).length, 1)
  })

  test('deleting a contact removes its runs (counted); a template in use cannot be deleted', async () => {
    const account = await sandboxAccount()
    const template = await approvedTemplate(account)
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'wait', duration: { hours: 1 } },
        { type: 'send_template', template_id: template },
      ],
    })
    const contactId = await createContact(account)
    await account.request({
      method: 'POST',
      url: `/v1/automations/${automation.id}/trigger`,
      payload: { contact_id: contactId },
    })
    await drain()
    const removed = await account.request({ method: 'DELETE', url: `/v1/contacts/${contactId}` })
    assert.equal(removed.statusCode, 200, removed.body)
    assert.equal(removed.json().removed.automation_runs, 1)
    assert.deepEqual(await runsOf(account, automation.id), [])
    harness.clock.advance(2 * HOUR)
    await drain()
    assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).length, 0)
    const refused = await account.request({ method: 'DELETE', url: `/v1/templates/${template}` })
    assert.equal(refused.statusCode, 409)
    assert.equal(errorOf(refused).code, 'template_in_use')
    assert.match(errorOf(refused).used_by[0], /automation "Willkommen"/)
  })
})

describe('webhook addresses of automations', () => {
  test('a POST with the secret finds or creates the contact and starts a run; the address shows its counts', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, {
      trigger: { type: 'webhook' },
      steps: [{ type: 'add_tag', tag: 'shop-kauf' }],
    })
    assert.match(automation.webhook_url, /^http:\/\/herold\.test\/public\/automation-hooks\/[0-9a-f-]{36}\/[\w-]{32}$/)
    const path = new URL(automation.webhook_url).pathname
    let [address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
      .automation_webhooks
    assert.equal(address.kind, 'webhook')
    assert.equal(address.state, 'waiting_for_first_event')
    assert.equal(address.zustand, 'wartet_auf_verbindung')
    assert.equal(address.url, automation.webhook_url)

    const email = `kauf-${++counter}@example.com`
    const posted = await harness.app.inject({
      method: 'POST',
      url: path,
      payload: { email, name: 'Kai Käufer', order: 17 },
    })
    assert.equal(posted.statusCode, 202, posted.body)
    await drain()
    const [run] = await runsOf(account, automation.id)
    assert.equal(run.id, posted.json().run_id)
    assert.equal(run.state, 'completed')
    const contact = await account.request({ method: 'GET', url: `/v1/contacts/${posted.json().contact_id}` })
    assert.equal(contact.json().contact.email, email)
    assert.equal(contact.json().contact.optin_email, 'none')
    assert.deepEqual(contact.json().contact.tags, ['shop-kauf'])
    ;[address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json().automation_webhooks
    assert.equal(address.state, 'running')
    assert.equal(address.zustand, 'laeuft')
    assert.equal(address.event_count, 1)
    assert.equal(address.anzahl_ereignisse, 1)
    assert.equal(address.art, 'webhook')
    assert.ok(address.first_event_at)
  })

  test('a wrong secret is 404 and stores nothing; no address is 422 with last_error; JSON only; size-limited', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, { trigger: { type: 'webhook' }, steps: [{ type: 'add_tag', tag: 'x' }] })
    const path = new URL(automation.webhook_url).pathname
    const wrong = await harness.app.inject({
      method: 'POST',
      url: `${path.slice(0, -4)}AAAA`,
      payload: { email: 'a@b.de' },
    })
    assert.equal(wrong.statusCode, 404)
    assert.equal(errorOf(wrong).code, 'not_found')
    const unknown = await harness.app.inject({
      method: 'POST',
      url: '/public/automation-hooks/00000000-0000-4000-8000-000000000000/secret',
      payload: { email: 'a@b.de' },
    })
    assert.equal(unknown.statusCode, 404)
    const noAddress = await harness.app.inject({ method: 'POST', url: path, payload: { order: 1 } })
    assert.equal(noAddress.statusCode, 422)
    assert.equal(errorOf(noAddress).key, 'contact_address_missing')
    const form = await harness.app.inject({
      method: 'POST',
      url: path,
      payload: 'email=a@b.de',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    assert.equal(form.statusCode, 415)
    const huge = await harness.app.inject({
      method: 'POST',
      url: path,
      payload: { email: 'a@b.de', pad: 'x'.repeat(70_000) },
    })
    assert.equal(huge.statusCode, 413)
    assert.deepEqual(await runsOf(account, automation.id), [])
    const [address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
      .automation_webhooks
    assert.match(address.last_error, /email or a phone/)
    assert.equal(address.letzter_fehler, address.last_error)
    assert.equal(address.event_count, 0)
  })

  test('a paused automation’s address is not_connected and refuses with 422; internal triggers are listed as internal', async () => {
    const account = await sandboxAccount()
    const hook = await active(account, { trigger: { type: 'webhook' }, steps: [{ type: 'add_tag', tag: 'x' }] })
    await account.request({ method: 'POST', url: `/v1/automations/${hook.id}/pause` })
    await create(account, {
      name: 'Intern',
      trigger: { type: 'contact_created' },
      steps: [{ type: 'add_tag', tag: 'y' }],
    })
    const refused = await harness.app.inject({
      method: 'POST',
      url: new URL(hook.webhook_url).pathname,
      payload: { email: 'z@b.de' },
    })
    assert.equal(refused.statusCode, 422)
    const addresses = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
      .automation_webhooks
    const byKind = new Map(addresses.map((a: Json) => [a.kind, a]))
    assert.equal((byKind.get('webhook') as Json).state, 'not_connected')
    assert.equal((byKind.get('webhook') as Json).zustand, 'nicht_verbunden')
    assert.equal((byKind.get('internal') as Json).state, 'internal')
    assert.equal((byKind.get('internal') as Json).art, 'intern')
    assert.equal((byKind.get('internal') as Json).url, null)
  })

  test('a calendar feed starts a run before each event with an attendee (offset), and a reschedule moves it', async () => {
    let feedText = ''
    const feed = http.createServer((_request, response) => {
      response.setHeader('content-type', 'text/calendar')
      response.end(feedText)
    })
    await new Promise<void>((resolve) => feed.listen(0, '127.0.0.1', resolve))
    try {
      const start = new Date(harness.clock.now().getTime() + 3 * 24 * HOUR)
      const stamp = (d: Date) =>
        d
          .toISOString()
          .replace(/[-:]/g, '')
          .replace(/\.\d{3}/, '')
      const email = `termin-${++counter}@example.com`
      const calendar = (at: Date) =>
        [
          'BEGIN:VCALENDAR',
          'VERSION:2.0',
          'PRODID:-//Praxis//DE',
          'BEGIN:VEVENT',
          'UID:t-1@praxis',
          `DTSTART:${stamp(at)}`,
          'SUMMARY:Kontrolltermin',
          `ATTENDEE;CN=Tina Termin:mailto:${email}`,
          'END:VEVENT',
          'END:VCALENDAR',
          '',
        ].join('\r\n')
      feedText = calendar(start)
      const account = await sandboxAccount()
      const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/praxis.ics`
      const automation = await active(account, {
        trigger: { type: 'calendar', feed_url: url, offset_minutes: 24 * 60, poll_minutes: 60 },
        steps: [{ type: 'add_tag', tag: 'erinnert' }],
      })
      await drain()
      let [address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
        .automation_webhooks
      assert.equal(address.kind, 'calendar')
      assert.equal(address.art, 'kalender')
      assert.equal(address.state, 'running')
      assert.equal(address.event_count, 1)
      assert.deepEqual(await runsOf(account, automation.id), [])

      // rescheduled a day later: the first start is dropped, the new one is a day later
      feedText = calendar(new Date(start.getTime() + 24 * HOUR))
      harness.clock.advance(HOUR + 1000)
      await drain()
      harness.clock.advance(2 * 24 * HOUR - HOUR)
      await drain()
      assert.deepEqual(await runsOf(account, automation.id), [])
      harness.clock.advance(24 * HOUR)
      await drain()
      const runs = await runsOf(account, automation.id)
      assert.equal(runs.length, 1)
      assert.equal(runs[0].source, 'calendar')
      assert.equal(runs[0].state, 'completed')
      const contact = await account.request({ method: 'GET', url: `/v1/contacts/${runs[0].contact_id}` })
      assert.equal(contact.json().contact.email, email)
      assert.deepEqual(contact.json().contact.tags, ['erinnert'])
      ;[address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json().automation_webhooks
      assert.equal(address.last_error, null)

      feedText = 'not a calendar'
      harness.clock.advance(2 * HOUR)
      await drain()
      ;[address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json().automation_webhooks
      assert.match(address.last_error, /not valid iCalendar/)
    } finally {
      await new Promise((resolve) => feed.close(resolve))
    }
  })
})

describe('automations: the enroll_followup step', () => {
  async function sequence(account: TestAccount, name: string, trigger = { type: 'tag_added' as const, tag: 'nie' }) {
    return followupsServiceFor(deps()).create(
      { accountId: account.accountId, account: { language: 'de' } },
      {
        name,
        trigger,
        steps: [{ text: 'Hallo {{name}}, hier ist dein erster Tipp.', delay: { amount: 2, unit: 'hours' } }],
      },
    )
  }

  test('a follow-up sequence that does not exist in the account is a 400 automation_invalid on create and update', async () => {
    const account = await sandboxAccount()
    const other = await sandboxAccount()
    const foreign = await sequence(other, 'Fremd')
    for (const followup_id of [foreign.id, '00000000-0000-4000-8000-000000000000']) {
      const response = await create(account, {
        trigger: { type: 'manual' },
        steps: [{ type: 'enroll_followup', followup_id }],
      })
      assert.equal(response.statusCode, 400, response.body)
      assert.equal(errorOf(response).code, 'bad_request')
      assert.equal(errorOf(response).key, 'automation_invalid')
      assert.match(errorOf(response).message, /follow-up sequence/)
    }
    const malformed = await create(account, { trigger: { type: 'manual' }, steps: [{ type: 'enroll_followup' }] })
    assert.equal(malformed.statusCode, 400)
    const own = await sequence(account, 'Eigen')
    const created = await create(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'enroll_followup', followup_id: own.id }],
    })
    assert.equal(created.statusCode, 200, created.body)
    assert.deepEqual(created.json().steps, [{ type: 'enroll_followup', followup_id: own.id }])
    const changed = await account.request({
      method: 'PATCH',
      url: `/v1/automations/${created.json().id}`,
      payload: { steps: [{ type: 'enroll_followup', followup_id: foreign.id }] },
    })
    assert.equal(changed.statusCode, 400)
    assert.equal(errorOf(changed).key, 'automation_invalid')
  })

  test('a run enrolls the contact: its step goes out on time; not active or already enrolled is skipped with the reason', async () => {
    const account = await sandboxAccount()
    const target = await sequence(account, 'Ziel')
    const drafted = await sequence(account, 'Entwurf')
    const activated = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${target.id}`,
      payload: { status: 'active' },
    })
    assert.equal(activated.statusCode, 200, activated.body)
    const automation = await active(account, {
      trigger: { type: 'contact_created' },
      steps: [
        { type: 'enroll_followup', followup_id: target.id },
        { type: 'enroll_followup', followup_id: drafted.id },
        { type: 'enroll_followup', followup_id: target.id },
      ],
    })
    const contactId = await createContact(account)
    await confirm(account, contactId)
    await drain()
    const [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.deepEqual(
      run.steps.map((s: Json) => [s.type, s.result, s.reason]),
      [
        ['enroll_followup', 'done', null],
        ['enroll_followup', 'skipped', 'sequence_not_active'],
        ['enroll_followup', 'skipped', 'already_enrolled'],
      ],
    )
    const view = (await account.request({ method: 'GET', url: `/v1/followups/${target.id}` })).json().followup
    assert.deepEqual(view.enrollments, { active: 1, completed: 0, stopped: 0 })
    harness.clock.advance(2 * HOUR + 1000)
    await drain()
    const sent = (await account.request({ method: 'GET', url: `/v1/followups/${target.id}` })).json().followup
    assert.equal(sent.steps[0].counts.sent, 1)
    assert.deepEqual(sent.enrollments, { active: 0, completed: 1, stopped: 0 })
    const outbox = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.equal(outbox.length, 1)
  })
})
