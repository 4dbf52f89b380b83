import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import nodemailer from 'nodemailer'
import { hostileFiles, jpegHead, png } from '../../../test/helpers/files.ts'
import { sandboxInbound } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'

// Issue 51, finding 1: what a customer sends is served so that no browser runs it on Herold's origin. Every stored
// file's answer carries a sandboxing CSP, nosniff and no framing; only inert types (PNG, JPEG, GIF, WebP, audio,
// video, plain text) are answered inline; anything else is a download of application/octet-stream.

let harness: Harness

harnessPerFile({ config: { allowPrivateTargets: true } }, (created) => {
  harness = created
})

interface Msg {
  media_url: string
  media_mime: string
  type: string
}

async function sandboxAccount(): Promise<TestAccount> {
  const account = await createTestAccount(harness)
  await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
  return account
}

/** The newest message's media as the public route answers it. */
async function served(account: TestAccount) {
  const [message] = json<{ messages: Msg[] }>(
    await account.request({ method: 'GET', url: '/v1/messages?limit=1' }),
  ).messages
  assert.ok(message.media_url, 'the message has media')
  const response = await harness.app.inject({ method: 'GET', url: new URL(message.media_url).pathname })
  assert.equal(response.statusCode, 200)
  return { message, response, file: new URL(message.media_url).pathname.split('/').pop()! }
}

async function sandboxMedia(account: TestAccount, mime: string, data: Buffer) {
  await sandboxInbound(account, { from: '+491517770001', media: { data_base64: data.toString('base64'), mime } })
  return served(account)
}

function assertInert(headers: Record<string, unknown>) {
  const csp = String(headers['content-security-policy'] ?? '')
  assert.match(csp, /(^|;\s*)sandbox(;|$)/, `a sandboxing CSP: ${csp}`)
  assert.match(csp, /default-src 'none'/)
  assert.match(csp, /frame-ancestors 'none'/)
  assert.equal(headers['x-content-type-options'], 'nosniff')
  assert.equal(headers['x-frame-options'], 'DENY')
}

function assertDownload(headers: Record<string, unknown>, file: string, extension: string) {
  assertInert(headers)
  assert.equal(headers['content-type'], 'application/octet-stream')
  assert.equal(headers['content-disposition'], `attachment; filename="${file}.${extension}"`)
  assert.equal(headers['cross-origin-resource-policy'], 'same-site')
}

describe('stored files are served inert', () => {
  test('an e-mail attachment of text/html is a download with a sandboxing CSP; the message keeps the claimed type', async () => {
    const account = await createTestAccount(harness)
    const connected = await harness.services.channels.connect(account.accountId, {
      channel: 'email',
      provider: 'sandbox',
      address: 'shop@example.com',
    })
    const transport = nodemailer.createTransport({ streamTransport: true, buffer: true })
    const html = hostileFiles('mail').find((f) => f.name === 'html')!
    const raw = (
      await transport.sendMail({
        from: 'Mallory <mallory@example.org>',
        to: 'shop@example.com',
        subject: 'Rechnung',
        text: 'Anbei die Rechnung',
        attachments: [{ filename: 'rechnung.html', content: html.data, contentType: 'text/html' }],
      })
    ).message as Buffer
    const url = new URL(connected.inbound_url!)
    const posted = await harness.app.inject({
      method: 'POST',
      url: `${url.pathname}${url.search}`,
      headers: { 'content-type': 'message/rfc822' },
      payload: raw,
    })
    assert.equal(posted.statusCode, 200, posted.body)
    const { message, response, file } = await served(account)
    assert.match(message.media_mime, /^text\/html/)
    assertDownload(response.headers, file, 'html')
    assert.deepEqual(response.rawPayload, html.data, 'the bytes themselves are kept as they came')
  })

  test('sandbox media of image/svg+xml, text/html, XML, JavaScript and an unknown type are downloads', async () => {
    const account = await sandboxAccount()
    const extensions: Record<string, string> = {
      html: 'html',
      svg: 'svg',
      xml: 'xml',
      xhtml: 'xhtml',
      js: 'js',
      unknown: 'bin',
      'png-claim': 'bin',
    }
    for (const hostile of hostileFiles('sandbox').filter((f) => f.name in extensions)) {
      const { message, response, file } = await sandboxMedia(account, hostile.mime, hostile.data)
      assert.equal(message.media_mime, hostile.mime, `${hostile.name}: the claimed type is recorded`)
      assertDownload(response.headers, file, extensions[hostile.name])
      assert.deepEqual(response.rawPayload, hostile.data)
    }
  })

  test('PNG and JPEG stay inline with their type (also under a wrong claim); plain text inline as text', async () => {
    const account = await sandboxAccount()
    const image = png(3, 2)
    for (const [mime, data, type] of [
      ['image/png', image, 'image/png'],
      ['image/jpeg', jpegHead(), 'image/jpeg'],
      ['image/svg+xml', image, 'image/png'],
      ['application/octet-stream', jpegHead(), 'image/jpeg'],
    ] as const) {
      const { response } = await sandboxMedia(account, mime, data)
      assertInert(response.headers)
      assert.equal(response.headers['content-type'], type, `${mime} of ${type} bytes`)
      assert.equal(response.headers['content-disposition'], undefined)
      assert.equal(response.headers['cross-origin-resource-policy'], 'cross-origin')
      assert.deepEqual(response.rawPayload, data)
    }
    const text = await sandboxMedia(account, 'text/plain; charset=UTF-7', Buffer.from('+ADw-script+AD4-'))
    assertInert(text.response.headers)
    assert.equal(text.response.headers['content-type'], 'text/plain', 'no UTF-7')
    const latin = await sandboxMedia(account, 'text/plain; charset=ISO-8859-1', Buffer.from('Gr\xfc\xdfe', 'latin1'))
    assert.equal(latin.response.headers['content-type'], 'text/plain; charset=iso-8859-1')
  })

  test('a PDF keeps its type but is a download (no browser shows a PDF under a sandbox)', async () => {
    const account = await sandboxAccount()
    const { response, file } = await sandboxMedia(account, 'application/pdf', Buffer.from('%PDF-1.4 test'))
    assertInert(response.headers)
    assert.equal(response.headers['content-type'], 'application/pdf')
    assert.equal(response.headers['content-disposition'], `attachment; filename="${file}.pdf"`)
  })
})
