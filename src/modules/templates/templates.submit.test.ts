import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { beforeEach, describe, test } from 'node:test'
import { cloudChatAccount, cloudNumber } from '../../../test/helpers/cloud-account.ts'
import { type FakeGraph, graphHarnessPerFile, startFakeGraph } from '../../../test/helpers/fake-graph.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { TEMPLATE_POLL_INTERVAL_MS } from './index.ts'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

/**
 * A fake Graph API on loopback for the message_templates edge: it keeps what was submitted by (name, language),
 * answers with the status set in `decisions` (default PENDING), and can be told to fail.
 */
const NUMBER = cloudNumber('submit', '10900000001', '9900112233', '+4930123499')
const { accessToken: TOKEN, wabaId: WABA } = NUMBER

interface GraphRequest {
  method: string
  path: string
  query: URLSearchParams
  body: Json | null
}

let graph: FakeGraph
const requests: GraphRequest[] = []
/** how the fake answers message_templates calls: normally, with 500, or by closing the connection unanswered */
let mode: 'ok' | 'error' | 'hangup' = 'ok'
/** the status the fake reports for a template name (GET) and answers on submission (POST) */
const decisions = new Map<string, { status: string; rejected_reason?: string }>()
let templateCounter = 0

async function startGraph(): Promise<FakeGraph> {
  graph = await startFakeGraph(({ req, url, raw, send }) => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      return send(401, { error: { message: 'Invalid OAuth access token', code: 190 } })
    }
    if (url.pathname !== `/v21.0/${WABA}/message_templates`) {
      return send(404, { error: { message: 'unknown path', code: 803 } })
    }
    requests.push({
      method: req.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      body: raw ? JSON.parse(raw) : null,
    })
    if (mode === 'hangup') return req.socket.destroy()
    if (mode === 'error') return send(500, { error: { message: 'An unknown error has occurred.', code: 1 } })
    if (req.method === 'POST') {
      const decision = decisions.get(String(JSON.parse(raw).name)) ?? { status: 'PENDING' }
      return send(200, {
        id: `tpl-${++templateCounter}`,
        status: decision.status,
        category: JSON.parse(raw).category,
      })
    }
    if (req.method === 'GET') {
      const name = url.searchParams.get('name') ?? ''
      const decision = decisions.get(name) ?? { status: 'PENDING' }
      return send(200, {
        data: [
          {
            name,
            language: url.searchParams.get('language'),
            status: decision.status,
            rejected_reason: decision.rejected_reason ?? 'NONE',
            id: 'tpl-x',
          },
        ],
      })
    }
    if (req.method === 'DELETE') return send(200, { success: true })
    send(405, { error: { message: 'method', code: 100 } })
  })
  return graph
}

let harness: Harness

graphHarnessPerFile(startGraph, (created) => {
  harness = created
})
beforeEach(() => {
  mode = 'ok'
})

const channels = () => harness.services.channels

const cloudAccount = (options: Parameters<typeof createTestAccount>[1] = {}): Promise<TestAccount> =>
  cloudChatAccount(harness, NUMBER, options)

async function sandboxAccount(options: Parameters<typeof createTestAccount>[1] = {}): Promise<TestAccount> {
  const account = await createTestAccount(harness, options)
  await channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
  return account
}

let nameCounter = 0
/** a unique template name per test, so the fake's requests can be told apart */
const uniqueName = (base: string) => `${base} ${process.pid} ${++nameCounter}`
const providerNameOf = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, '_')

async function createTemplate(account: TestAccount, payload: Json = {}): Promise<Json> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: {
      name: uniqueName('Order shipped'),
      content: 'Hallo {{1}}, deine Bestellung {{2}} ist unterwegs.',
      ...payload,
    },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().template
}

const submit = (account: TestAccount, id: string, headers: Record<string, string> = {}) =>
  account.request({ method: 'POST', url: `/v1/templates/${id}/submit`, headers })

const getTemplate = async (account: TestAccount, id: string): Promise<Json> =>
  (await account.request({ method: 'GET', url: `/v1/templates/${id}` })).json().template

const graphCalls = (name: string) =>
  requests.filter((r) => r.body?.name === providerNameOf(name) || r.query.get('name') === providerNameOf(name))

describe('POST /v1/templates/{id}/submit with the sandbox provider', () => {
  test('the sandbox decides at once: 200, approved and sendable', async () => {
    const account = await sandboxAccount()
    const created = await createTemplate(account)
    const response = await submit(account, created.id)
    assert.equal(response.statusCode, 200, response.body)
    const body = response.json()
    assert.equal(body.ok, true)
    assert.equal(body.already, false)
    assert.equal(body.notice, null)
    assert.equal(body.template.state, 'approved')
    assert.equal(body.template.provider_status, 'approved')
    assert.equal(body.template.sendable, true)
    assert.match(body.template.submitted_at, /Z$/)
    assert.deepEqual(await getTemplate(account, created.id), body.template)
  })

  test('already approved: 200 with already, a notice and its German alias hinweis', async () => {
    const account = await sandboxAccount()
    const created = await createTemplate(account)
    assert.equal((await submit(account, created.id)).statusCode, 200)
    const again = await submit(account, created.id)
    assert.equal(again.statusCode, 200)
    const body = again.json()
    assert.equal(body.already, true)
    assert.match(body.notice, /already approved/)
    assert.equal(body.hinweis, body.notice)
    assert.equal(body.template.state, 'approved')
  })

  test('400 with the reasons when the deterministic check fails; nothing is submitted', async () => {
    const account = await sandboxAccount()
    const created = await createTemplate(account, { content: '{{1}} deine Bestellung ist unterwegs' })
    const response = await submit(account, created.id)
    assert.equal(response.statusCode, 400, response.body)
    const { error } = response.json()
    assert.equal(error.code, 'bad_request')
    assert.equal(error.key, 'template_not_submittable')
    assert.ok(error.issues.length > 0)
    for (const issue of error.issues) assert.ok(error.message.includes(issue.message))
    const after = await getTemplate(account, created.id)
    assert.equal(after.state, 'draft')
    assert.equal(after.provider_status, null)
  })

  test('400 when no chat number is connected', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    const response = await submit(account, created.id)
    assert.equal(response.statusCode, 400, response.body)
    assert.equal(response.json().error.code, 'bad_request')
    assert.equal(response.json().error.key, 'chat_not_connected')
    assert.match(response.json().error.message, /No chat number is connected/)
    assert.equal((await getTemplate(account, created.id)).state, 'draft')
  })

  test('400 for e-mail templates: only chat templates go to the provider', async () => {
    const account = await sandboxAccount()
    const created = await createTemplate(account, {
      channel: 'email',
      subject: 'Hallo',
      content: 'Hallo {{name}}, hier.',
    })
    const response = await submit(account, created.id)
    assert.equal(response.statusCode, 400)
    assert.equal(response.json().error.key, 'template_not_chat')
  })

  test('needs templates:submit; templates:write is not enough', async () => {
    const writer = await sandboxAccount({ scopes: ['templates:read', 'templates:write', 'templates:delete'] })
    const created = await createTemplate(writer)
    const refused = await submit(writer, created.id)
    assert.equal(refused.statusCode, 403)
    assert.equal(refused.json().error.key, 'apikey_scope_fehlt')
    assert.equal((await getTemplate(writer, created.id)).state, 'draft')

    const submitter = await sandboxAccount({ scopes: ['templates:write', 'templates:submit'] })
    const own = await createTemplate(submitter)
    assert.equal((await submit(submitter, own.id)).statusCode, 200)
  })

  test("another account's template is 404", async () => {
    const owner = await sandboxAccount()
    const created = await createTemplate(owner)
    const stranger = await sandboxAccount()
    const response = await submit(stranger, created.id)
    assert.equal(response.statusCode, 404)
    assert.equal((await getTemplate(owner, created.id)).state, 'draft')
  })

  test('an Idempotency-Key replays the first answer', async () => {
    const account = await sandboxAccount()
    const created = await createTemplate(account)
    const headers = { 'idempotency-key': `submit-${created.id}` }
    const first = await submit(account, created.id, headers)
    const second = await submit(account, created.id, headers)
    assert.equal(first.statusCode, 200)
    assert.equal(second.statusCode, 200)
    assert.deepEqual(second.json(), first.json())
    assert.equal(second.json().already, false)
  })
})

describe('POST /v1/templates/{id}/submit with the whatsapp-cloud provider', () => {
  test('sends (name, language) and the category of the purpose; the template is pending', async () => {
    const account = await cloudAccount()
    for (const [purpose, category] of [
      ['marketing', 'MARKETING'],
      ['utility', 'UTILITY'],
      ['optin_confirm', 'UTILITY'],
    ]) {
      const name = uniqueName(`Welcome ${purpose}`)
      const created = await createTemplate(account, {
        name,
        purpose,
        language: 'en_US',
        content: 'Hello {{1}}, welcome to our shop.',
      })
      const response = await submit(account, created.id)
      assert.equal(response.statusCode, 200, response.body)
      const body = response.json()
      assert.equal(body.already, false)
      assert.equal(body.template.state, 'pending')
      assert.equal(body.template.provider_status, 'pending')
      assert.match(body.template.provider_template_id, /^tpl-\d+$/)
      const calls = graphCalls(name)
      assert.equal(calls.length, 1)
      assert.equal(calls[0].method, 'POST')
      assert.equal(calls[0].body?.name, providerNameOf(name))
      assert.equal(calls[0].body?.language, 'en_US')
      assert.equal(calls[0].body?.category, category)
      assert.deepEqual(calls[0].body?.components[0], { type: 'BODY', text: 'Hello {{1}}, welcome to our shop.' })
      if (purpose === 'optin_confirm') {
        assert.deepEqual(calls[0].body?.components[1], {
          type: 'BUTTONS',
          buttons: [{ type: 'QUICK_REPLY', text: body.template.confirm_button.text }],
        })
      } else assert.equal(calls[0].body?.components.length, 1)
    }
  })

  test('already pending: 200 already with a notice, nothing sent to the provider again', async () => {
    const account = await cloudAccount()
    const name = uniqueName('Pending')
    const created = await createTemplate(account, { name })
    assert.equal((await submit(account, created.id)).statusCode, 200)
    const again = await submit(account, created.id)
    assert.equal(again.statusCode, 200)
    assert.equal(again.json().already, true)
    assert.match(again.json().notice, /already waiting/)
    assert.equal(again.json().hinweis, again.json().notice)
    assert.equal(graphCalls(name).length, 1)
  })

  test('a provider that rejects at once: state rejected with the reason readable', async () => {
    const account = await cloudAccount()
    const name = uniqueName('Rejected at once')
    decisions.set(providerNameOf(name), { status: 'REJECTED' })
    const created = await createTemplate(account, { name })
    const response = await submit(account, created.id)
    assert.equal(response.statusCode, 200)
    assert.equal(response.json().template.state, 'rejected')
    assert.equal(response.json().template.submittable, false)
  })

  for (const failure of ['error', 'hangup'] as const) {
    test(`502 provider_unreachable when the provider ${failure === 'error' ? 'answers 500' : 'closes the connection'}`, async () => {
      const account = await cloudAccount()
      const name = uniqueName(`Unreachable ${failure}`)
      const created = await createTemplate(account, { name })
      mode = failure
      const response = await submit(account, created.id)
      assert.equal(response.statusCode, 502, response.body)
      const { error } = response.json()
      assert.equal(error.code, 'provider_unreachable')
      assert.match(error.message, /did not reach the provider: .+/)
      if (failure === 'error') assert.match(error.message, /500/)
      assert.equal(graphCalls(name).length, 1)
      mode = 'ok'
      const after = await getTemplate(account, created.id)
      assert.equal(after.state, 'draft')
      assert.equal(after.provider_status, null)
      assert.equal(after.submittable, true)
      // once the provider is back, the same template is submitted
      assert.equal((await submit(account, created.id)).json().template.state, 'pending')
    })
  }
})

describe('DELETE /v1/templates/{id} at the provider', () => {
  const remove = (account: TestAccount, id: string) => account.request({ method: 'DELETE', url: `/v1/templates/${id}` })

  test('a submitted template is removed at the provider too, by its id in its language', async () => {
    const account = await cloudAccount()
    const name = uniqueName('Remove me')
    const created = await createTemplate(account, { name })
    const submitted = (await submit(account, created.id)).json().template
    const response = await remove(account, created.id)
    assert.equal(response.statusCode, 200, response.body)
    assert.deepEqual(response.json(), {
      ok: true,
      deleted: true,
      removed_at_provider: true,
      notice: null,
      hinweis: null,
    })
    const deletes = graphCalls(name).filter((r) => r.method === 'DELETE')
    assert.equal(deletes.length, 1)
    assert.equal(deletes[0].query.get('name'), providerNameOf(name))
    assert.equal(deletes[0].query.get('hsm_id'), submitted.provider_template_id)
    assert.equal((await account.request({ method: 'GET', url: `/v1/templates/${created.id}` })).statusCode, 404)
  })

  test('a draft never submitted is not sent to the provider', async () => {
    const account = await cloudAccount()
    const name = uniqueName('Draft only')
    const created = await createTemplate(account, { name })
    const response = await remove(account, created.id)
    assert.equal(response.statusCode, 200)
    assert.equal(response.json().removed_at_provider, false)
    assert.equal(graphCalls(name).length, 0)
  })

  for (const failure of ['error', 'hangup'] as const) {
    test(`when the provider ${failure === 'error' ? 'answers 500' : 'closes the connection'}, the local delete happens with the reason in notice`, async () => {
      const account = await cloudAccount()
      const name = uniqueName(`Remove fails ${failure}`)
      const created = await createTemplate(account, { name })
      assert.equal((await submit(account, created.id)).statusCode, 200)
      mode = failure
      const response = await remove(account, created.id)
      mode = 'ok'
      assert.equal(response.statusCode, 200, response.body)
      const body = response.json()
      assert.equal(body.deleted, true)
      assert.equal(body.removed_at_provider, false)
      assert.match(body.notice, /could not be removed at the provider: .+/)
      if (failure === 'error') assert.match(body.notice, /500/)
      assert.equal(body.hinweis, body.notice)
      assert.equal(graphCalls(name).filter((r) => r.method === 'DELETE').length, 1)
      assert.equal((await account.request({ method: 'GET', url: `/v1/templates/${created.id}` })).statusCode, 404)
    })
  }

  test('with the sandbox, an approved template is gone at the provider after the delete', async () => {
    const account = await sandboxAccount()
    const created = await createTemplate(account)
    assert.equal((await submit(account, created.id)).json().template.state, 'approved')
    const ref = { name: created.provider_name, language: created.language }
    assert.notEqual(await channels().readTemplate(account.accountId, ref), null)
    const response = await remove(account, created.id)
    assert.equal(response.json().removed_at_provider, true)
    assert.equal(await channels().readTemplate(account.accountId, ref), null)
  })
})

describe('provider decisions by the whatsapp-cloud webhook (message_template_status_update)', () => {
  /** signed like the Cloud API: X-Hub-Signature-256 over the raw body with the app secret */
  function postDecision(account: TestAccount, value: Json, waba = WABA) {
    const raw = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [{ id: waba, time: 1700000000, changes: [{ field: 'message_template_status_update', value }] }],
    })
    return harness.app.inject({
      method: 'POST',
      url: `/hooks/whatsapp-cloud/${account.accountId}`,
      headers: {
        'content-type': 'application/json',
        'x-hub-signature-256': `sha256=${createHmac('sha256', 'submit-app-secret').update(raw).digest('hex')}`,
      },
      payload: raw,
    })
  }

  async function pendingTemplate(account: TestAccount): Promise<Json> {
    const created = await createTemplate(account, { name: uniqueName('Decided'), language: 'de' })
    const submitted = (await submit(account, created.id)).json().template
    assert.equal(submitted.state, 'pending')
    return submitted
  }

  const decision = (template: Json, event: string, extra: Json = {}) => ({
    event,
    message_template_id: template.provider_template_id,
    message_template_name: template.provider_name,
    message_template_language: template.language,
    reason: 'NONE',
    ...extra,
  })

  test('APPROVED makes the template approved and sendable', async () => {
    const account = await cloudAccount()
    const template = await pendingTemplate(account)
    const response = await postDecision(account, decision(template, 'APPROVED'))
    assert.equal(response.statusCode, 200, response.body)
    const after = await getTemplate(account, template.id)
    assert.equal(after.state, 'approved')
    assert.equal(after.provider_status, 'approved')
    assert.equal(after.rejection_reason, null)
    assert.equal(after.sendable, true)
  })

  test('REJECTED with its reason: state rejected, reason and its text readable', async () => {
    const account = await cloudAccount()
    const template = await pendingTemplate(account)
    await postDecision(account, decision(template, 'REJECTED', { reason: 'INVALID_FORMAT' }))
    const after = await getTemplate(account, template.id)
    assert.equal(after.state, 'rejected')
    assert.equal(after.rejection_reason, 'INVALID_FORMAT')
    assert.equal(typeof after.rejection_reason_text, 'string')
    assert.ok(after.rejection_reason_text.length > 0)
    assert.equal(after.sendable, false)
  })

  test('PAUSED and DISABLED move the state; REINSTATED approves again', async () => {
    const account = await cloudAccount()
    const template = await pendingTemplate(account)
    await postDecision(account, decision(template, 'APPROVED'))
    for (const [event, state] of [
      ['PAUSED', 'paused'],
      ['REINSTATED', 'approved'],
      ['DISABLED', 'disabled'],
    ]) {
      assert.equal((await postDecision(account, decision(template, event))).statusCode, 200)
      const after = await getTemplate(account, template.id)
      assert.equal(after.state, state, event)
      assert.equal(after.sendable, state === 'approved', event)
    }
  })

  test('found by (name, language) when the provider id is not given; other accounts are untouched', async () => {
    const account = await cloudAccount()
    const other = await cloudAccount()
    const template = await pendingTemplate(account)
    const twin = (await submit(other, (await createTemplate(other, { name: template.name })).id)).json().template
    await postDecision(account, decision(template, 'APPROVED', { message_template_id: undefined }))
    assert.equal((await getTemplate(account, template.id)).state, 'approved')
    assert.equal((await getTemplate(other, twin.id)).state, 'pending')
  })

  test('a decision for another business account, or with a forged signature, changes nothing', async () => {
    const account = await cloudAccount()
    const template = await pendingTemplate(account)
    assert.equal((await postDecision(account, decision(template, 'APPROVED'), '1111111111')).statusCode, 200)
    assert.equal((await getTemplate(account, template.id)).state, 'pending')
    const forged = await harness.app.inject({
      method: 'POST',
      url: `/hooks/whatsapp-cloud/${account.accountId}`,
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` },
      payload: JSON.stringify({
        object: 'whatsapp_business_account',
        entry: [
          { id: WABA, changes: [{ field: 'message_template_status_update', value: decision(template, 'APPROVED') }] },
        ],
      }),
    })
    assert.equal(forged.statusCode, 401)
    assert.equal((await getTemplate(account, template.id)).state, 'pending')
  })
})

describe('provider decisions by polling (durable job templates.poll_status)', () => {
  async function pendingTemplate(account: TestAccount): Promise<Json> {
    const created = await createTemplate(account, { name: uniqueName('Polled') })
    const submitted = (await submit(account, created.id)).json().template
    assert.equal(submitted.state, 'pending')
    return submitted
  }
  const pollsOf = (template: Json) =>
    requests.filter((r) => r.method === 'GET' && r.query.get('name') === template.provider_name)
  async function nextPoll() {
    harness.clock.advance(TEMPLATE_POLL_INTERVAL_MS + 1000)
    await harness.jobs!.drain()
  }

  test('a pending template is read from the provider and takes its decision', async () => {
    const account = await cloudAccount()
    const template = await pendingTemplate(account)
    decisions.set(template.provider_name, { status: 'APPROVED' })
    await nextPoll()
    const polls = pollsOf(template)
    assert.equal(polls.length, 1)
    assert.equal(polls[0].query.get('language'), template.language)
    const after = await getTemplate(account, template.id)
    assert.equal(after.state, 'approved')
    assert.equal(after.sendable, true)
    await nextPoll()
    assert.equal(pollsOf(template).length, 1, 'a decided template is not polled again')
  })

  test('still pending: asked again later, until rejected with the reason', async () => {
    const account = await cloudAccount()
    const template = await pendingTemplate(account)
    await nextPoll()
    assert.equal(pollsOf(template).length, 1)
    assert.equal((await getTemplate(account, template.id)).state, 'pending')
    decisions.set(template.provider_name, { status: 'REJECTED', rejected_reason: 'PROMOTIONAL' })
    await nextPoll()
    assert.equal(pollsOf(template).length, 2)
    const after = await getTemplate(account, template.id)
    assert.equal(after.state, 'rejected')
    assert.equal(after.rejection_reason, 'PROMOTIONAL')
  })

  test('the provider not reached: the poll is retried, and the decision still arrives', async () => {
    const account = await cloudAccount()
    const template = await pendingTemplate(account)
    decisions.set(template.provider_name, { status: 'APPROVED' })
    mode = 'error'
    await nextPoll()
    mode = 'ok'
    assert.equal(pollsOf(template).length, 1)
    assert.equal((await getTemplate(account, template.id)).state, 'pending')
    await nextPoll()
    assert.equal((await getTemplate(account, template.id)).state, 'approved')
  })

  test('a template decided by the webhook or changed since is not polled', async () => {
    const account = await cloudAccount()
    const template = await pendingTemplate(account)
    const patched = await account.request({
      method: 'PATCH',
      url: `/v1/templates/${template.id}`,
      payload: { content: 'Hallo {{1}}, dein Paket {{2}} ist da.' },
    })
    assert.equal(patched.json().provider_status_reset, true)
    await nextPoll()
    assert.equal(pollsOf(template).length, 0)
    assert.equal((await getTemplate(account, template.id)).state, 'draft')
  })
})
