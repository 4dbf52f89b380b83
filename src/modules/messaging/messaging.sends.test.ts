import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { createdContactId } from '../../../test/helpers/contacts.ts'
import { phoneSequence, setOptin } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { type SendSetupOptions, sendSetup } from '../../../test/helpers/messaging.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { blockAccount, pauseSending } from '../../platform/auth/accounts.service.ts'
import { sandboxOutboxOf } from '../channels/index.ts'
import { valueProblem } from '../templates/index.ts'
import { monthIn, usedIn } from './messaging.quota.ts'
import { sendStatusChange } from './messaging.sends.ts'

let harness: Harness

// jobs run only inside drain(), so a test can change things between queueing and sending
harnessPerFile({ config: { allowPrivateTargets: true }, drainOnly: true }, (created) => {
  harness = created
})

const DAY = 24 * 60 * 60 * 1000
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
const channels = () => harness.services.channels
let counter = 0
const nextPhone = phoneSequence('+4916')

/** A sandbox-connected account and a confirmed contact who never wrote (so outside any 24-hour window). */
const readyToSend = (options: SendSetupOptions = {}) => sendSetup(harness, nextPhone(), options)

const CONTENT = 'Hallo {{name}}, dein Code ist {{code}}. Bis bald!'

async function createTemplate(account: TestAccount, payload: Json = {}): Promise<Json> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: { name: `Code ${process.pid} ${++counter}`, content: CONTENT, language: 'de', ...payload },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().template
}

/** Created and submitted to the sandbox, which approves at once. */
async function approvedTemplate(account: TestAccount, payload: Json = {}): Promise<Json> {
  const template = await createTemplate(account, payload)
  const submitted = await account.request({ method: 'POST', url: `/v1/templates/${template.id}/submit` })
  assert.equal(submitted.statusCode, 200, submitted.body)
  assert.equal(submitted.json().template.provider_status, 'approved')
  return submitted.json().template
}

const markApproved = (accountId: string, id: string) =>
  harness.services.templates.applyProviderStatus(accountId, id, { status: 'APPROVED' })

const send = (account: TestAccount, payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
  account.request({ method: 'POST', url: '/v1/messages', payload, headers })

const sendTemplate = (account: TestAccount, contactId: string, id: string, variables?: Record<string, unknown>) =>
  send(account, { contact_id: contactId, template: { id, ...(variables ? { variables } : {}) } })

const errorOf = (response: { json(): unknown }) =>
  (response.json() as { error: { code: string; key: string; message: string; variables?: Json[] } }).error

const getSend = async (account: TestAccount, id: string) => {
  const response = await account.request({ method: 'GET', url: `/v1/sends/${id}` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json() as Json
}

const outbox = (accountId: string) => sandboxOutboxOf(harness.database.orm, accountId, 'chat')
const thisMonth = (account: TestAccount) =>
  usedIn(harness.database.orm, account.accountId, monthIn(harness.clock.now(), 'Europe/Berlin'))
const queuedJobs = async (accountId: string) =>
  (
    await harness.database.query("SELECT 1 FROM jobs WHERE account_id = $1 AND queue = 'messaging.template_send'", [
      accountId,
    ])
  ).length
async function drain() {
  await harness.jobs!.start()
  await harness.jobs!.drain()
  await harness.jobs!.stop()
}

async function queued(account: TestAccount, contactId: string, templateId: string, variables: Json = { code: 'A-17' }) {
  const response = await sendTemplate(account, contactId, templateId, variables)
  assert.equal(response.statusCode, 202, response.body)
  return json<{ send_id: string; status: string }>(response)
}

describe('POST /messages with a template', () => {
  test('an approved template to a confirmed contact: 202 {send_id}, queued, then sent by the worker', async () => {
    const { account, contactId, phone } = await readyToSend()
    const template = await approvedTemplate(account)
    const response = await sendTemplate(account, contactId, template.id, { code: 'A-17' })
    assert.equal(response.statusCode, 202, response.body)
    const body = json<{ send_id: string; status: string }>(response)
    assert.equal(body.status, 'queued')
    const before = await getSend(account, body.send_id)
    assert.equal(before.status, 'queued')
    assert.equal(before.sent_at, null)
    assert.equal(before.template_id, template.id)
    assert.equal(await thisMonth(account), 0, 'the quota is only checked when queued')

    await drain()
    const record = await getSend(account, body.send_id)
    assert.equal(record.status, 'sent')
    assert.equal(record.reason, null)
    assert.equal(record.grund, null)
    assert.match(record.sent_at, /Z$/)
    assert.ok(record.message_id)
    const [sent] = await outbox(account.accountId)
    assert.equal(sent.recipient, phone)
    assert.equal(sent.payload.type, 'template')
    assert.equal(sent.payload.name, template.provider_name)
    assert.equal(sent.payload.language, 'de')
    assert.deepEqual(sent.payload.parameters, ['Erika', 'A-17'])
    assert.deepEqual(sent.payload.parameter_names, ['name', 'code'])
    assert.equal(sent.payload.text, 'Hallo Erika, dein Code ist A-17. Bis bald!')
    assert.equal(sent.payload.send_id, body.send_id)
    assert.equal(await thisMonth(account), 1)
    const messages = json<{ messages: Json[] }>(
      await account.request({ method: 'GET', url: '/v1/messages?direction=outbound' }),
    ).messages
    assert.equal(messages.length, 1)
    assert.equal(messages[0].id, record.message_id)
    assert.equal(messages[0].type, 'template')
    assert.equal(messages[0].text, 'Hallo Erika, dein Code ist A-17. Bis bald!')
    assert.deepEqual(messages[0].template, { id: template.id, name: template.name, buttons: [] })
  })

  test('the message view shows which template it was and its buttons (a URL button with its address)', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account, {
      buttons: [
        { type: 'QUICK_REPLY', text: 'Passt' },
        { type: 'URL', text: 'Zum Shop', url: 'https://shop.example.com/angebot' },
      ],
    })
    const response = await sendTemplate(account, contactId, template.id, { code: 'B-2' })
    assert.equal(response.statusCode, 202, response.body)
    await drain()
    const [message] = json<{ messages: Json[] }>(
      await account.request({ method: 'GET', url: '/v1/messages?direction=outbound' }),
    ).messages
    assert.deepEqual(message.template, {
      id: template.id,
      name: template.name,
      buttons: [
        { type: 'QUICK_REPLY', text: 'Passt' },
        { type: 'URL', text: 'Zum Shop', url: 'https://shop.example.com/angebot' },
      ],
    })
  })

  test('a template works outside the 24-hour window, where free text is refused', async () => {
    const { account, contactId, phone } = await readyToSend()
    await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from: phone, text: 'Hallo' } })
    harness.clock.advance(2 * DAY)
    const text = await send(account, { contact_id: contactId, text: 'zu spät' })
    assert.equal(text.statusCode, 502, text.body)
    assert.equal(errorOf(text).key, 'outside_window')
    const template = await approvedTemplate(account)
    const { send_id } = await queued(account, contactId, template.id)
    await drain()
    assert.equal((await getSend(account, send_id)).status, 'sent')
    assert.equal((await outbox(account.accountId)).length, 1)
  })

  test('the name falls back per language when the contact has no name ("du" in de, "there" in en)', async () => {
    const { account } = await readyToSend()
    const phone = nextPhone()
    const contactId = await createdContactId(account, { phone })
    await setOptin(harness, account.accountId, contactId, 'confirmed')
    const de = await approvedTemplate(account)
    const en = await approvedTemplate(account, { language: 'en', content: 'Hi {{name}}, your code is {{code}}. Bye!' })
    await queued(account, contactId, de.id)
    await queued(account, contactId, en.id)
    await drain()
    const texts = (await outbox(account.accountId)).map((r) => r.payload.text).sort()
    assert.deepEqual(texts, ['Hallo du, dein Code ist A-17. Bis bald!', 'Hi there, your code is A-17. Bye!'])
  })

  test("a missing template or another account's template gives 404 not_found", async () => {
    const { account, contactId } = await readyToSend()
    const other = await readyToSend()
    const foreign = await approvedTemplate(other.account)
    for (const id of [crypto.randomUUID(), foreign.id]) {
      const response = await sendTemplate(account, contactId, id, { code: 'x' })
      assert.equal(response.statusCode, 404, response.body)
      assert.deepEqual(errorOf(response), { ...errorOf(response), code: 'not_found', key: 'not_found' })
    }
    assert.equal(await queuedJobs(account.accountId), 0)
  })

  test('422 template_not_chat, template_not_sendable (opt-in confirmation, system) and template_not_approved', async () => {
    const { account, contactId } = await readyToSend()
    const email = await createTemplate(account, { channel: 'email', subject: 'Code', content: 'Code {{code}} hier' })
    const optin = await createTemplate(account, { purpose: 'optin_confirm', content: 'Bitte bestätigen, {{name}}!' })
    await markApproved(account.accountId, optin.id)
    const system = await harness.services.templates.create(
      { accountId: account.accountId, account: { language: 'de' } },
      { name: `System ${++counter}`, content: 'System {{code}} ok' },
      { system: true },
    )
    await markApproved(account.accountId, system.id)
    const draft = await createTemplate(account)
    const rejected = await createTemplate(account)
    await harness.services.templates.applyProviderStatus(account.accountId, rejected.id, { status: 'REJECTED' })
    const paused = await approvedTemplate(account)
    await harness.services.templates.applyProviderStatus(account.accountId, paused.id, { status: 'PAUSED' })
    const cases: Array<[string, string]> = [
      [email.id, 'template_not_chat'],
      [optin.id, 'template_not_sendable'],
      [system.id, 'template_not_sendable'],
      [draft.id, 'template_not_approved'],
      [rejected.id, 'template_not_approved'],
      [paused.id, 'template_not_approved'],
    ]
    for (const [id, code] of cases) {
      const response = await sendTemplate(account, contactId, id, { code: 'x' })
      assert.equal(response.statusCode, 422, `${code}: ${response.body}`)
      assert.deepEqual(errorOf(response), { ...errorOf(response), code, key: code })
    }
    assert.equal(await queuedJobs(account.accountId), 0)
  })

  test('422 invalid_variables names each variable: unknown, from the contact, missing, empty, too long, breaks', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const cases: Array<[Json, string[]]> = [
      [{ code: 'A', extra: 'x' }, ['extra']],
      [{ code: 'A', name: 'Max' }, ['name']],
      [{ code: 'A', email: 'a@b.de', phone: '+49', full_name: 'X' }, ['email', 'phone', 'full_name']],
      [{}, ['code']],
      [{ code: '' }, ['code']],
      [{ code: '   ' }, ['code']],
      [{ code: 'x'.repeat(1025) }, ['code']],
      [{ code: 'a\nb' }, ['code']],
      [{ code: 'a\tb' }, ['code']],
      [{ code: 'a\u0007b' }, ['code']],
      [{ code: 'a    b' }, ['code']],
      [{ code: 'a {{name}}' }, ['code']],
    ]
    for (const [variables, names] of cases) {
      const response = await sendTemplate(account, contactId, template.id, variables)
      assert.equal(response.statusCode, 422, `${JSON.stringify(variables)}: ${response.body}`)
      const error = errorOf(response)
      assert.equal(error.code, 'invalid_variables')
      assert.equal(error.key, 'invalid_variables')
      for (const name of names) assert.match(error.message, new RegExp(`\\b${name}\\b`), error.message)
      assert.deepEqual(error.variables?.map((v) => v.name).sort(), [...names].sort())
    }
    const ok = await sendTemplate(account, contactId, template.id, { code: 'x'.repeat(1024) })
    assert.equal(ok.statusCode, 202, ok.body)
  })

  test('a contact variable the contact has no value for gives 422 invalid_variables; nothing is queued', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account, {
      content: 'Hallo, wir schreiben an {{email}} wegen {{code}} heute.',
    })
    const response = await sendTemplate(account, contactId, template.id, { code: 'A' })
    assert.equal(response.statusCode, 422, response.body)
    assert.equal(errorOf(response).code, 'invalid_variables')
    assert.match(errorOf(response).message, /\bemail\b/)
    assert.equal(await queuedJobs(account.accountId), 0)
  })

  test('recipient and account checks as for free text: 404, 403, 409; nothing queued, no quota used', async () => {
    const ready = await readyToSend()
    const template = await approvedTemplate(ready.account)
    const cases: Array<[() => Promise<{ account: TestAccount; contactId: string }>, number, string]> = [
      [async () => ({ ...ready, contactId: crypto.randomUUID() }), 404, 'not_found'],
      [async () => ({ ...ready, contactId: (await readyToSend()).contactId }), 404, 'not_found'],
      [
        async () => {
          const contactId = await createdContactId(ready.account, { name: 'Mail', email: `m${++counter}@example.com` })
          await setOptin(harness, ready.account.accountId, contactId, 'confirmed')
          return { ...ready, contactId }
        },
        409,
        'contact_no_phone',
      ],
      [
        async () => {
          const contactId = await createdContactId(ready.account, { name: 'Weg', phone: nextPhone() })
          await setOptin(harness, ready.account.accountId, contactId, 'opted_out')
          return { ...ready, contactId }
        },
        409,
        'contact_opted_out',
      ],
      [
        async () => ({
          ...ready,
          contactId: await createdContactId(ready.account, { name: 'Neu', phone: nextPhone() }),
        }),
        409,
        'contact_not_optin',
      ],
    ]
    for (const [setup, status, code] of cases) {
      const { account, contactId } = await setup()
      const response = await sendTemplate(account, contactId, template.id, { code: 'x' })
      assert.equal(response.statusCode, status, `${code}: ${response.body}`)
      assert.equal(errorOf(response).code, code)
    }
    assert.equal(await queuedJobs(ready.account.accountId), 0)
    assert.equal(await thisMonth(ready.account), 0)
  })

  test('no chat number gives 409 chat_not_connected; paused sending 403 subscription_locked; blocked 403', async () => {
    const ready = await readyToSend()
    const template = await approvedTemplate(ready.account)
    await channels().disconnect(ready.account.accountId, 'chat')
    const unconnected = await sendTemplate(ready.account, ready.contactId, template.id, { code: 'x' })
    assert.equal(unconnected.statusCode, 409, unconnected.body)
    assert.equal(errorOf(unconnected).code, 'chat_not_connected')
    await pauseSending(harness.database.orm, ready.account.accountId)
    const paused = await sendTemplate(ready.account, ready.contactId, template.id, { code: 'x' })
    assert.equal(paused.statusCode, 403, paused.body)
    assert.equal(errorOf(paused).code, 'subscription_locked')
    await blockAccount(harness.database.orm, ready.account.accountId)
    const blocked = await sendTemplate(ready.account, ready.contactId, template.id, { code: 'x' })
    assert.equal(blocked.statusCode, 403, blocked.body)
    assert.equal(errorOf(blocked).code, 'account_blocked')
    assert.equal(await queuedJobs(ready.account.accountId), 0)
  })

  test('a used-up quota gives 403 limit_reached (key message_quota) when queueing', async () => {
    const { account, contactId } = await readyToSend({ messagesPerMonth: 1 })
    const template = await approvedTemplate(account)
    await queued(account, contactId, template.id)
    await drain()
    const response = await sendTemplate(account, contactId, template.id, { code: 'x' })
    assert.equal(response.statusCode, 403, response.body)
    assert.deepEqual(errorOf(response), { ...errorOf(response), code: 'limit_reached', key: 'message_quota' })
  })

  test('the checks run in order: contact, template, variables, paused, quota, number, recipient', async () => {
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 0 } })
    // no number, no phone, no opt-in, no quota, sending paused: each step removes the first failing check
    const contactId = await createdContactId(account, { name: 'x', email: `o${++counter}@example.com` })
    const draft = await createTemplate(account)
    const code = async (template: string, variables: Json = { code: 'x' }, contact = contactId) =>
      errorOf(await sendTemplate(account, contact, template, variables)).code
    assert.equal(await code(draft.id, {}, crypto.randomUUID()), 'not_found', 'the contact first')
    assert.equal(await code(crypto.randomUUID(), {}), 'not_found', 'then the template')
    assert.equal(await code(draft.id, {}), 'template_not_approved', 'the template status before the variables')
    await markApproved(account.accountId, draft.id)
    await pauseSending(harness.database.orm, account.accountId)
    assert.equal(await code(draft.id, {}), 'invalid_variables', 'the variables before the account state')
    assert.equal(await code(draft.id), 'subscription_locked', 'paused before the quota')
    const { resumeSending } = await import('../../platform/auth/accounts.service.ts')
    await resumeSending(harness.database.orm, account.accountId)
    assert.equal(await code(draft.id), 'limit_reached', 'the quota before the number')
  })
})

describe('the worker', () => {
  test('an opt-out between queueing and sending: skipped with reason contact_opted_out, nothing sent', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const { send_id } = await queued(account, contactId, template.id)
    await setOptin(harness, account.accountId, contactId, 'opted_out')
    await drain()
    const record = await getSend(account, send_id)
    assert.equal(record.status, 'skipped')
    assert.equal(record.reason, 'contact_opted_out')
    assert.equal(record.grund, 'contact_opted_out')
    assert.match(record.skipped_at, /Z$/)
    assert.equal(record.sent_at, null)
    assert.deepEqual(await outbox(account.accountId), [])
    assert.equal(await thisMonth(account), 0)
  })

  test('other changes before the send skip it too: paused template, paused sending, lost opt-in', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const first = await queued(account, contactId, template.id)
    await harness.services.templates.applyProviderStatus(account.accountId, template.id, { status: 'PAUSED' })
    await drain()
    assert.equal((await getSend(account, first.send_id)).reason, 'template_not_approved')
    await harness.services.templates.applyProviderStatus(account.accountId, template.id, { status: 'APPROVED' })

    const second = await queued(account, contactId, template.id)
    await pauseSending(harness.database.orm, account.accountId)
    await drain()
    assert.equal((await getSend(account, second.send_id)).reason, 'subscription_locked')
    const { resumeSending } = await import('../../platform/auth/accounts.service.ts')
    await resumeSending(harness.database.orm, account.accountId)

    const third = await queued(account, contactId, template.id)
    await account.request({ method: 'PATCH', url: `/v1/contacts/${contactId}`, payload: { phone: nextPhone() } })
    await drain()
    assert.equal((await getSend(account, third.send_id)).reason, 'contact_not_optin', 'a changed phone resets opt-in')
    assert.deepEqual(await outbox(account.accountId), [])
  })

  test('two queued sends at the last unit of the quota: one sent, one skipped with limit_reached', async () => {
    const { account, contactId } = await readyToSend({ messagesPerMonth: 1 })
    const template = await approvedTemplate(account)
    const a = await queued(account, contactId, template.id)
    const b = await queued(account, contactId, template.id)
    await drain()
    const statuses = [await getSend(account, a.send_id), await getSend(account, b.send_id)]
    assert.deepEqual(statuses.map((s) => s.status).sort(), ['sent', 'skipped'])
    assert.equal(statuses.find((s) => s.status === 'skipped')?.reason, 'limit_reached')
    assert.equal((await outbox(account.accountId)).length, 1)
    assert.equal(await thisMonth(account), 1)
  })

  test('a send found in `sending` (its worker died during the provider call) is never sent again: failed, interrupted', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const { send_id } = await queued(account, contactId, template.id)
    // what a worker killed between its commit of `sending` and the provider's answer leaves behind
    await harness.database.query(
      "UPDATE template_sends SET status = 'sending', attempt_token = gen_random_uuid() WHERE account_id = $1 AND id = $2",
      [account.accountId, send_id],
    )
    await drain()
    const record = await getSend(account, send_id)
    assert.equal(record.status, 'failed')
    assert.equal(record.reason, 'interrupted')
    assert.deepEqual(await outbox(account.accountId), [])
    assert.equal(await queuedJobs(account.accountId), 0)
  })

  test('links in variable values are tracked: the sent value is a short link that redirects with UTM parameters', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const { send_id } = await queued(account, contactId, template.id, { code: 'https://shop.example.com/c?x=1' })
    await drain()
    assert.equal((await getSend(account, send_id)).status, 'sent')
    const [sent] = await outbox(account.accountId)
    const link = String((sent.payload.parameters as string[])[1])
    const match = /^http:\/\/herold\.test\/public\/t\/c\/([A-Za-z0-9_-]+)$/.exec(link)
    assert.ok(match, link)
    assert.equal(sent.payload.text, `Hallo Erika, dein Code ist ${link}. Bis bald!`)
    const redirect = await harness.app.inject({ method: 'GET', url: `/public/t/c/${match[1]}` })
    assert.equal(redirect.statusCode, 302)
    assert.equal(
      redirect.headers.location,
      'https://shop.example.com/c?x=1&utm_source=herold&utm_medium=chat&utm_campaign=api',
    )
  })
})

describe('send status', () => {
  test('the sandbox reports delivered and read: the send moves sent → delivered → read with its times', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const { send_id } = await queued(account, contactId, template.id)
    await drain()
    harness.clock.advance(1500)
    await drain()
    const delivered = await getSend(account, send_id)
    assert.equal(delivered.status, 'delivered')
    assert.match(delivered.delivered_at, /Z$/)
    harness.clock.advance(1000)
    await drain()
    const read = await getSend(account, send_id)
    assert.equal(read.status, 'read')
    assert.match(read.read_at, /Z$/)
    assert.equal(read.delivered_at, delivered.delivered_at)
  })

  test('statuses arriving out of order never move the send backwards', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const { send_id } = await queued(account, contactId, template.id)
    await drain()
    const [row] = await harness.database.query<{ provider_message_id: string }>(
      'SELECT provider_message_id FROM template_sends WHERE account_id = $1 AND id = $2',
      [account.accountId, send_id],
    )
    const inbox = harness.services.inbox
    const status = (s: 'sent' | 'delivered' | 'read' | 'failed') =>
      inbox.applyStatuses(account.accountId, [
        {
          channel: 'chat',
          providerMessageId: row.provider_message_id,
          status: s,
          errorCode: s === 'failed' ? '131026' : null,
          optedOut: false,
        },
      ])
    await status('read')
    await status('delivered')
    await status('sent')
    await status('failed')
    const record = await getSend(account, send_id)
    assert.equal(record.status, 'read')
    assert.ok(record.delivered_at, 'a read message was delivered')
    assert.equal(record.failed_at, null)
  })

  test('any order of provider statuses: the status rank never falls, and read or failed is final', () => {
    const statuses = ['sent', 'delivered', 'read', 'failed'] as const
    const rank = { queued: 0, sending: 0, skipped: 0, sent: 1, delivered: 2, read: 3, failed: 4 } as const
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...statuses), { maxLength: 12 }), (sequence) => {
        let current = {
          status: 'sent' as keyof typeof rank,
          deliveredAt: null as Date | null,
          readAt: null as Date | null,
        }
        for (const [i, status] of sequence.entries()) {
          const before = current.status
          const change = sendStatusChange(current, { status, errorCode: null, at: new Date(i * 1000) })
          if (change) current = { ...current, ...(change as typeof current) }
          if (before === 'read' || before === 'failed') assert.equal(current.status, before)
          else assert.ok(rank[current.status] >= rank[before])
          if (current.status === 'read') assert.ok(current.deliveredAt && current.readAt)
        }
      }),
    )
  })
})

describe('GET /sends/{id}', () => {
  test("404 for another account's send, an unknown id, a non-uuid and a free-text message id", async () => {
    const { account, contactId, phone } = await readyToSend()
    const other = await readyToSend()
    const template = await approvedTemplate(other.account)
    const foreign = await queued(other.account, other.contactId, template.id)
    await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from: phone, text: 'Hallo' } })
    const text = await send(account, { contact_id: contactId, text: 'Hallo' })
    assert.equal(text.statusCode, 201, text.body)
    for (const id of [foreign.send_id, crypto.randomUUID(), 'not-a-uuid', text.json().id]) {
      const response = await account.request({ method: 'GET', url: `/v1/sends/${id}` })
      assert.equal(response.statusCode, 404, `${id}: ${response.body}`)
      assert.deepEqual(errorOf(response), { ...errorOf(response), code: 'not_found', key: 'not_found' })
    }
    assert.equal((await getSend(other.account, foreign.send_id)).status, 'queued')
  })

  test('needs messages:write (403 forbidden, apikey_scope_fehlt)', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const { send_id } = await queued(account, contactId, template.id)
    const { createKey } = await import('../../../test/helpers/harness.ts')
    const key = await createKey(harness, account.accountId, ['inbox:read'])
    const response = await harness.app.inject({
      method: 'GET',
      url: `/v1/sends/${send_id}`,
      headers: { authorization: `Bearer ${key}` },
    })
    assert.equal(response.statusCode, 403, response.body)
    assert.deepEqual(errorOf(response), { ...errorOf(response), code: 'forbidden', key: 'apikey_scope_fehlt' })
  })
})

describe('idempotency and deletion', () => {
  test('the same Idempotency-Key queues once and replays the 202 with the same send_id', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const headers = { 'idempotency-key': `tpl-${crypto.randomUUID()}` }
    const payload = { contact_id: contactId, template: { id: template.id, variables: { code: 'A' } } }
    const first = await send(account, payload, headers)
    const again = await send(account, payload, headers)
    assert.equal(first.statusCode, 202, first.body)
    assert.equal(again.statusCode, 202, again.body)
    assert.equal(again.headers['idempotent-replayed'], 'true')
    assert.deepEqual(again.json(), first.json())
    assert.equal(await queuedJobs(account.accountId), 1)
    await drain()
    assert.equal((await outbox(account.accountId)).length, 1)
  })

  test('deleting the contact removes its send records, counting the waiting ones as send_jobs', async () => {
    const { account, contactId } = await readyToSend()
    const template = await approvedTemplate(account)
    const { send_id } = await queued(account, contactId, template.id)
    const response = await account.request({ method: 'DELETE', url: `/v1/contacts/${contactId}` })
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(response.json().removed.send_jobs, 1)
    await drain()
    assert.equal((await account.request({ method: 'GET', url: `/v1/sends/${send_id}` })).statusCode, 404)
    assert.deepEqual(await outbox(account.accountId), [])
  })
})

describe('variables, property-tested through HTTP', () => {
  test('any value: 202 and a sent text without placeholders exactly when the value is valid, else 422 naming it', async () => {
    const { account, contactId } = await readyToSend({ messagesPerMonth: 1000 })
    const template = await approvedTemplate(account)
    const value = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.string({ unit: 'grapheme', maxLength: 20 }),
      fc.constantFrom('{{name}}', 'a    b', '\u0085', 'ok value', 'x'.repeat(1025), '{{1}}', ' {{code}} '),
    )
    await fc.assert(
      fc.asyncProperty(value, async (code) => {
        const response = await sendTemplate(account, contactId, template.id, { code })
        if (valueProblem(code) === null) {
          assert.equal(response.statusCode, 202, response.body)
          await drain()
          const record = await getSend(account, response.json().send_id)
          assert.equal(record.status, 'sent', JSON.stringify(record))
          const last = (await outbox(account.accountId)).find((r) => r.payload.send_id === record.id)
          assert.ok(last)
          assert.doesNotMatch(String(last.payload.text), /\{\{[^{}]*\}\}/)
        } else {
          assert.equal(response.statusCode, 422, response.body)
          assert.equal(errorOf(response).code, 'invalid_variables')
          assert.match(errorOf(response).message, /\bcode\b/)
        }
      }),
      { numRuns: 40 },
    )
  })
})
