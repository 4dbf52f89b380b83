import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { simpleParser } from 'mailparser'
import nodemailer, { type SendMailOptions } from 'nodemailer'
import { createTestAccount, type Harness, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { smtpChannel, smtpSinkPerFile } from '../../../test/helpers/smtp-sink.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { sandboxOutboxOf } from './index.ts'

let harness: Harness

// the pooled SMTP connections close before the sink
after(() => channels().close())
harnessPerFile({ config: { allowPrivateTargets: true } }, (created) => {
  harness = created
})
/** A real SMTP server on loopback that keeps what arrives. */
const smtp = smtpSinkPerFile()
const arrived = smtp.arrived

const channels = () => harness.services.channels

async function emailAccount(provider: 'smtp' | 'sandbox'): Promise<{ account: TestAccount; inboundUrl: string }> {
  const account = await createTestAccount(harness)
  const connected = await channels().connect(account.accountId, smtpChannel(smtp.port, provider))
  return { account, inboundUrl: connected.inbound_url }
}

async function rawMime(message: SendMailOptions): Promise<Buffer> {
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true })
  const info = await transport.sendMail(message)
  return info.message as Buffer
}

describe('e-mail sending', () => {
  test('smtp: the mail reaches a real SMTP server through nodemailer', async () => {
    const { account } = await emailAccount('smtp')
    const result = await channels().sendEmail(account.accountId, {
      to: 'kunde@example.org',
      subject: 'Ihre Anfrage',
      text: 'Vielen Dank für Ihre Nachricht.',
    })
    assert.equal(result.ok, true)
    const mail = arrived.at(-1)
    assert.ok(mail)
    assert.equal(mail.from, 'shop@example.com')
    assert.deepEqual(mail.to, ['kunde@example.org'])
    const parsed = await simpleParser(mail.raw)
    assert.equal(parsed.subject, 'Ihre Anfrage')
    assert.equal(parsed.text?.trim(), 'Vielen Dank für Ihre Nachricht.')
  })

  test('sandbox: sent mail is kept readable and nothing reaches the SMTP server', async () => {
    const { account } = await emailAccount('sandbox')
    const before = arrived.length
    const result = await channels().sendEmail(account.accountId, { to: 'a@example.org', subject: 'S', text: 'T' })
    assert.equal(result.ok, true)
    assert.equal(arrived.length, before)
    const [kept] = await sandboxOutboxOf(harness.database.orm, account.accountId, 'email')
    assert.equal(kept.recipient, 'a@example.org')
    assert.equal(kept.payload.subject, 'S')
    assert.equal(kept.payload.from, 'shop@example.com')
  })

  test('no e-mail channel: nothing is sent', async () => {
    const account = await createTestAccount(harness)
    await assert.rejects(channels().sendEmail(account.accountId, { to: 'a@example.org', subject: 'S', text: 'T' }), {
      status: 409,
    })
  })
})

describe('inbound e-mail (raw MIME)', () => {
  test('a piped MIME message becomes an inbound e-mail message of a new contact, attachment in our storage', async () => {
    const { account, inboundUrl } = await emailAccount('sandbox')
    const raw = await rawMime({
      from: 'Erika Muster <Erika@Example.org>',
      to: 'shop@example.com',
      subject: 'Frage zur Lieferung',
      text: 'Wann kommt mein Paket?',
      messageId: '<abc-1@example.org>',
      attachments: [{ filename: 'beleg.pdf', content: Buffer.from('%PDF-1.4 test'), contentType: 'application/pdf' }],
    })
    const url = new URL(inboundUrl)
    const response = await harness.app.inject({
      method: 'POST',
      url: `${url.pathname}${url.search}`,
      headers: { 'content-type': 'message/rfc822' },
      payload: raw,
    })
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(json<{ stored: boolean }>(response).stored, true)
    const [message] = json<{
      messages: Array<{ channel: string; text: string; contact_id: string; media_url: string; media_mime: string }>
    }>(await account.request({ method: 'GET', url: '/v1/messages' })).messages
    assert.equal(message.channel, 'email')
    assert.match(message.text, /Frage zur Lieferung/)
    assert.match(message.text, /Wann kommt mein Paket\?/)
    assert.equal(message.media_mime, 'application/pdf')
    const served = await harness.app.inject({ method: 'GET', url: new URL(message.media_url).pathname })
    assert.equal(served.body, '%PDF-1.4 test')
    const contact = json<{ contact: { email: string; name: string; source: string; optin_email: string } }>(
      await account.request({ method: 'GET', url: `/v1/contacts/${message.contact_id}` }),
    ).contact
    assert.equal(contact.email, 'erika@example.org')
    assert.equal(contact.name, 'Erika Muster')
    assert.equal(contact.source, 'inbound')
    assert.equal(contact.optin_email, 'none')
    const again = await harness.app.inject({
      method: 'POST',
      url: `${url.pathname}${url.search}`,
      headers: { 'content-type': 'message/rfc822' },
      payload: raw,
    })
    assert.equal(json<{ stored: boolean }>(again).stored, false, 'the same Message-ID is stored once')
    const conversations = json<{ conversations: Array<{ channel: string }> }>(
      await account.request({ method: 'GET', url: '/v1/inbox/conversations?channel=email' }),
    ).conversations
    assert.equal(conversations.length, 1)
  })

  test('a wrong inbound token is refused with 401 and nothing is stored', async () => {
    const { account } = await emailAccount('sandbox')
    const raw = await rawMime({ from: 'x@example.org', to: 'shop@example.com', subject: 'x', text: 'x' })
    const response = await harness.app.inject({
      method: 'POST',
      url: `/hooks/email/${account.accountId}?token=wrong`,
      headers: { 'content-type': 'message/rfc822' },
      payload: raw,
    })
    assert.equal(response.statusCode, 401)
    assert.equal(json<{ error: { code: string } }>(response).error.code, 'unauthorized')
    const list = json<{ messages: unknown[] }>(await account.request({ method: 'GET', url: '/v1/messages' }))
    assert.equal(list.messages.length, 0)
  })
})
