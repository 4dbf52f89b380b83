import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { cloudChatAccount, cloudNumber, postCloudWebhook } from '../../../test/helpers/cloud-account.ts'
import { type FakeGraph, graphHarnessPerFile, startFakeGraph } from '../../../test/helpers/fake-graph.ts'
import { nextPhone, setOptin } from '../../../test/helpers/fixtures.ts'
import type { Harness, TestAccount } from '../../../test/helpers/harness.ts'
import { paceOf } from '../../platform/jobs/adaptive-pace.ts'
import { CHAT_LANE } from '../channels/index.ts'

/** A fake Graph API on loopback: it records each request and answers POST …/messages like the Cloud API. */
interface GraphRequest {
  method: string
  path: string
  body: Record<string, unknown> | null
}

const NUMBER = cloudNumber('sends', '100200300400', '500600700')
const { accessToken: TOKEN, phoneNumberId: PHONE_NUMBER_ID, wabaId: WABA } = NUMBER

let graph: FakeGraph
const requests: GraphRequest[] = []
/** the next answers to POST …/messages, in order; default: success */
const messageAnswers: Array<{ status: number; body: unknown }> = []
/** recipients (as the Graph API writes them, no +) the Graph API refuses for the pair rate (131056) */
const pairLimited = new Set<string>()
let wamidCounter = 0

async function startGraph(): Promise<FakeGraph> {
  graph = await startFakeGraph(({ req, method, url, body, send }) => {
    requests.push({ method, path: url.pathname, body })
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return send(401, { error: { code: 190, message: 'token' } })
    if (method === 'POST' && url.pathname === `/v21.0/${PHONE_NUMBER_ID}/messages`) {
      if (pairLimited.has(String(body?.to))) {
        return send(400, {
          error: { code: 131056, message: '(#131056) (Business Account, Consumer Account) pair rate limit hit' },
        })
      }
      const answer = messageAnswers.shift()
      if (answer) return send(answer.status, answer.body)
      return send(200, { messaging_product: 'whatsapp', messages: [{ id: `wamid.SENDS${++wamidCounter}` }] })
    }
    if (method === 'POST' && url.pathname === `/v21.0/${WABA}/message_templates`) {
      return send(200, { id: `tpl-${++wamidCounter}`, status: 'PENDING' })
    }
    send(404, { error: { message: 'unknown path', code: 803 } })
  })
  return graph
}

let harness: Harness

graphHarnessPerFile(
  startGraph,
  (created) => {
    harness = created
  },
  { drainOnly: true },
)

let counter = 0

async function drain() {
  await harness.jobs!.start()
  await harness.jobs!.drain()
  await harness.jobs!.stop()
}

/** An account on whatsapp-cloud, a confirmed contact named Erika, and an approved template. */
async function cloudSetup(template: Record<string, unknown> = {}) {
  const account = await cloudChatAccount(harness, NUMBER)
  const phone = nextPhone()
  const created = await account.request({
    method: 'POST',
    url: '/v1/contacts',
    payload: { name: 'Erika Muster', phone },
  })
  const contactId = created.json().contact.id as string
  await setOptin(harness, account.accountId, contactId)
  const response = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: {
      name: `Angebot ${++counter}`,
      content: 'Hallo {{name}}, dein Rabatt: {{rabatt}}. Viel Spaß!',
      ...template,
    },
  })
  assert.equal(response.statusCode, 201, response.body)
  const templateId = response.json().template.id as string
  const submitted = await account.request({ method: 'POST', url: `/v1/templates/${templateId}/submit` })
  assert.equal(submitted.statusCode, 200, submitted.body)
  await harness.services.templates.applyProviderStatus(account.accountId, templateId, { status: 'APPROVED' })
  return { account, contactId, phone, templateId, providerName: response.json().template.provider_name as string }
}

async function queue(account: TestAccount, contactId: string, templateId: string, variables: Record<string, string>) {
  const response = await account.request({
    method: 'POST',
    url: '/v1/messages',
    payload: { contact_id: contactId, template: { id: templateId, variables } },
  })
  assert.equal(response.statusCode, 202, response.body)
  return response.json().send_id as string
}

const getSend = async (account: TestAccount, id: string) =>
  (await account.request({ method: 'GET', url: `/v1/sends/${id}` })).json()

const sentFor = (sendId: string) =>
  requests.filter((r) => r.path.endsWith('/messages') && r.body?.biz_opaque_callback_data === sendId)

async function statusWebhook(account: TestAccount, statuses: Array<Record<string, unknown>>) {
  const raw = JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: WABA,
        changes: [
          {
            field: 'messages',
            value: { messaging_product: 'whatsapp', metadata: { phone_number_id: PHONE_NUMBER_ID }, statuses },
          },
        ],
      },
    ],
  })
  const response = await postCloudWebhook(harness, account, NUMBER, raw)
  assert.equal(response.statusCode, 200, response.body)
}

describe('template sends through the WhatsApp Cloud API (fake Graph server)', () => {
  test('the request carries the template name, language, named parameters, header image and our send id', async () => {
    const { account, contactId, phone, templateId, providerName } = await cloudSetup({
      language: 'de',
      header_media: { url: 'https://cdn.example.com/header.jpg' },
      buttons: [
        { type: 'QUICK_REPLY', text: 'Stopp' },
        { type: 'URL', text: 'Zum Shop', url: 'https://shop.example.com/r/{{ref}}' },
      ],
    })
    const sendId = await queue(account, contactId, templateId, { rabatt: '20 %', ref: 'abc' })
    await drain()
    const [call] = sentFor(sendId)
    assert.ok(call, 'the send reached the Graph API')
    assert.equal(call.body?.to, phone.slice(1))
    assert.equal(call.body?.type, 'template')
    assert.deepEqual(call.body?.template, {
      name: providerName,
      language: { code: 'de' },
      components: [
        { type: 'header', parameters: [{ type: 'image', image: { link: 'https://cdn.example.com/header.jpg' } }] },
        {
          type: 'body',
          parameters: [
            { type: 'text', parameter_name: 'name', text: 'Erika' },
            { type: 'text', parameter_name: 'rabatt', text: '20 %' },
          ],
        },
        { type: 'button', sub_type: 'url', index: '1', parameters: [{ type: 'text', text: 'abc' }] },
      ],
    })
    const record = await getSend(account, sendId)
    assert.equal(record.status, 'sent')
    assert.ok(record.message_id)
  })

  test('positional templates send their parameters in number order', async () => {
    const { account, contactId, templateId } = await cloudSetup({
      content: 'Hallo {{1}}, deine Bestellung {{2}} kommt am {{3}} an.',
    })
    const sendId = await queue(account, contactId, templateId, { '3': 'Montag', '2': 'A-17' })
    await drain()
    const [call] = sentFor(sendId)
    const template = call.body?.template as { components: unknown[] }
    assert.deepEqual(template.components, [
      {
        type: 'body',
        parameters: [
          { type: 'text', text: 'Erika' },
          { type: 'text', text: 'A-17' },
          { type: 'text', text: 'Montag' },
        ],
      },
    ])
  })

  test('delivered and read arrive by the signed webhook, in any order: the send moves forward only', async () => {
    const { account, contactId, phone, templateId } = await cloudSetup()
    const sendId = await queue(account, contactId, templateId, { rabatt: '10 %' })
    await drain()
    const wamid = String(
      (
        await harness.database.query<{ p: string }>(
          'SELECT provider_message_id AS p FROM template_sends WHERE account_id = $1 AND id = $2',
          [account.accountId, sendId],
        )
      )[0].p,
    )
    const status = (s: string) => ({ id: wamid, status: s, timestamp: '1700000000', recipient_id: phone.slice(1) })
    await statusWebhook(account, [status('read')])
    await statusWebhook(account, [status('delivered'), status('sent')])
    const record = await getSend(account, sendId)
    assert.equal(record.status, 'read')
    assert.ok(record.delivered_at)
    assert.ok(record.read_at)
  })

  test('a throughput refusal (130429) puts the send back; it is sent once on the retry', async () => {
    const { account, contactId, templateId } = await cloudSetup()
    messageAnswers.push({ status: 400, body: { error: { code: 130429, message: 'Rate limit hit' } } })
    const sendId = await queue(account, contactId, templateId, { rabatt: '5 %' })
    await drain()
    const waiting = await getSend(account, sendId)
    assert.equal(waiting.status, 'queued')
    assert.equal(waiting.error_code, '130429')
    const messages = (await account.request({ method: 'GET', url: '/v1/messages?direction=outbound' })).json().messages
    assert.equal(messages.length, 0, 'nothing is stored for a throughput refusal')
    harness.clock.advance(60_000)
    await drain()
    const record = await getSend(account, sendId)
    assert.equal(record.status, 'sent')
    assert.equal(sentFor(sendId).length, 2, 'refused once, sent once')
  })

  test("a throughput refusal (130429) halves the number's pace where every process claims; it recovers step by step while sends succeed", async () => {
    const { account, contactId, templateId } = await cloudSetup()
    const pace = () => paceOf(harness.database.orm, { accountId: account.accountId, lane: CHAT_LANE })
    const chatPace = async () =>
      (await harness.services.channels.chatStatus(account.accountId, { sendingPaused: false })).pace
    messageAnswers.push({ status: 400, body: { error: { code: 130429, message: 'Rate limit hit' } } })
    const refused = await queue(account, contactId, templateId, { rabatt: '5 %' })
    await drain()
    const lowered = await pace()
    assert.equal(lowered?.perSecond, 40, 'half of the 80 a second the number is set to')
    assert.equal(lowered?.fullPerSecond, 80)
    assert.equal(lowered?.reducedReason, 'throughput_refused')
    const shown = await chatPace()
    assert.equal(shown.current, 40)
    assert.equal(shown.lowered_reason, 'throughput_refused')
    assert.equal(shown.lowered_since, harness.clock.now().toISOString())

    // the refused send comes back a second later, at the lower pace; one step of recovery needs 2 s without refusal
    harness.clock.advance(1_000)
    await drain()
    assert.equal((await getSend(account, refused)).status, 'sent')
    assert.equal(sentFor(refused).length, 2, 'refused once, sent once')
    assert.equal((await pace())?.perSecond, 40)

    harness.clock.advance(2_000)
    await queue(account, contactId, templateId, { rabatt: '6 %' })
    await drain()
    assert.equal((await pace())?.perSecond, 48, 'one step: a tenth of the full pace')

    harness.clock.advance(30_000)
    await queue(account, contactId, templateId, { rabatt: '7 %' })
    await drain()
    const full = await pace()
    assert.equal(full?.perSecond, 80)
    assert.equal(full?.reducedReason, null)
    assert.equal((await chatPace()).lowered_since, null)
  })

  test("a pair-rate refusal (131056) delays only that customer's send; the pace and other customers go on", async () => {
    const { account, contactId, phone, templateId } = await cloudSetup()
    const other = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name: 'Max', phone: nextPhone() },
    })
    const otherId = other.json().contact.id as string
    await setOptin(harness, account.accountId, otherId)
    pairLimited.add(phone.slice(1))
    const delayed = await queue(account, contactId, templateId, { rabatt: '5 %' })
    const first = await queue(account, otherId, templateId, { rabatt: '5 %' })
    await drain()
    const waiting = await getSend(account, delayed)
    assert.equal(waiting.status, 'queued')
    assert.equal(waiting.error_code, '131056')
    assert.equal((await getSend(account, first)).status, 'sent')
    const pace = await paceOf(harness.database.orm, { accountId: account.accountId, lane: CHAT_LANE })
    assert.equal(pace?.perSecond, 80, 'the number keeps its pace')
    assert.equal(pace?.reducedReason, null)

    // seconds later the other customer's next message goes out; this customer's still waits
    harness.clock.advance(5_000)
    const second = await queue(account, otherId, templateId, { rabatt: '6 %' })
    await drain()
    assert.equal((await getSend(account, second)).status, 'sent')
    assert.equal((await getSend(account, delayed)).status, 'queued')
    assert.equal(sentFor(delayed).length, 1)

    pairLimited.delete(phone.slice(1))
    harness.clock.advance(30_000)
    await drain()
    assert.equal((await getSend(account, delayed)).status, 'sent')
    assert.equal(sentFor(delayed).length, 2, 'refused once, sent once')
  })

  test('a refusal ends failed with the provider code; 131050 marks the contact opted out', async () => {
    const { account, contactId, templateId } = await cloudSetup()
    messageAnswers.push({ status: 400, body: { error: { code: 131050, message: 'User opted out of marketing' } } })
    const sendId = await queue(account, contactId, templateId, { rabatt: '5 %' })
    await drain()
    const record = await getSend(account, sendId)
    assert.equal(record.status, 'failed')
    assert.equal(record.reason, 'contact_opted_out')
    assert.equal(record.error_code, '131050')
    const contact = (await account.request({ method: 'GET', url: `/v1/contacts/${contactId}` })).json().contact
    assert.equal(contact.optin_chat, 'opted_out')

    messageAnswers.push({ status: 400, body: { error: { code: 132001, message: 'Template does not exist' } } })
    const other = await cloudSetup()
    const failed = await queue(other.account, other.contactId, other.templateId, { rabatt: '1 %' })
    await drain()
    const second = await getSend(other.account, failed)
    assert.equal(second.status, 'failed')
    assert.equal(second.reason, 'provider_refused')
    assert.equal(second.error_code, '132001')
  })
})
