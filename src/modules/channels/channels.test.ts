import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { createTestAccount, type Harness, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { busiestSecond } from '../../../test/helpers/jobs.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { pauseSending } from '../../platform/auth/accounts.service.ts'
import { TestClock } from '../../platform/clock.ts'
import { PACE_GUARD } from '../../platform/jobs/jobs.ts'
import { consentHistory } from '../contacts/index.ts'
import { sandboxOutboxOf } from './index.ts'
import { createPacer, effectiveRate } from './pacer.ts'
import { insideServiceWindow, sandboxTemplateDecision } from './sandbox.provider.ts'

let harness: Harness

// on a shared PostgreSQL test database any harness's workers may run any job (webhook deliveries to loopback included)
harnessPerFile({ config: { allowPrivateTargets: true }, workers: true }, (created) => {
  harness = created
})

const channels = () => harness.services.channels
const HOUR = 60 * 60 * 1000

async function sandboxAccount(): Promise<TestAccount> {
  const account = await createTestAccount(harness)
  await channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
  return account
}

async function customerWrites(account: TestAccount, from: string, text = 'Hallo') {
  const response = await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from, text } })
  assert.equal(response.statusCode, 200, response.body)
  const [message] = json<{ messages: Array<{ contact_id: string }> }>(
    await account.request({ method: 'GET', url: '/v1/messages?limit=1' }),
  ).messages
  return message.contact_id
}

describe('sandbox chat provider', () => {
  test('free text inside the 24-hour window is sent; after 24 h without an inbound message it fails with 131047', async () => {
    const account = await sandboxAccount()
    const contactId = await customerWrites(account, '+491601000000')
    harness.clock.advance(23 * HOUR)
    const inside = await channels().sendText(account.accountId, { contactId, to: '+491601000000', text: 'Antwort' })
    assert.equal(inside.ok, true)
    harness.clock.advance(2 * HOUR)
    const outside = await channels().sendText(account.accountId, { contactId, to: '+491601000000', text: 'zu spät' })
    assert.equal(outside.ok, false)
    assert.equal(!outside.ok && outside.error.kind, 'outside_window')
    assert.equal(!outside.ok && outside.error.providerCode, '131047')
    const sent = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.deepEqual(
      sent.map((s) => s.payload.text),
      ['Antwort'],
    )
  })

  test('a sent message reports sent, then delivered, then read', async () => {
    const account = await sandboxAccount()
    const contactId = await customerWrites(account, '+491602000000')
    await channels().sendText(account.accountId, { contactId, to: '+491602000000', text: 'Hi' })
    const status = async () =>
      json<{ messages: Array<{ status: string }> }>(
        await account.request({ method: 'GET', url: '/v1/messages?direction=outbound' }),
      ).messages[0].status
    assert.equal(await status(), 'sent')
    harness.clock.advance(1000)
    await harness.jobs?.drain()
    assert.equal(await status(), 'delivered')
    harness.clock.advance(1000)
    await harness.jobs?.drain()
    assert.equal(await status(), 'read')
  })

  test('templates are approved or rejected by the documented rule; only approved ones are sent', async () => {
    const account = await sandboxAccount()
    const submitGerman = (name: string, category: 'UTILITY' | 'MARKETING', content: string) =>
      channels().submitTemplate(account.accountId, { name, language: 'de', category, content })
    const good = await submitGerman('welcome_1', 'UTILITY', 'Hallo {{1}}, danke für Ihre Nachricht.')
    assert.equal(good.status, 'APPROVED')
    const bad = await submitGerman('ends_with_variable', 'MARKETING', 'Ihr Code: {{1}}')
    assert.equal(bad.status, 'REJECTED')
    assert.deepEqual(await channels().readTemplate(account.accountId, { name: 'welcome_1', language: 'de' }), {
      status: 'APPROVED',
      reason: null,
    })
    const contactId = await customerWrites(account, '+491603000000')
    harness.clock.advance(48 * HOUR)
    const template = await channels().sendTemplate(account.accountId, {
      contactId,
      to: '+491603000000',
      name: 'welcome_1',
      language: 'de',
      parameters: ['Erika'],
      text: 'Hallo Erika, danke für Ihre Nachricht.',
    })
    assert.equal(template.ok, true, 'a template works outside the window')
    const rejected = await channels().sendTemplate(account.accountId, {
      contactId,
      to: '+491603000000',
      name: 'ends_with_variable',
      language: 'de',
      parameters: ['1'],
      text: 'x',
    })
    assert.equal(rejected.ok, false)
    await channels().deleteTemplate(account.accountId, { name: 'welcome_1', language: 'de' })
    assert.equal(await channels().readTemplate(account.accountId, { name: 'welcome_1', language: 'de' }), null)
  })

  test('nothing goes out without a connected number or while sending is paused', async () => {
    const account = await createTestAccount(harness)
    await assert.rejects(
      channels().sendText(account.accountId, { contactId: crypto.randomUUID(), to: '+491604000000', text: 'x' }),
      { code: 'chat_not_connected', status: 409 },
    )
    await channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    await pauseSending(harness.database.orm, account.accountId)
    await assert.rejects(
      channels().sendText(account.accountId, { contactId: crypto.randomUUID(), to: '+491604000000', text: 'x' }),
      { code: 'subscription_locked', status: 403 },
    )
  })
})

describe('GET /settings/channels', () => {
  test('not connected, connected, then disconnected (was_connected), with German aliases', async () => {
    const account = await createTestAccount(harness)
    const read = async () =>
      json<{
        versand_moeglich: boolean
        chat: Record<string, unknown>
        email: Record<string, unknown>
      }>(await account.request({ method: 'GET', url: '/v1/settings/channels' }))
    const fresh = await read()
    assert.equal(fresh.versand_moeglich, false)
    assert.equal(fresh.chat.connected, false)
    assert.equal(fresh.chat.verbunden, false)
    assert.equal(fresh.chat.was_connected, false)
    assert.equal(fresh.chat.war_verbunden, false)
    await channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    const connected = await read()
    assert.equal(connected.versand_moeglich, true)
    assert.equal(connected.chat.versand_moeglich, true)
    assert.equal(connected.chat.verbunden, true)
    assert.equal(connected.chat.provider, 'sandbox')
    assert.equal(connected.chat.messages_per_second, 80)
    assert.equal(connected.email.versand_moeglich, false)
    await channels().disconnect(account.accountId, 'chat')
    const gone = await read()
    assert.equal(gone.versand_moeglich, false)
    assert.equal(gone.chat.connected, false)
    assert.equal(gone.chat.was_connected, true)
    assert.equal(gone.chat.war_verbunden, true)
  })

  test("the number's pace is where every worker's claim sees it: on connect, with coexistence, gone on disconnect", async () => {
    const account = await createTestAccount(harness)
    const pace = async () =>
      (
        await harness.database.query<{ per_second: number }>(
          "SELECT per_second FROM job_paces WHERE account_id = $1 AND lane = 'chat'",
          [account.accountId],
        )
      ).map((r) => Number(r.per_second))
    assert.deepEqual(await pace(), [])
    await channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox', messagesPerSecond: 250 })
    assert.deepEqual(await pace(), [250])
    await channels().setCoexistence(account.accountId, true)
    assert.deepEqual(await pace(), [20], 'coexistence: 20 a second')
    await channels().setCoexistence(account.accountId, false)
    assert.deepEqual(await pace(), [250])
    await channels().connect(account.accountId, { channel: 'email', provider: 'sandbox', address: 'shop@example.com' })
    assert.deepEqual(await pace(), [250], 'an e-mail connection leaves the chat pace alone')
    await channels().disconnect(account.accountId, 'chat')
    assert.deepEqual(await pace(), [])
  })

  test('versand_moeglich is false while sending is paused', async () => {
    const account = await sandboxAccount()
    await pauseSending(harness.database.orm, account.accountId)
    const body = json<{ versand_moeglich: boolean; chat: { versand_moeglich: boolean } }>(
      await account.request({ method: 'GET', url: '/v1/settings/channels' }),
    )
    assert.equal(body.versand_moeglich, false)
    assert.equal(body.chat.versand_moeglich, false)
  })

  test('settings:read is required', async () => {
    const account = await createTestAccount(harness, { scopes: ['inbox:read'] })
    const response = await account.request({ method: 'GET', url: '/v1/settings/channels' })
    assert.equal(response.statusCode, 403)
    assert.equal(json<{ error: { key: string } }>(response).error.key, 'apikey_scope_fehlt')
  })
})

describe('/settings/coexistence', () => {
  test('available only with a connected chat number; enabling without one gives 400', async () => {
    const account = await createTestAccount(harness)
    const read = await account.request({ method: 'GET', url: '/v1/settings/coexistence' })
    assert.equal(read.statusCode, 200)
    assert.equal(json<{ available: boolean }>(read).available, false)
    const refused = await account.request({
      method: 'PATCH',
      url: '/v1/settings/coexistence',
      payload: { enabled: true },
    })
    assert.equal(refused.statusCode, 400)
    assert.equal(json<{ error: { code: string } }>(refused).error.code, 'bad_request')
    await channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    const enabled = await account.request({
      method: 'PATCH',
      url: '/v1/settings/coexistence',
      payload: { enabled: true },
    })
    assert.equal(enabled.statusCode, 200, enabled.body)
    assert.deepEqual(json(enabled), { available: true, enabled: true, messages_per_second: 20 })
    const after = json<{ enabled: boolean }>(await account.request({ method: 'GET', url: '/v1/settings/coexistence' }))
    assert.equal(after.enabled, true)
    const missing = await account.request({ method: 'PATCH', url: '/v1/settings/coexistence', payload: {} })
    assert.equal(missing.statusCode, 400)
  })

  test('settings:write is required to change it', async () => {
    const account = await createTestAccount(harness, { scopes: ['settings:read'] })
    const response = await account.request({
      method: 'PATCH',
      url: '/v1/settings/coexistence',
      payload: { enabled: false },
    })
    assert.equal(response.statusCode, 403)
  })
})

describe('connecting', () => {
  test('credentials are stored encrypted; whatsapp-cloud needs all its fields', async () => {
    const account = await createTestAccount(harness)
    await assert.rejects(
      channels().connect(account.accountId, { channel: 'chat', provider: 'whatsapp-cloud', phoneNumberId: '1' }),
      { status: 400 },
    )
    await channels().connect(account.accountId, {
      channel: 'chat',
      provider: 'whatsapp-cloud',
      phoneNumberId: '1',
      wabaId: '2',
      accessToken: 'EAAG-very-secret-token',
      appSecret: 'app-secret-value',
      verifyToken: 'verify-me',
    })
    const [row] = await harness.database.query<{ credentials_sealed: string }>(
      'SELECT credentials_sealed FROM channel_connections WHERE account_id = $1',
      [account.accountId],
    )
    assert.match(row.credentials_sealed, /^v1\./)
    assert.ok(!row.credentials_sealed.includes('EAAG'))
    assert.ok(!row.credentials_sealed.includes('app-secret-value'))
  })

  test('messages per second may be set up to 1000, not beyond', async () => {
    const account = await createTestAccount(harness)
    await assert.rejects(
      channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox', messagesPerSecond: 1001 }),
      { status: 400 },
    )
    const ok = await channels().connect(account.accountId, {
      channel: 'chat',
      provider: 'sandbox',
      messagesPerSecond: 1000,
    })
    assert.equal(ok.messages_per_second, 1000)
  })
})

describe('provider error 131050', () => {
  test('a failed status with 131050 makes the contact opted_out for chat with a consent record', async () => {
    const account = await sandboxAccount()
    const contactId = await customerWrites(account, '+491605000000')
    await channels().sendText(account.accountId, { contactId, to: '+491605000000', text: 'Angebot' })
    const [sent] = json<{ messages: Array<{ id: string }> }>(
      await account.request({ method: 'GET', url: '/v1/messages?direction=out' }),
    ).messages
    const [row] = await harness.database.query<{ provider_message_id: string }>(
      'SELECT provider_message_id FROM messages WHERE account_id = $1 AND id = $2',
      [account.accountId, sent.id],
    )
    await harness.services.inbox.applyStatuses(account.accountId, [
      {
        channel: 'chat',
        providerMessageId: row.provider_message_id,
        status: 'failed',
        errorCode: '131050',
        optedOut: true,
      },
    ])
    const contact = json<{ contact: { optin_chat: string } }>(
      await account.request({ method: 'GET', url: `/v1/contacts/${contactId}` }),
    ).contact
    assert.equal(contact.optin_chat, 'opted_out')
    const history = await consentHistory(harness.database.orm, account.accountId, contactId)
    assert.equal(history.at(-1)?.toState, 'opted_out')
    assert.equal(history.at(-1)?.source, 'provider_opt_out')
  })
})

describe('rules', () => {
  test('the sandbox template rule', () => {
    assert.equal(sandboxTemplateDecision({ name: 'ok_name', content: 'Hallo {{1}}, willkommen.' }).status, 'APPROVED')
    assert.equal(sandboxTemplateDecision({ name: 'Bad Name', content: 'Hallo' }).status, 'REJECTED')
    assert.equal(sandboxTemplateDecision({ name: 'x', content: '{{1}} hallo' }).status, 'REJECTED')
    assert.equal(sandboxTemplateDecision({ name: 'x', content: 'hallo {{name}}.' }).status, 'REJECTED')
    assert.equal(sandboxTemplateDecision({ name: 'x', content: 'a {{}} b' }).status, 'REJECTED')
    assert.equal(sandboxTemplateDecision({ name: 'x', content: '   ' }).status, 'REJECTED')
  })

  test('the service window is open for less than 24 hours after the last inbound message', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 72 * HOUR }), (elapsed) => {
        const last = new Date('2026-01-01T00:00:00Z')
        const now = new Date(last.getTime() + elapsed)
        assert.equal(insideServiceWindow(last, now), elapsed < 24 * HOUR)
      }),
    )
    assert.equal(insideServiceWindow(null, new Date()), false)
  })

  test('pacing: 80/s by default, 20 with coexistence, never above 1000', () => {
    assert.equal(effectiveRate(80, false), 80)
    assert.equal(effectiveRate(1000, true), 20)
    assert.equal(effectiveRate(5000, false), 1000)
  })

  test('the in-process pacer (a number without a lane) keeps the pace from the first message: no burst unless set', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 3000 }),
        fc.constantFrom(0, 250),
        (rate, sends, burstMs) => {
          const clock = new TestClock('2026-01-01T00:00:00Z')
          const pacer = createPacer(clock, { burstMs })
          let last = 0
          for (let i = 0; i < sends; i++) last = pacer.reserve('number', rate)
          // at a standing clock the n-th send waits (n - 1) intervals less the burst: never more than the pace
          const interval = (1000 * PACE_GUARD) / rate
          const expected = Math.max(0, (sends - 1) * interval - burstMs)
          assert.ok(Math.abs(last - expected) < 0.5, `${last} vs ${expected}`)
        },
      ),
      { numRuns: 50 },
    )
  })

  test('the only process of the database (embedded) holds late messages at the pace instead of giving up their slots', async () => {
    // 45 messages at 40 a second whose slots all passed (a busy thread fired their timers late): they leave as the
    // window of the last second has room, never more than 40 in any second of real time, each at its slot or later
    const pacer = createPacer(new TestClock(), { exclusive: true })
    const past = new Date(Date.now() - 5_000)
    // the moments the pacer let each go (its own clock: a callback after it would add this thread's delays)
    const left = (
      await Promise.all(Array.from({ length: 45 }, () => pacer.atSlot(randomUUID(), 'number', 40, past)))
    ).map(Number)
    left.sort((x, y) => x - y)
    assert.equal(left.length, 45)
    assert.ok(busiestSecond(left) <= 40, `busiest second ${busiestSecond(left)}`)
    assert.ok(left[40] - left[0] >= 1000, 'the 41st a second after the first')
  })

  test('numbers are paced independently', () => {
    const pacer = createPacer(new TestClock())
    for (let i = 0; i < 100; i++) pacer.reserve('a', 20)
    assert.equal(pacer.reserve('b', 20), 0)
    assert.ok(pacer.reserve('a', 20) > 0)
  })
})
