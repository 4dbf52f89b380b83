import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { makeDocx, makePdf, makeTextlessPdf, multipartBody, type Section } from '../../../test/helpers/documents.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { createAccount, createApiKey } from '../../platform/auth/accounts.service.ts'
import { SCOPES } from '../../platform/auth/scopes.ts'
import { AppError } from '../../platform/http/errors.ts'
import { createKnowledgeService } from './index.ts'
import { toPassages } from './knowledge.extract.ts'

let harness: Harness
let files: Server
let filesUrl: string
const served = new Map<string, { body: Buffer; type: string; status?: number; headers?: Record<string, string> }>()

before(async () => {
  harness = await createHarness({ config: { allowPrivateTargets: true } })
  files = createServer((request, response) => {
    const file = served.get(request.url ?? '')
    if (!file) return response.writeHead(404).end()
    response.writeHead(file.status ?? 200, { 'content-type': file.type, ...file.headers }).end(file.body)
  })
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve))
  filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`
})
after(async () => {
  await harness.close()
  await new Promise((resolve) => files.close(resolve))
})

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>

/** An account in the given language, with every scope (the test account helper makes German ones). */
async function accountIn(language: string): Promise<TestAccount> {
  const account = await createAccount(harness.database.orm, { name: `Knowledge ${language}`, language })
  harness.accountIds.push(account.id)
  const key = await createApiKey(harness.database.orm, { accountId: account.id, name: 'test', scopes: [...SCOPES] })
  return {
    accountId: account.id,
    keyId: key.id,
    key: key.key,
    request: (req) =>
      harness.app.inject({ ...req, headers: { authorization: `Bearer ${key.key}`, ...(req.headers ?? {}) } }),
  }
}

const GERMAN: Section[] = [
  {
    heading: 'Rücksendungen',
    paragraphs: [
      'Sie können jede Bestellung innerhalb von 30 Tagen kostenlos zurückschicken. Legen Sie den Rücksendeschein bei und bringen Sie das Paket zur nächsten Postfiliale.',
      'Die Erstattung erfolgt innerhalb von fünf Werktagen nach Eingang der Ware auf das ursprüngliche Zahlungsmittel.',
    ],
  },
  {
    heading: 'Öffnungszeiten',
    paragraphs: [
      'Unser Laden in Köln ist montags bis samstags von 9 bis 19 Uhr geöffnet. Sonntags bleibt er geschlossen.',
    ],
  },
]

const ENGLISH: Section[] = [
  {
    heading: 'Shipping',
    paragraphs: [
      'We deliver to Austria and Switzerland within three business days. Orders above 50 euros are delivered free of charge.',
    ],
  },
  {
    heading: 'Warranty',
    paragraphs: [
      'Every bicycle carries a two-year warranty on the frame. Shipping costs for warranty repairs are covered by us.',
    ],
  },
]

async function upload(account: TestAccount, body: Json) {
  return account.request({ method: 'POST', url: '/v1/knowledge/documents', payload: body })
}

async function search(account: TestAccount, q: string) {
  const response = await account.request({ method: 'GET', url: `/v1/knowledge/search?q=${encodeURIComponent(q)}` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json() as Json
}

describe('knowledge documents', () => {
  test('a multipart form field other than file is refused by name and nothing is stored', async () => {
    const account = await accountIn('de')
    const form = multipartBody('file', 'agb.txt', 'text/plain', Buffer.from('Unsere AGB gelten für alle Bestellungen.'))
    const boundary = form.headers['content-type'].split('boundary=')[1]
    const titled = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="titel"\r\n\r\nAGB\r\n`)
    const response = await account.request({
      method: 'POST',
      url: '/v1/knowledge/documents',
      payload: Buffer.concat([titled, form.payload]),
      headers: form.headers,
    })
    assert.equal(response.statusCode, 400, response.body)
    assert.equal(response.json().error.code, 'bad_request')
    assert.deepEqual(response.json().error.unknown_fields, ['titel'])
    const list = await account.request({ method: 'GET', url: '/v1/knowledge/documents' })
    assert.deepEqual(list.json().documents, [])
  })

  test('a German PDF uploaded as a multipart file is extracted, split under its headings and found with German stemming', async () => {
    const account = await accountIn('de')
    const pdf = await makePdf(GERMAN)
    const form = multipartBody('file', 'Kundenservice.pdf', 'application/pdf', pdf)
    const response = await account.request({
      method: 'POST',
      url: '/v1/knowledge/documents',
      payload: form.payload,
      headers: form.headers,
    })
    assert.equal(response.statusCode, 201, response.body)
    const document = response.json().document as Json
    assert.equal(document.format, 'pdf')
    assert.equal(document.source, 'upload')
    assert.equal(document.search_language, 'german')
    assert.equal(document.title, 'Kundenservice')
    assert.equal(document.size, pdf.length)
    assert.equal(document.passages, 2)

    // "Rücksendung" (singular) finds "Rücksendungen" and "Rücksendeschein" through the German stemmer
    const found = await search(account, 'Rücksendung')
    assert.equal(found.match, 'all')
    assert.ok(found.results.length >= 1)
    const [top] = found.results
    assert.equal(top.document.id, document.id)
    assert.equal(top.heading, 'Rücksendungen')
    assert.equal(top.position, 1)
    assert.equal(top.page, 1)
    assert.match(top.text, /innerhalb von 30 Tagen kostenlos/)
    assert.match(top.text, /fünf Werktagen/)

    const hours = await search(account, 'geöffnet Sonntag')
    assert.equal(hours.results[0].heading, 'Öffnungszeiten')
    assert.equal(hours.results[0].position, 2)
  })

  test('an English DOCX sent as base64 is indexed in English; a heading outweighs a mention in the text', async () => {
    const account = await accountIn('en')
    const docx = await makeDocx(ENGLISH)
    const response = await upload(account, {
      data_base64: docx.toString('base64'),
      filename: 'faq.docx',
      mime: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    })
    assert.equal(response.statusCode, 201, response.body)
    const document = response.json().document as Json
    assert.equal(document.format, 'docx')
    assert.equal(document.source, 'base64')
    assert.equal(document.search_language, 'english')
    assert.equal(document.passages, 2)

    // "ship" reaches "Shipping" and "delivered" is stemmed; both passages mention shipping, the heading wins
    const found = await search(account, 'ship')
    assert.equal(found.results.length, 2)
    assert.equal(found.results[0].heading, 'Shipping')
    assert.equal(found.results[1].heading, 'Warranty')
    assert.ok(found.results[0].rank > found.results[1].rank)
    assert.match(found.results[1].snippet, /\*\*Shipping\*\* costs/)

    const warranty = await search(account, 'bicycles frames')
    assert.equal(warranty.results[0].heading, 'Warranty')
    assert.equal(warranty.results[0].document.title, 'faq')
  })

  test('Markdown, HTML and plain text keep their headings; scripts and markup are not text', async () => {
    const account = await accountIn('en')
    const markdown =
      '# Returns policy\n\nItems can be **returned** within [30 days](https://example.com).\n\n## Gift cards\n\nGift cards never expire.\n'
    const html =
      '<!doctype html><html><head><title>Store hours</title><script>var secret = "tracking";</script></head><body><h2>Opening</h2><p>Open from 9&nbsp;to 5 on weekdays.</p><style>p{}</style></body></html>'
    const txt = 'Parking is free for customers.\n\nThe car park is behind the store.'
    const ids: Record<string, Json> = {}
    for (const [filename, text] of [
      ['policy.md', markdown],
      ['hours.html', html],
      ['parking.txt', txt],
    ]) {
      const response = await upload(account, { data_base64: Buffer.from(text).toString('base64'), filename })
      assert.equal(response.statusCode, 201, response.body)
      ids[filename] = response.json().document
    }
    assert.equal(ids['policy.md'].format, 'markdown')
    assert.equal(ids['hours.html'].format, 'html')
    assert.equal(ids['hours.html'].title, 'Store hours')
    assert.equal(ids['parking.txt'].format, 'txt')
    const gift = await search(account, 'expire')
    assert.equal(gift.results[0].heading, 'Gift cards')
    assert.equal(gift.results[0].text, 'Gift cards never expire.')
    const returned = await search(account, 'return')
    assert.equal(returned.results[0].text, 'Items can be returned within 30 days.')
    assert.equal((await search(account, 'tracking')).results.length, 0)
    const opening = await search(account, 'weekdays')
    assert.equal(opening.results[0].text, 'Open from 9 to 5 on weekdays.')
    assert.equal(opening.results[0].heading, 'Opening')
    const parking = await search(account, 'car park')
    assert.equal(parking.results[0].document.id, ids['parking.txt'].id)
  })

  test('a document without text is a 400 with the reason, and nothing is stored', async () => {
    const account = await accountIn('de')
    const scan = await upload(account, {
      data_base64: (await makeTextlessPdf()).toString('base64'),
      filename: 'scan.pdf',
    })
    assert.equal(scan.statusCode, 400)
    assert.equal(scan.json().error.code, 'bad_request')
    assert.equal(scan.json().error.key, 'document_no_text')
    assert.match(scan.json().error.message, /no extractable text/)
    const empty = await upload(account, {
      data_base64: Buffer.from('<html><script>x()</script></html>').toString('base64'),
      filename: 'empty.html',
    })
    assert.equal(empty.statusCode, 400)
    assert.equal(empty.json().error.key, 'document_no_text')
    const list = await account.request({ method: 'GET', url: '/v1/knowledge/documents' })
    assert.deepEqual(list.json().documents, [])
  })

  test('the format comes from the bytes: a mismatch and an unsupported file are refused', async () => {
    const account = await accountIn('de')
    const fake = await upload(account, { data_base64: Buffer.from('just text').toString('base64'), filename: 'a.pdf' })
    assert.equal(fake.statusCode, 400)
    assert.equal(fake.json().error.key, 'document_type_mismatch')
    const pdfAsText = await upload(account, {
      data_base64: (await makePdf(GERMAN)).toString('base64'),
      filename: 'notes.txt',
    })
    assert.equal(pdfAsText.json().error.key, 'document_type_mismatch')
    const png = Buffer.from('89504e470d0a1a0a0000000d4948445200000001', 'hex')
    const image = await upload(account, { data_base64: png.toString('base64'), filename: 'logo.png' })
    assert.equal(image.statusCode, 400)
    assert.equal(image.json().error.key, 'document_type_unsupported')
    const both = await upload(account, { url: `${filesUrl}/x`, data_base64: 'eA==', filename: 'x.txt' })
    assert.equal(both.json().error.key, 'document_form')
    const noName = await upload(account, { data_base64: 'eA==' })
    assert.equal(noName.json().error.key, 'filename_required')
    const broken = await upload(account, { data_base64: 'not base64!', filename: 'x.txt' })
    assert.equal(broken.json().error.key, 'data_base64_invalid')
  })

  test('the url form downloads through the guard: a loopback server with private targets allowed, refused without', async () => {
    const account = await accountIn('en')
    served.set('/docs/guide.html', {
      body: Buffer.from('<h1>Guide</h1><p>Batteries charge in four hours.</p>'),
      type: 'text/html; charset=utf-8',
    })
    const response = await upload(account, { url: `${filesUrl}/docs/guide.html` })
    assert.equal(response.statusCode, 201, response.body)
    const document = response.json().document as Json
    assert.equal(document.source, 'url')
    assert.equal(document.source_url, `${filesUrl}/docs/guide.html`)
    assert.equal(document.filename, 'guide.html')
    assert.equal((await search(account, 'battery charging')).results[0].document.id, document.id)

    const missing = await upload(account, { url: `${filesUrl}/nothing.pdf` })
    assert.equal(missing.statusCode, 400)
    assert.equal(missing.json().error.key, 'document_download_failed')
    assert.match(missing.json().error.message, /404/)

    // the same service with the guard on (the default): the loopback address is refused before any request
    const guarded = createKnowledgeService({
      config: { ...harness.config, allowPrivateTargets: false },
      database: harness.database,
      clock: harness.clock,
    })
    try {
      await assert.rejects(
        guarded.service.download(`https://127.0.0.1:${new URL(filesUrl).port}/docs/guide.html`),
        (error) => {
          assert.ok(error instanceof AppError)
          assert.equal(error.key, 'document_url_blocked')
          return true
        },
      )
      await assert.rejects(guarded.service.download(`${filesUrl}/docs/guide.html`), (error) => {
        assert.ok(error instanceof AppError)
        assert.equal(error.key, 'document_url_invalid')
        return true
      })
    } finally {
      await guarded.http.close()
    }
  })

  test('list, delete and tenancy: another account sees nothing and its id is a 404', async () => {
    const account = await accountIn('en')
    const other = await accountIn('en')
    const created = await upload(account, {
      data_base64: Buffer.from('Lockers are on the first floor.').toString('base64'),
      filename: 'lockers.txt',
    })
    const id = created.json().document.id as string
    const list = await account.request({ method: 'GET', url: '/v1/knowledge/documents?limit=1' })
    assert.equal(list.statusCode, 200)
    assert.equal(list.json().documents[0].id, id)
    assert.equal(list.json().has_more, false)
    assert.equal((await search(other, 'lockers')).results.length, 0)
    const foreign = await other.request({ method: 'DELETE', url: `/v1/knowledge/documents/${id}` })
    assert.equal(foreign.statusCode, 404)
    assert.equal(foreign.json().error.code, 'not_found')
    const removed = await account.request({ method: 'DELETE', url: `/v1/knowledge/documents/${id}` })
    assert.equal(removed.statusCode, 200)
    assert.deepEqual(removed.json(), { id, deleted: true, passages: 1 })
    assert.equal((await search(account, 'lockers')).match, 'none')
    const again = await account.request({ method: 'DELETE', url: `/v1/knowledge/documents/${id}` })
    assert.equal(again.statusCode, 404)
  })

  test('knowledge routes need knowledge:write', async () => {
    const account = await createTestAccount(harness, { scopes: ['contacts:read'] })
    for (const [method, url] of [
      ['GET', '/v1/knowledge/documents'],
      ['GET', '/v1/knowledge/search?q=x'],
      ['POST', '/v1/knowledge/documents'],
    ] as const) {
      const response = await account.request({
        method,
        url,
        payload: method === 'POST' ? { url: 'https://x.test/a' } : undefined,
      })
      assert.equal(response.statusCode, 403, url)
      assert.equal(response.json().error.key, 'apikey_scope_fehlt')
    }
  })
})

describe('passages', () => {
  test('paragraphs of one section join up to the target size, never across a heading, and long ones split at sentences', () => {
    const sentence = 'This sentence is about forty characters. '
    const long = sentence.repeat(60).trim()
    const passages = toPassages([
      { heading: 'A', text: 'A', page: null, isHeading: true },
      { heading: 'A', text: 'one', page: null },
      { heading: 'A', text: 'two', page: null },
      { heading: 'B', text: 'B', page: null, isHeading: true },
      { heading: 'B', text: long, page: null },
    ])
    assert.equal(passages[0].text, 'one\n\ntwo')
    assert.equal(passages[0].heading, 'A')
    assert.ok(passages.length >= 3)
    for (const p of passages.slice(1)) {
      assert.equal(p.heading, 'B')
      assert.ok(p.text.length <= 1500)
      assert.ok(p.text.endsWith('.'), p.text.slice(-20))
    }
    assert.deepEqual(
      passages.map((p) => p.position),
      passages.map((_, i) => i + 1),
    )
  })
})
