import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { eq } from 'drizzle-orm'
import { createdContactId } from '../../../test/helpers/contacts.ts'
import { phoneSequence, setOptin } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { type SendSetup, type SendSetupOptions, sendSetup } from '../../../test/helpers/messaging.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { blockAccount, pauseSending } from '../../platform/auth/accounts.service.ts'
import { sandboxOutboxOf } from '../channels/index.ts'
import { monthIn, usedIn } from './messaging.quota.ts'
import { linkClicks } from './messaging.tables.ts'

let harness: Harness

harnessPerFile({ config: { allowPrivateTargets: true }, workers: true }, (created) => {
  harness = created
})

const DAY = 24 * 60 * 60 * 1000
let phoneCounter = 0
const nextPhone = phoneSequence('+4915')

async function customerWrites(account: TestAccount, phone: string) {
  const response = await account.request({
    method: 'POST',
    url: '/v1/sandbox/inbound',
    payload: { from: phone, text: 'Hallo' },
  })
  assert.equal(response.statusCode, 200, response.body)
}

/** A sandbox-connected account and a contact with confirmed chat opt-in inside the 24-hour window. */
const readyToSend = (options: SendSetupOptions = {}): Promise<SendSetup> =>
  sendSetup(harness, nextPhone(), { name: 'Erika', writesFirst: true, ...options })

const send = (account: TestAccount, payload: Record<string, unknown>, headers: Record<string, string> = {}) =>
  account.request({ method: 'POST', url: '/v1/messages', payload, headers })

const errorOf = (response: { json(): unknown }) => (response.json() as { error: { code: string; key: string } }).error

const sentTexts = async (accountId: string) =>
  (await sandboxOutboxOf(harness.database.orm, accountId, 'chat')).map((row) => row.payload.text)

async function outboundMessages(account: TestAccount) {
  return json<{ messages: Array<{ text: string; status: string }> }>(
    await account.request({ method: 'GET', url: '/v1/messages?direction=outbound' }),
  ).messages
}

const thisMonth = (account: TestAccount) =>
  usedIn(harness.database.orm, account.accountId, monthIn(harness.clock.now(), 'Europe/Berlin'))

/** A send refused with `status` and its key: nothing went out and no quota unit is spent. */
async function assertRefused(account: TestAccount, response: SendResponse, status: number, key: string) {
  assert.equal(response.statusCode, status, response.body)
  assert.deepEqual(errorOf(response), { ...errorOf(response), code: key, key })
  assert.deepEqual(await sentTexts(account.accountId), [])
  assert.equal(await thisMonth(account), 0)
}
type SendResponse = Awaited<ReturnType<typeof send>>

describe('POST /messages free text', () => {
  test('a confirmed contact inside the window gets the text at once: 201 with the stored message', async () => {
    const { account, contactId } = await readyToSend()
    const response = await send(account, { contact_id: contactId, text: 'Ihre Bestellung ist da' })
    assert.equal(response.statusCode, 201, response.body)
    const message = json<{ id: string; contact_id: string; direction: string; status: string; text: string }>(response)
    assert.equal(message.contact_id, contactId)
    assert.equal(message.direction, 'outbound')
    assert.equal(message.status, 'sent')
    assert.equal(message.text, 'Ihre Bestellung ist da')
    assert.deepEqual(await sentTexts(account.accountId), ['Ihre Bestellung ist da'])
    assert.equal(await thisMonth(account), 1)
  })

  test('both text and template, or neither, give 400 and nothing is sent', async () => {
    const { account, contactId } = await readyToSend()
    for (const payload of [
      { contact_id: contactId },
      { contact_id: contactId, text: 'x', template: { id: crypto.randomUUID() } },
    ]) {
      const response = await send(account, payload)
      assert.equal(response.statusCode, 400, response.body)
      assert.deepEqual(errorOf(response), { ...errorOf(response), code: 'bad_request', key: 'bad_request' })
    }
    assert.deepEqual(await sentTexts(account.accountId), [])
  })

  test('a template send is queued (202), not sent at once (template sends: messaging.sends.test.ts)', async () => {
    const { account, contactId } = await readyToSend()
    const response = await send(account, { contact_id: contactId, template: { id: crypto.randomUUID() } })
    assert.equal(response.statusCode, 404, 'an unknown template is not found')
    assert.equal(errorOf(response).code, 'not_found')
    assert.deepEqual(await sentTexts(account.accountId), [])
  })

  test('text over 4000 characters gives 400', async () => {
    const { account, contactId } = await readyToSend()
    const response = await send(account, { contact_id: contactId, text: 'a'.repeat(4001) })
    assert.equal(response.statusCode, 400, response.body)
    assert.equal(errorOf(response).code, 'bad_request')
  })

  test("a missing contact or another account's contact gives 404", async () => {
    const { account } = await readyToSend()
    const other = await readyToSend()
    for (const contactId of [crypto.randomUUID(), other.contactId]) {
      const response = await send(account, { contact_id: contactId, text: 'Hallo' })
      assert.equal(response.statusCode, 404, response.body)
      assert.deepEqual(errorOf(response), { ...errorOf(response), code: 'not_found', key: 'not_found' })
    }
    assert.deepEqual(await sentTexts(account.accountId), [])
    assert.deepEqual(await sentTexts(other.account.accountId), [])
  })

  test('a blocked account gives 403 account_blocked', async () => {
    const { account, contactId } = await readyToSend()
    await blockAccount(harness.database.orm, account.accountId)
    const response = await send(account, { contact_id: contactId, text: 'Hallo' })
    assert.equal(response.statusCode, 403, response.body)
    assert.equal(errorOf(response).code, 'account_blocked')
    assert.deepEqual(await sentTexts(account.accountId), [])
  })

  test('paused sending gives 403 subscription_locked, before the quota is touched', async () => {
    const { account, contactId } = await readyToSend()
    await pauseSending(harness.database.orm, account.accountId)
    const response = await send(account, { contact_id: contactId, text: 'Hallo' })
    await assertRefused(account, response, 403, 'subscription_locked')
  })

  test('a used-up monthly quota gives 403 limit_reached (key message_quota)', async () => {
    const { account, contactId } = await readyToSend({ messagesPerMonth: 1 })
    assert.equal((await send(account, { contact_id: contactId, text: 'eins' })).statusCode, 201)
    const response = await send(account, { contact_id: contactId, text: 'zwei' })
    assert.equal(response.statusCode, 403, response.body)
    assert.deepEqual(errorOf(response), { ...errorOf(response), code: 'limit_reached', key: 'message_quota' })
    assert.deepEqual(await sentTexts(account.accountId), ['eins'])
    assert.equal(await thisMonth(account), 1)
  })

  test('no chat number connected gives 409 chat_not_connected and the quota unit goes back', async () => {
    const { account, contactId } = await readyToSend({ connect: false })
    const response = await send(account, { contact_id: contactId, text: 'Hallo' })
    assert.equal(response.statusCode, 409, response.body)
    assert.deepEqual(errorOf(response), { ...errorOf(response), code: 'chat_not_connected', key: 'chat_not_connected' })
    assert.equal(await thisMonth(account), 0)
  })

  test('a contact without phone gives 409 contact_no_phone', async () => {
    const { account } = await readyToSend()
    const contactId = await createdContactId(account, { name: 'Mail only', email: `m${++phoneCounter}@example.com` })
    const response = await send(account, { contact_id: contactId, text: 'Hallo' })
    await assertRefused(account, response, 409, 'contact_no_phone')
  })

  test('an opted-out contact gives 409 contact_opted_out', async () => {
    const { account, contactId } = await readyToSend()
    await setOptin(harness, account.accountId, contactId, 'opted_out')
    const response = await send(account, { contact_id: contactId, text: 'Hallo' })
    await assertRefused(account, response, 409, 'contact_opted_out')
  })

  test('a contact whose chat opt-in is not confirmed gives 409 contact_not_optin', async () => {
    const { account } = await readyToSend()
    const phone = nextPhone()
    const contactId = await createdContactId(account, { name: 'Neu', phone })
    await customerWrites(account, phone)
    const response = await send(account, { contact_id: contactId, text: 'Hallo' })
    await assertRefused(account, response, 409, 'contact_not_optin')
  })

  test('the checks run in order: paused sending wins over a missing number and a missing opt-in', async () => {
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 0 } })
    const contactId = await createdContactId(account, { name: 'x', email: `o${++phoneCounter}@example.com` })
    const first = await send(account, { contact_id: contactId, text: 'Hallo' })
    assert.equal(errorOf(first).code, 'limit_reached', 'the quota comes before the number and the contact')
    await pauseSending(harness.database.orm, account.accountId)
    const second = await send(account, { contact_id: contactId, text: 'Hallo' })
    assert.equal(errorOf(second).code, 'subscription_locked', 'paused sending comes before the quota')
    const missing = await send(account, { contact_id: crypto.randomUUID(), text: 'Hallo' })
    assert.equal(errorOf(missing).code, 'not_found', 'the contact comes first')
  })

  test('a provider refusal outside the 24-hour window gives 502 send_failed; the message is stored as failed', async () => {
    const { account, contactId } = await readyToSend()
    harness.clock.advance(DAY + 1000)
    const response = await send(account, { contact_id: contactId, text: 'zu spät' })
    assert.equal(response.statusCode, 502, response.body)
    const error = json<{ error: { code: string; key: string; provider_code: string; message_id: string } }>(
      response,
    ).error
    assert.equal(error.code, 'send_failed')
    assert.equal(error.key, 'outside_window')
    assert.equal(error.provider_code, '131047')
    const [stored] = await outboundMessages(account)
    assert.equal(stored.text, 'zu spät')
    assert.equal(stored.status, 'failed')
    assert.deepEqual(await sentTexts(account.accountId), [])
    assert.equal(await thisMonth(account), 0, 'a refused message does not count')
  })
})

describe('the monthly quota', () => {
  test('two concurrent sends at the last free unit: one 201, one 403 limit_reached', async () => {
    const { account, contactId } = await readyToSend({ messagesPerMonth: 2 })
    assert.equal((await send(account, { contact_id: contactId, text: 'eins' })).statusCode, 201)
    const responses = await Promise.all([
      send(account, { contact_id: contactId, text: 'a' }),
      send(account, { contact_id: contactId, text: 'b' }),
    ])
    assert.deepEqual(responses.map((r) => r.statusCode).sort(), [201, 403])
    const refused = responses.find((r) => r.statusCode === 403)
    assert.equal(refused && errorOf(refused).code, 'limit_reached')
    assert.equal((await sentTexts(account.accountId)).length, 2)
    assert.equal(await thisMonth(account), 2)
  })

  test('a new calendar month in the account timezone frees the quota', async () => {
    const { account, contactId, phone } = await readyToSend({ messagesPerMonth: 1 })
    assert.equal((await send(account, { contact_id: contactId, text: 'eins' })).statusCode, 201)
    assert.equal((await send(account, { contact_id: contactId, text: 'zwei' })).statusCode, 403)
    harness.clock.advance(32 * DAY)
    await customerWrites(account, phone)
    const response = await send(account, { contact_id: contactId, text: 'drei' })
    assert.equal(response.statusCode, 201, response.body)
    assert.deepEqual(await sentTexts(account.accountId), ['eins', 'drei'])
  })

  test('the month is the calendar month in the account timezone', () => {
    assert.equal(monthIn(new Date('2026-11-30T12:00:00Z'), 'Pacific/Auckland'), '2026-12')
    assert.equal(monthIn(new Date('2026-11-30T23:30:00Z'), 'Europe/Berlin'), '2026-12')
    assert.equal(monthIn(new Date('2026-11-30T22:30:00Z'), 'Europe/Berlin'), '2026-11')
    assert.equal(monthIn(new Date('2026-12-01T03:00:00Z'), 'America/New_York'), '2026-11')
  })
})

describe('idempotency', () => {
  test('a retried request with the same Idempotency-Key sends once and replays the first response', async () => {
    const { account, contactId } = await readyToSend()
    const headers = { 'idempotency-key': `send-${crypto.randomUUID()}` }
    const first = await send(account, { contact_id: contactId, text: 'nur einmal' }, headers)
    const retry = await send(account, { contact_id: contactId, text: 'nur einmal' }, headers)
    assert.equal(first.statusCode, 201, first.body)
    assert.equal(retry.statusCode, 201, retry.body)
    assert.equal(retry.headers['idempotent-replayed'], 'true')
    assert.deepEqual(retry.json(), first.json())
    assert.deepEqual(await sentTexts(account.accountId), ['nur einmal'])
    assert.equal(await thisMonth(account), 1)
  })
})

describe('link tracking', () => {
  test('a sent address becomes a short link; following it redirects at once (302) and counts the click', async () => {
    const { account, contactId } = await readyToSend()
    const response = await send(account, {
      contact_id: contactId,
      text: 'Angebot: https://shop.example.com/sale?x=1 !',
    })
    assert.equal(response.statusCode, 201, response.body)
    const [sent] = await sentTexts(account.accountId)
    const match = /^Angebot: http:\/\/herold\.test\/public\/t\/c\/([A-Za-z0-9_-]+) !$/.exec(String(sent))
    assert.ok(match, `sent text: ${sent}`)
    assert.equal(json<{ text: string }>(response).text, sent, 'the stored message is the text as sent')
    const id = match[1]
    const redirect = await harness.app.inject({ method: 'GET', url: `/public/t/c/${id}` })
    assert.equal(redirect.statusCode, 302)
    assert.equal(
      redirect.headers.location,
      'https://shop.example.com/sale?x=1&utm_source=herold&utm_medium=chat&utm_campaign=api',
    )
    const clicks = await harness.database.orm.select().from(linkClicks).where(eq(linkClicks.linkId, id))
    assert.equal(clicks.length, 1)
    assert.equal(clicks[0].accountId, account.accountId)
    assert.equal(clicks[0].contactId, contactId)
    assert.equal(clicks[0].clickedAt.getTime(), harness.clock.now().getTime())
  })

  test('an unknown short link gives 404', async () => {
    const response = await harness.app.inject({ method: 'GET', url: '/public/t/c/doesnotexist' })
    assert.equal(response.statusCode, 404)
    assert.equal(errorOf(response).code, 'not_found')
  })
})

describe('contact deletion', () => {
  test('deleting a contact removes its short links and clicks (counted in removed); the link then gives 404', async () => {
    const { account, contactId } = await readyToSend()
    await send(account, { contact_id: contactId, text: 'https://shop.example.com/a' })
    const [sent] = await sentTexts(account.accountId)
    const id = String(sent).split('/').pop()
    await harness.app.inject({ method: 'GET', url: `/public/t/c/${id}` })
    const response = await account.request({ method: 'DELETE', url: `/v1/contacts/${contactId}` })
    assert.equal(response.statusCode, 200, response.body)
    const { removed } = json<{ removed: Record<string, number> }>(response)
    assert.equal(removed.tracked_links, 1)
    assert.equal(removed.link_clicks, 1)
    assert.equal((await harness.app.inject({ method: 'GET', url: `/public/t/c/${id}` })).statusCode, 404)
  })
})
