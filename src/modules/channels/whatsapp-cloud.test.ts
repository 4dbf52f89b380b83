import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { cloudChatAccount, cloudNumber, postCloudWebhook } from '../../../test/helpers/cloud-account.ts'
import { type FakeGraph, graphHarnessPerFile, startFakeGraph } from '../../../test/helpers/fake-graph.ts'
import { type Harness, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { consentHistory } from '../contacts/index.ts'
import { hubSignature, parseCloudWebhook, verifyHubSignature } from './whatsapp-cloud.provider.ts'

/** A fake Graph API on loopback: it checks the token and the request shape, and answers like the Cloud API. */
interface GraphRequest {
  method: string
  path: string
  query: URLSearchParams
  authorization: string | undefined
  body: Record<string, unknown> | null
}

const NUMBER = cloudNumber('test', '109876543210', '2233445566')
const { accessToken: TOKEN, verifyToken: VERIFY, phoneNumberId: PHONE_NUMBER_ID, wabaId: WABA } = NUMBER
const IMAGE = Buffer.from('ffd8ffe000104a464946', 'hex')

let graph: FakeGraph
const requests: GraphRequest[] = []
/** the next answers to POST …/messages, in order; default: success */
const messageAnswers: Array<{ status: number; body: unknown }> = []
let wamidCounter = 0

async function startGraph(): Promise<FakeGraph> {
  graph = await startFakeGraph(({ req, url, body, send }) => {
    const record: GraphRequest = {
      method: req.method ?? '',
      path: url.pathname,
      query: url.searchParams,
      authorization: req.headers.authorization,
      body,
    }
    requests.push(record)
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      return send(401, { error: { message: 'Invalid OAuth access token', code: 190 } })
    }
    if (req.method === 'POST' && url.pathname === `/v21.0/${PHONE_NUMBER_ID}/messages`) {
      const body = record.body ?? {}
      if (body.messaging_product !== 'whatsapp' || typeof body.to !== 'string' || body.to.startsWith('+')) {
        return send(400, { error: { message: 'bad request shape', code: 100 } })
      }
      const answer = messageAnswers.shift()
      if (answer) return send(answer.status, answer.body)
      return send(200, {
        messaging_product: 'whatsapp',
        contacts: [{ input: body.to, wa_id: body.to }],
        messages: [{ id: `wamid.TEST${++wamidCounter}` }],
      })
    }
    if (url.pathname === `/v21.0/${WABA}/message_templates`) {
      if (req.method === 'POST') return send(200, { id: '555', status: 'PENDING', category: record.body?.category })
      if (req.method === 'GET') {
        return send(200, {
          data: [{ name: url.searchParams.get('name'), language: 'de', status: 'APPROVED', id: '555' }],
        })
      }
      if (req.method === 'DELETE') return send(200, { success: true })
    }
    if (req.method === 'GET' && url.pathname === '/v21.0/media-1') {
      return send(200, {
        url: `${graph.url.replace('/v21.0', '')}/files/media-1`,
        mime_type: 'image/jpeg',
        id: 'media-1',
      })
    }
    if (req.method === 'GET' && url.pathname === '/files/media-1') return send(200, IMAGE, 'image/jpeg')
    send(404, { error: { message: 'unknown path', code: 803 } })
  })
  return graph
}

let harness: Harness

graphHarnessPerFile(startGraph, (created) => {
  harness = created
})

const channels = () => harness.services.channels

const cloudAccount = (): Promise<TestAccount> => cloudChatAccount(harness, NUMBER)

function webhookBody(value: Record<string, unknown>) {
  return {
    object: 'whatsapp_business_account',
    entry: [
      {
        id: WABA,
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '4930123456', phone_number_id: PHONE_NUMBER_ID },
              ...value,
            },
          },
        ],
      },
    ],
  }
}

const textMessage = (id: string, from: string, body: string) => ({
  contacts: [{ profile: { name: 'Max Muster' }, wa_id: from }],
  messages: [{ from, id, timestamp: '1700000000', type: 'text', text: { body } }],
})

async function postWebhook(account: TestAccount, body: unknown, signature?: string) {
  return postCloudWebhook(harness, account, NUMBER, JSON.stringify(body), signature)
}

async function inboundMessages(account: TestAccount) {
  return json<{ messages: Array<{ id: string; text: string; type: string; contact_id: string; media_url: string }> }>(
    await account.request({ method: 'GET', url: '/v1/messages' }),
  ).messages
}

/** A customer (`number`, international without +) writes first (`wamid`); `text` is sent back to them. */
async function answerCustomer(account: TestAccount, wamid: string, number: string, text: string) {
  await postWebhook(account, webhookBody(textMessage(wamid, number, 'Hallo')))
  const [inbound] = await inboundMessages(account)
  return channels().sendText(account.accountId, { contactId: inbound.contact_id, to: `+${number}`, text })
}

describe('whatsapp-cloud webhook', () => {
  test('the GET handshake answers hub.challenge only with the right verify token', async () => {
    const account = await cloudAccount()
    const ok = await harness.app.inject({
      method: 'GET',
      url: `/hooks/whatsapp-cloud/${account.accountId}?hub.mode=subscribe&hub.verify_token=${VERIFY}&hub.challenge=1158201444`,
    })
    assert.equal(ok.statusCode, 200)
    assert.equal(ok.body, '1158201444')
    const wrong = await harness.app.inject({
      method: 'GET',
      url: `/hooks/whatsapp-cloud/${account.accountId}?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1`,
    })
    assert.equal(wrong.statusCode, 403)
  })

  test('a signed inbound message is stored, with the sender as a new contact', async () => {
    const account = await cloudAccount()
    const response = await postWebhook(account, webhookBody(textMessage('wamid.IN1', '4917612345678', 'Moin')))
    assert.equal(response.statusCode, 200, response.body)
    const [message] = await inboundMessages(account)
    assert.equal(message.text, 'Moin')
    const contact = json<{ contact: { phone: string; name: string; source: string } }>(
      await account.request({ method: 'GET', url: `/v1/contacts/${message.contact_id}` }),
    ).contact
    assert.equal(contact.phone, '+4917612345678')
    assert.equal(contact.name, 'Max Muster')
    assert.equal(contact.source, 'inbound')
  })

  test('a bad signature is refused and nothing is stored', async () => {
    const account = await cloudAccount()
    const body = webhookBody(textMessage('wamid.BAD', '4917600000001', 'fake'))
    const forged = await postWebhook(account, body, hubSignature('wrong-secret', JSON.stringify(body)))
    assert.equal(forged.statusCode, 401)
    assert.equal(json<{ error: { code: string } }>(forged).error.code, 'unauthorized')
    const unsigned = await harness.app.inject({
      method: 'POST',
      url: `/hooks/whatsapp-cloud/${account.accountId}`,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    })
    assert.equal(unsigned.statusCode, 401)
    assert.equal((await inboundMessages(account)).length, 0)
  })

  test('the signature is checked over the raw bytes, not re-serialized JSON', async () => {
    const account = await cloudAccount()
    // spacing JSON.stringify would not reproduce
    const raw = `{ "object": "whatsapp_business_account",  "entry": ${JSON.stringify(webhookBody(textMessage('wamid.RAW', '4917600000002', 'raw')).entry)} }`
    const response = await postCloudWebhook(harness, account, NUMBER, raw)
    assert.equal(response.statusCode, 200, response.body)
    assert.equal((await inboundMessages(account))[0].text, 'raw')
  })

  test('a duplicate webhook (same message id) stores nothing twice', async () => {
    const account = await cloudAccount()
    const body = webhookBody(textMessage('wamid.DUP', '4917600000003', 'once'))
    await postWebhook(account, body)
    const again = await postWebhook(account, body)
    assert.equal(again.statusCode, 200)
    assert.equal(json<{ stored: number }>(again).stored, 0)
    assert.equal((await inboundMessages(account)).length, 1)
  })

  test('inbound media is downloaded from the Graph API into our storage', async () => {
    const account = await cloudAccount()
    await postWebhook(
      account,
      webhookBody({
        contacts: [{ profile: { name: 'Bild' }, wa_id: '4917600000004' }],
        messages: [
          {
            from: '4917600000004',
            id: 'wamid.IMG',
            timestamp: '1700000000',
            type: 'image',
            image: { id: 'media-1', mime_type: 'image/jpeg', caption: 'Schau' },
          },
        ],
      }),
    )
    const [message] = await inboundMessages(account)
    assert.equal(message.type, 'image')
    assert.equal(message.text, 'Schau')
    assert.ok(message.media_url.startsWith('http://herold.test/public/media/'))
    const served = await harness.app.inject({ method: 'GET', url: new URL(message.media_url).pathname })
    assert.deepEqual(served.rawPayload, IMAGE)
    const download = requests.filter((r) => r.path === '/files/media-1')
    assert.equal(download.at(-1)?.authorization, `Bearer ${TOKEN}`)
  })

  test('statuses arriving out of order never move backwards', async () => {
    const account = await cloudAccount()
    const sent = await answerCustomer(account, 'wamid.WIN', '4917600000005', 'Antwort')
    assert.ok(sent.ok)
    const status = (s: string) => ({
      statuses: [{ id: sent.providerMessageId, status: s, timestamp: '1700000001', recipient_id: '4917600000005' }],
    })
    const outbound = async () =>
      json<{ messages: Array<{ status: string }> }>(
        await account.request({ method: 'GET', url: '/v1/messages?direction=outbound' }),
      ).messages[0].status
    await postWebhook(account, webhookBody(status('read')))
    assert.equal(await outbound(), 'read')
    await postWebhook(account, webhookBody(status('delivered')))
    await postWebhook(account, webhookBody(status('sent')))
    assert.equal(await outbound(), 'read')
  })
})

describe('whatsapp-cloud sending', () => {
  test('free text goes to /{phone-number-id}/messages with the token and the number without +', async () => {
    const account = await cloudAccount()
    const result = await answerCustomer(account, 'wamid.S1', '4917600000006', 'Guten Tag')
    assert.ok(result.ok)
    const call = requests.filter((r) => r.path.endsWith('/messages')).at(-1)
    assert.equal(call?.authorization, `Bearer ${TOKEN}`)
    assert.deepEqual(call?.body, {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '4917600000006',
      type: 'text',
      text: { body: 'Guten Tag', preview_url: false },
    })
  })

  test('a media message: the file by its public link, the text as caption, a document with its filename', async () => {
    const account = await cloudAccount()
    await postWebhook(account, webhookBody(textMessage('wamid.M1', '4917600000016', 'Hallo')))
    const [inbound] = await inboundMessages(account)
    const to = { contactId: inbound.contact_id, to: '+4917600000016' }
    const picture = await channels().sendMedia(account.accountId, {
      ...to,
      text: 'So finden Sie uns.',
      media: { url: 'http://herold.test/public/media/acc/lageplan.png', mime: 'image/png', filename: 'lageplan.png' },
    })
    assert.ok(picture.ok)
    const posted = () => requests.filter((r) => r.path.endsWith('/messages')).at(-1)
    assert.equal(posted()?.authorization, `Bearer ${TOKEN}`)
    assert.deepEqual(posted()?.body, {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '4917600000016',
      type: 'image',
      image: { link: 'http://herold.test/public/media/acc/lageplan.png', caption: 'So finden Sie uns.' },
    })
    assert.equal(picture.message?.type, 'image')
    assert.equal(picture.message?.media_url, 'http://herold.test/public/media/acc/lageplan.png')
    assert.equal(picture.message?.media_mime, 'image/png')

    const pdf = await channels().sendMedia(account.accountId, {
      ...to,
      text: 'Unsere Preise',
      media: { url: 'http://herold.test/public/media/acc/preise.pdf', mime: 'application/pdf', filename: 'preise.pdf' },
    })
    assert.ok(pdf.ok)
    assert.deepEqual(posted()?.body, {
      messaging_product: 'whatsapp',
      recipient_type: 'individual',
      to: '4917600000016',
      type: 'document',
      document: {
        link: 'http://herold.test/public/media/acc/preise.pdf',
        caption: 'Unsere Preise',
        filename: 'preise.pdf',
      },
    })

    // audio takes no caption: the text goes first as free text, then the file
    const before = requests.length
    const voice = await channels().sendMedia(account.accountId, {
      ...to,
      text: 'Hören Sie mal',
      media: { url: 'http://herold.test/public/media/acc/gruss.ogg', mime: 'audio/ogg' },
    })
    assert.ok(voice.ok)
    assert.deepEqual(
      requests.slice(before).map((r) => [r.body?.type, r.body?.text ?? r.body?.audio]),
      [
        ['text', { body: 'Hören Sie mal', preview_url: false }],
        ['audio', { link: 'http://herold.test/public/media/acc/gruss.ogg' }],
      ],
    )

    // outside the window the Cloud API refuses it as free text: stored as failed with its media
    messageAnswers.push({ status: 400, body: { error: { message: 'Re-engagement message', code: 131047 } } })
    const late = await channels().sendMedia(account.accountId, {
      ...to,
      text: '',
      media: { url: 'http://herold.test/public/media/acc/film.mp4', mime: 'video/mp4' },
    })
    assert.equal(late.ok, false)
    assert.deepEqual(posted()?.body?.video, { link: 'http://herold.test/public/media/acc/film.mp4' })
    assert.equal(late.message?.status, 'failed')
    assert.equal(late.message?.media_url, 'http://herold.test/public/media/acc/film.mp4')
  })

  test('provider errors are mapped: 131047 outside window, 130429/131049/131056 retry later, 131050 opts out', async () => {
    const account = await cloudAccount()
    await postWebhook(account, webhookBody(textMessage('wamid.E1', '4917600000007', 'Hallo')))
    const [inbound] = await inboundMessages(account)
    const send = () =>
      channels().sendText(account.accountId, { contactId: inbound.contact_id, to: '+4917600000007', text: 'x' })
    const fail = (code: number) =>
      messageAnswers.push({ status: 400, body: { error: { message: `error ${code}`, code } } })
    const kinds: string[] = []
    for (const code of [131047, 130429, 131049, 131056]) {
      fail(code)
      const result = await send()
      assert.equal(result.ok, false)
      if (!result.ok) kinds.push(result.error.kind)
    }
    assert.deepEqual(kinds, ['outside_window', 'retry_later', 'retry_later', 'retry_later'])
    fail(131050)
    const optedOut = await send()
    assert.equal(!optedOut.ok && optedOut.error.kind, 'opted_out')
    const contact = json<{ contact: { optin_chat: string } }>(
      await account.request({ method: 'GET', url: `/v1/contacts/${inbound.contact_id}` }),
    ).contact
    assert.equal(contact.optin_chat, 'opted_out')
    const history = await consentHistory(harness.database.orm, account.accountId, inbound.contact_id)
    assert.equal(history.at(-1)?.toState, 'opted_out')
  })

  test('template calls: send, submit, read and delete at the WABA', async () => {
    const account = await cloudAccount()
    const submitted = await channels().submitTemplate(account.accountId, {
      name: 'order_update',
      language: 'de',
      category: 'UTILITY',
      content: 'Ihre Bestellung {{1}} ist unterwegs.',
    })
    assert.equal(submitted.status, 'PENDING')
    const post = requests.filter((r) => r.method === 'POST' && r.path.endsWith('/message_templates')).at(-1)
    assert.deepEqual(post?.body, {
      name: 'order_update',
      language: 'de',
      category: 'UTILITY',
      components: [{ type: 'BODY', text: 'Ihre Bestellung {{1}} ist unterwegs.' }],
    })
    assert.deepEqual(await channels().readTemplate(account.accountId, { name: 'order_update', language: 'de' }), {
      status: 'APPROVED',
      reason: null,
    })
    await channels().deleteTemplate(account.accountId, { name: 'order_update', language: 'de' })
    const del = requests.filter((r) => r.method === 'DELETE').at(-1)
    assert.equal(del?.query.get('name'), 'order_update')
    await assert.rejects(channels().sandboxInbound(account.accountId, { from: '+4917600000008', text: 'x' }), {
      status: 404,
    })
    await postWebhook(account, webhookBody(textMessage('wamid.T1', '4917600000008', 'Hallo')))
    const [inbound] = await inboundMessages(account)
    const template = await channels().sendTemplate(account.accountId, {
      contactId: inbound.contact_id,
      to: '+4917600000008',
      name: 'order_update',
      language: 'de',
      parameters: ['A-17'],
      text: 'Ihre Bestellung A-17 ist unterwegs.',
    })
    assert.ok(template.ok)
    const call = requests.filter((r) => r.path.endsWith('/messages')).at(-1)
    assert.deepEqual(call?.body?.template, {
      name: 'order_update',
      language: { code: 'de' },
      components: [{ type: 'body', parameters: [{ type: 'text', text: 'A-17' }] }],
    })
  })
})

describe('rules', () => {
  test('X-Hub-Signature-256 verification', () => {
    const body = Buffer.from('{"a":1}')
    assert.equal(verifyHubSignature('s', body, hubSignature('s', body)), true)
    assert.equal(verifyHubSignature('s', body, hubSignature('t', body)), false)
    assert.equal(verifyHubSignature('s', body, undefined), false)
    assert.equal(verifyHubSignature('s', body, 'sha256=zz'), false)
  })

  test('webhook parsing: button replies, locations and documents; other numbers are ignored', () => {
    const batch = parseCloudWebhook(
      webhookBody({
        messages: [
          {
            from: '491',
            id: 'a',
            type: 'interactive',
            interactive: { type: 'button_reply', button_reply: { id: 'y', title: 'Ja' } },
          },
          { from: '491', id: 'b', type: 'location', location: { latitude: 1.5, longitude: 2.5, name: 'Ort' } },
          {
            from: '491',
            id: 'c',
            type: 'document',
            document: { id: 'd1', mime_type: 'application/pdf', filename: 'r.pdf' },
          },
        ],
      }),
      PHONE_NUMBER_ID,
    )
    assert.deepEqual(
      batch.messages.map((m) => [m.type, m.text, m.from]),
      [
        ['button', 'Ja', '+491'],
        ['location', 'Ort (1.5, 2.5)', '+491'],
        ['document', '', '+491'],
      ],
    )
    assert.equal(batch.messages[2].media?.providerMediaId, 'd1')
    assert.equal(parseCloudWebhook(webhookBody(textMessage('x', '491', 'y')), 'another-number').messages.length, 0)
  })
})
