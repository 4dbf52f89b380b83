import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { nextPhone } from '../../../test/helpers/fixtures.ts'
import { createKey, createTestAccount, type Harness, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { sandboxOutboxOf } from '../channels/index.ts'
import { consentHistory } from '../contacts/index.ts'

let harness: Harness

harnessPerFile({ config: { allowPrivateTargets: true }, workers: true }, (created) => {
  harness = created
})

const channels = () => harness.services.channels
let counter = 0
const errorOf = (response: { json(): unknown }) => (response.json() as { error: { code: string; key: string } }).error

/** A sandbox-connected account, with an approved opt-in confirmation template unless `template: false`. */
async function sandboxAccount(options: { template?: boolean } = {}): Promise<TestAccount> {
  const account = await createTestAccount(harness, { plan: { messagesPerMonth: 100 } })
  await channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
  if (options.template !== false) {
    const created = await account.request({
      method: 'POST',
      url: '/v1/templates',
      payload: {
        name: `Anmeldung bestaetigen ${++counter}`,
        purpose: 'optin_confirm',
        language: 'de',
        content: 'Hallo {{1}}, bitte bestätige deine Anmeldung für unsere Nachrichten.',
      },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = json<{ template: { id: string } }>(created).template.id
    const submitted = await account.request({ method: 'POST', url: `/v1/templates/${id}/submit` })
    assert.equal(json<{ template: { state: string } }>(submitted).template.state, 'approved', submitted.body)
  }
  return account
}

async function inbound(account: TestAccount, payload: Record<string, unknown>) {
  const response = await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload })
  assert.equal(response.statusCode, 200, response.body)
  harness.clock.advance(1000)
}

async function lastInbound(account: TestAccount) {
  const { messages } = json<{ messages: Array<{ id: string; contact_id: string; text: string }> }>(
    await account.request({ method: 'GET', url: '/v1/messages?direction=inbound' }),
  )
  return messages[0]
}

async function contactOf(account: TestAccount, id: string) {
  return json<{ contact: { optin_chat: string; optin_email: string; source: string } }>(
    await account.request({ method: 'GET', url: `/v1/contacts/${id}` }),
  ).contact
}

const records = (account: TestAccount, contactId: string) =>
  consentHistory(harness.database.orm, account.accountId, contactId)

const chatOutbox = async (account: TestAccount) =>
  (await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).map((row) => row.payload)

const sendText = (account: TestAccount, contactId: string, text: string) =>
  account.request({ method: 'POST', url: '/v1/messages', payload: { contact_id: contactId, text } })

/** Inbound keyword, template, button: a confirmed contact. */
async function confirmedContact(account: TestAccount, phone = nextPhone()) {
  await inbound(account, { from: phone, name: 'Erika Muster', text: 'START' })
  const contactId = (await lastInbound(account)).contact_id
  await harness.jobs?.drain()
  await inbound(account, { from: phone, button: 'Ja, bestätigen' })
  assert.equal((await contactOf(account, contactId)).optin_chat, 'confirmed')
  return { contactId, phone }
}

describe('chat double opt-in through the sandbox', () => {
  test('keyword → pending → template sent → button → confirmed → free text 201', async () => {
    const account = await sandboxAccount()
    const phone = nextPhone()
    await inbound(account, { from: phone, name: 'Erika Muster', text: '  start ' })
    const keyword = await lastInbound(account)
    const contactId = keyword.contact_id
    assert.equal((await contactOf(account, contactId)).optin_chat, 'pending')

    await harness.jobs?.drain()
    const [template] = await chatOutbox(account)
    assert.equal(template.type, 'template')
    assert.equal(template.language, 'de')
    assert.deepEqual(template.parameters, ['Erika'])
    const conversation = json<{ conversations: Array<{ id: string }> }>(
      await account.request({ method: 'GET', url: '/v1/inbox/conversations' }),
    ).conversations[0]
    const history = json<{
      messages: Array<{
        direction: string
        type: string
        automated: boolean
        text: string
        template: { id: string; name: string; buttons: Array<{ type: string; text: string }> } | null
      }>
    }>(await account.request({ method: 'GET', url: `/v1/inbox/conversations/${conversation.id}/messages` })).messages
    const sent = history.find((m) => m.direction === 'outbound')
    assert.ok(sent)
    assert.equal(sent.type, 'template')
    assert.equal(sent.automated, true)
    assert.equal(sent.text, 'Hallo Erika, bitte bestätige deine Anmeldung für unsere Nachrichten.')
    // what the customer must press is shown with the message, and which template it was
    assert.ok(sent.template)
    assert.match(sent.template.id, /^[0-9a-f-]{36}$/)
    assert.deepEqual(sent.template.buttons, [{ type: 'QUICK_REPLY', text: 'Ja, bestätigen' }])
    assert.ok(history.filter((m) => m.direction === 'inbound').every((m) => m.template === null))

    await inbound(account, { from: phone, button: 'Ja, bestätigen' })
    const press = await lastInbound(account)
    assert.equal((await contactOf(account, contactId)).optin_chat, 'confirmed')

    const trail = await records(account, contactId)
    assert.deepEqual(
      trail.map((r) => [r.channel, r.fromState, r.toState, r.source]),
      [
        ['chat', 'none', 'pending', 'inbound_keyword'],
        ['chat', 'pending', 'confirmed', 'double_opt_in'],
      ],
    )
    assert.equal(trail[0].evidence.message_id, keyword.id)
    assert.equal(trail[0].evidence.keyword, 'START')
    assert.equal(trail[0].address, phone)
    assert.equal(trail[1].evidence.message_id, press.id)
    assert.equal(trail[1].evidence.button, 'Ja, bestätigen')

    const response = await sendText(account, contactId, 'Willkommen!')
    assert.equal(response.statusCode, 201, response.body)
  })

  test('a button press without a sent confirmation, or with another text, confirms nothing', async () => {
    const account = await sandboxAccount()
    const phone = nextPhone()
    await inbound(account, { from: phone, button: 'Ja, bestätigen' })
    const contactId = (await lastInbound(account)).contact_id
    assert.equal((await contactOf(account, contactId)).optin_chat, 'none')
    await inbound(account, { from: phone, text: 'START' })
    await harness.jobs?.drain()
    await inbound(account, { from: phone, button: 'Yes, confirm' })
    await inbound(account, { from: phone, text: 'Ja, bestätigen' })
    assert.equal((await contactOf(account, contactId)).optin_chat, 'pending')
  })

  test('STOP: opted_out with a consent record, confirmation sent, next send 409 contact_opted_out', async () => {
    const account = await sandboxAccount()
    const { contactId, phone } = await confirmedContact(account)
    await inbound(account, { from: phone, text: 'Abmelden' })
    const stop = await lastInbound(account)
    assert.equal((await contactOf(account, contactId)).optin_chat, 'opted_out')
    const record = (await records(account, contactId)).at(-1)
    assert.equal(record?.toState, 'opted_out')
    assert.equal(record?.source, 'inbound_keyword')
    assert.equal(record?.evidence.message_id, stop.id)

    await harness.jobs?.drain()
    const last = (await chatOutbox(account)).at(-1)
    assert.equal(last?.type, 'text')
    assert.match(String(last?.text), /abgemeldet/)
    const response = await sendText(account, contactId, 'Noch eine Nachricht')
    assert.equal(response.statusCode, 409, response.body)
    assert.equal(errorOf(response).code, 'contact_opted_out')
  })

  test('START after opting out starts a fresh double opt-in; START when confirmed changes nothing', async () => {
    const account = await sandboxAccount()
    const { contactId, phone } = await confirmedContact(account)
    const sentBefore = (await chatOutbox(account)).length
    await inbound(account, { from: phone, text: 'START' })
    await harness.jobs?.drain()
    assert.equal((await contactOf(account, contactId)).optin_chat, 'confirmed')
    assert.equal((await chatOutbox(account)).length, sentBefore, 'nothing is sent to a confirmed contact')

    await inbound(account, { from: phone, text: 'stop' })
    await harness.jobs?.drain()
    await inbound(account, { from: phone, text: 'Anmelden' })
    assert.equal((await contactOf(account, contactId)).optin_chat, 'pending')
    await harness.jobs?.drain()
    assert.equal((await chatOutbox(account)).at(-1)?.type, 'template')
    await inbound(account, { from: phone, button: 'Ja, bestätigen' })
    assert.equal((await contactOf(account, contactId)).optin_chat, 'confirmed')
    assert.deepEqual(
      (await records(account, contactId)).map((r) => r.toState),
      ['pending', 'confirmed', 'opted_out', 'pending', 'confirmed'],
    )
  })

  test('the provider opt-out (131050) takes the same path: opted_out, no confirmation, no further sends', async () => {
    const account = await sandboxAccount()
    const { contactId, phone } = await confirmedContact(account)
    const sentBefore = (await chatOutbox(account)).length
    // what the channels module does when a send comes back with 131050
    await harness.services.inbox.optOut(account.accountId, contactId, { provider_code: '131050' })
    await harness.jobs?.drain()
    assert.equal((await contactOf(account, contactId)).optin_chat, 'opted_out')
    const record = (await records(account, contactId)).at(-1)
    assert.equal(record?.source, 'provider_opt_out')
    assert.equal(record?.evidence.provider_code, '131050')
    assert.equal((await chatOutbox(account)).length, sentBefore, 'no confirmation after a provider opt-out')
    const response = await sendText(account, contactId, 'Angebot')
    assert.equal(errorOf(response).code, 'contact_opted_out')
    await inbound(account, { from: phone, text: 'START' })
    assert.equal((await contactOf(account, contactId)).optin_chat, 'pending')
  })

  test('a confirmation job that runs after an opt-out sends nothing', async () => {
    const account = await sandboxAccount()
    const phone = nextPhone()
    await inbound(account, { from: phone, text: 'START' })
    const contactId = (await lastInbound(account)).contact_id
    await harness.jobs?.drain()
    await harness.services.inbox.optOut(account.accountId, contactId, { provider_code: '131050' })
    const sentBefore = (await chatOutbox(account)).length
    // the job of the START, run late (after a lost lease, say)
    await harness.services.consent.sendChatConfirmation(account.accountId, contactId)
    assert.equal((await chatOutbox(account)).length, sentBefore)
    assert.equal((await contactOf(account, contactId)).optin_chat, 'opted_out')
  })

  test('a second run of the confirmation job (a lost lease) sends nothing', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: nextPhone(), text: 'START' })
    const contactId = (await lastInbound(account)).contact_id
    await harness.jobs?.drain()
    assert.equal((await chatOutbox(account)).length, 1)
    await harness.services.consent.sendChatConfirmation(account.accountId, contactId)
    assert.equal((await chatOutbox(account)).length, 1)
  })

  test('a keyword inside a sentence is no keyword', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: nextPhone(), text: 'Bitte START ich will mehr wissen' })
    const contactId = (await lastInbound(account)).contact_id
    assert.equal((await contactOf(account, contactId)).optin_chat, 'none')
  })

  test('without an approved optin_confirm template the contact stays pending and the settings say why', async () => {
    const account = await sandboxAccount({ template: false })
    await inbound(account, { from: nextPhone(), text: 'START' })
    const contactId = (await lastInbound(account)).contact_id
    await harness.jobs?.drain()
    assert.equal((await contactOf(account, contactId)).optin_chat, 'pending')
    assert.deepEqual(await chatOutbox(account), [])
    const settings = json<{ optin_confirm_template: unknown; chat_optins_without_template: number }>(
      await account.request({ method: 'GET', url: '/v1/settings/consent' }),
    )
    assert.equal(settings.optin_confirm_template, null)
    assert.equal(settings.chat_optins_without_template, 1)
  })

  test('an opt-in that waited for a template is sent once one is approved; a marketing approval sends nothing', async () => {
    const account = await sandboxAccount({ template: false })
    const phone = nextPhone()
    await inbound(account, { from: phone, name: 'Erika Muster', text: 'START' })
    const contactId = (await lastInbound(account)).contact_id
    await harness.jobs?.drain()
    assert.deepEqual(await chatOutbox(account), [])

    const submit = async (payload: Record<string, unknown>) => {
      const created = await account.request({ method: 'POST', url: '/v1/templates', payload })
      assert.equal(created.statusCode, 201, created.body)
      const id = json<{ template: { id: string } }>(created).template.id
      const submitted = await account.request({ method: 'POST', url: `/v1/templates/${id}/submit` })
      assert.equal(json<{ template: { state: string } }>(submitted).template.state, 'approved', submitted.body)
    }
    await submit({ name: `Angebot ${++counter}`, language: 'de', content: 'Hallo {{1}}, neue Angebote sind da.' })
    await harness.jobs?.drain()
    assert.deepEqual(await chatOutbox(account), [], 'a marketing template is no opt-in confirmation')

    await submit({
      name: `Anmeldung bestaetigen ${++counter}`,
      purpose: 'optin_confirm',
      language: 'de',
      content: 'Hallo {{1}}, bitte bestätige deine Anmeldung für unsere Nachrichten.',
    })
    await harness.jobs?.drain()
    const outbox = await chatOutbox(account)
    assert.equal(outbox.length, 1)
    assert.equal(outbox[0].type, 'template')
    assert.deepEqual(outbox[0].parameters, ['Erika'])
    const settings = json<{ chat_optins_without_template: number }>(
      await account.request({ method: 'GET', url: '/v1/settings/consent' }),
    )
    assert.equal(settings.chat_optins_without_template, 0)

    await inbound(account, { from: phone, button: 'Ja, bestätigen' })
    assert.equal((await contactOf(account, contactId)).optin_chat, 'confirmed')
  })

  test('the API never raises an opt-in: a created contact with optin fields stays none', async () => {
    const account = await sandboxAccount()
    const response = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name: 'X', phone: nextPhone(), optin_chat: 'confirmed', optin_email: 'confirmed' },
    })
    assert.ok(response.statusCode === 201 || response.statusCode === 400, response.body)
    if (response.statusCode === 201) {
      const contact = json<{ contact: { optin_chat: string; optin_email: string } }>(response).contact
      assert.equal(contact.optin_chat, 'none')
      assert.equal(contact.optin_email, 'none')
    }
  })
})

describe('GET/PATCH /v1/settings/consent', () => {
  test('defaults: START, Anmelden / STOP, Abmelden, the landing page address', async () => {
    const account = await sandboxAccount()
    const response = await account.request({ method: 'GET', url: '/v1/settings/consent' })
    assert.equal(response.statusCode, 200, response.body)
    const settings = json<Record<string, unknown>>(response)
    assert.deepEqual(settings.start_keywords, ['START', 'Anmelden'])
    assert.deepEqual(settings.stop_keywords, ['STOP', 'Abmelden'])
    assert.equal(settings.landing_page_url, `http://herold.test/public/signup/${account.accountId}`)
    assert.equal((settings.optin_confirm_template as { language: string }).language, 'de')
  })

  test('configured keywords replace the defaults; null restores them', async () => {
    const account = await sandboxAccount()
    const patched = await account.request({
      method: 'PATCH',
      url: '/v1/settings/consent',
      payload: { start_keywords: [' Ja bitte ', 'ja BITTE', 'Hallo'], stop_keywords: ['Tschüss'] },
    })
    assert.equal(patched.statusCode, 200, patched.body)
    assert.deepEqual(json<{ start_keywords: string[] }>(patched).start_keywords, ['Ja bitte', 'Hallo'])
    const phone = nextPhone()
    await inbound(account, { from: phone, text: 'START' })
    const contactId = (await lastInbound(account)).contact_id
    assert.equal((await contactOf(account, contactId)).optin_chat, 'none')
    await inbound(account, { from: phone, text: 'JA BITTE' })
    assert.equal((await contactOf(account, contactId)).optin_chat, 'pending')
    await inbound(account, { from: phone, text: 'STOP' })
    assert.equal((await contactOf(account, contactId)).optin_chat, 'pending')
    await inbound(account, { from: phone, text: 'TSCHÜSS' })
    assert.equal((await contactOf(account, contactId)).optin_chat, 'opted_out')

    const reset = await account.request({
      method: 'PATCH',
      url: '/v1/settings/consent',
      payload: { start_keywords: null, stop_keywords: null },
    })
    assert.deepEqual(json<{ stop_keywords: string[] }>(reset).stop_keywords, ['STOP', 'Abmelden'])
  })

  test('a keyword in both lists, an empty list or an empty text: 400 and nothing changes', async () => {
    const account = await sandboxAccount()
    for (const payload of [
      { start_keywords: ['Los'], stop_keywords: ['los'] },
      { start_keywords: ['STOP'] },
      { start_keywords: [] },
      { start_keywords: ['   '] },
      { stop_confirmation: '   ' },
    ]) {
      const response = await account.request({ method: 'PATCH', url: '/v1/settings/consent', payload })
      assert.equal(response.statusCode, 400, `${JSON.stringify(payload)}: ${response.body}`)
      assert.equal(errorOf(response).code, 'bad_request')
    }
    const overlap = await account.request({
      method: 'PATCH',
      url: '/v1/settings/consent',
      payload: { start_keywords: ['STOP'] },
    })
    assert.equal(errorOf(overlap).key, 'keywords_overlap')
    const settings = json<{ start_keywords: string[] }>(
      await account.request({ method: 'GET', url: '/v1/settings/consent' }),
    )
    assert.deepEqual(settings.start_keywords, ['START', 'Anmelden'])
  })

  test('the stop confirmation text is configurable', async () => {
    const account = await sandboxAccount()
    await account.request({
      method: 'PATCH',
      url: '/v1/settings/consent',
      payload: { stop_confirmation: 'Du bist abgemeldet. Tschüss!' },
    })
    await inbound(account, { from: nextPhone(), text: 'STOP' })
    await harness.jobs?.drain()
    assert.equal((await chatOutbox(account)).at(-1)?.text, 'Du bist abgemeldet. Tschüss!')
  })

  test('scopes: settings:read reads, settings:write changes', async () => {
    const account = await sandboxAccount()
    const reader = await createKey(harness, account.accountId, ['settings:read'])
    const asReader = (method: 'GET' | 'PATCH') =>
      harness.app.inject({
        method,
        url: '/v1/settings/consent',
        headers: { authorization: `Bearer ${reader}` },
        ...(method === 'PATCH' ? { payload: { stop_confirmation: 'x' } } : {}),
      })
    assert.equal((await asReader('GET')).statusCode, 200)
    const denied = await asReader('PATCH')
    assert.equal(denied.statusCode, 403)
    assert.deepEqual(errorOf(denied), { ...errorOf(denied), code: 'forbidden', key: 'apikey_scope_fehlt' })
  })
})
