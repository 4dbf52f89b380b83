import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { GetObjectCommand, HeadObjectCommand, S3Client } from '@aws-sdk/client-s3'
import S3rver from 's3rver'
import { png } from '../../../test/helpers/files.ts'
import {
  createHarness,
  createKey,
  createTestAccount,
  type Harness,
  type TestAccount,
} from '../../../test/helpers/harness.ts'
import { createOutboundHttp, OutboundError } from '../../platform/outbound-http.ts'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
const MB = 1024 * 1024

// ---- files made here, byte by byte ----

function box(type: string, payload: Buffer): Buffer {
  const size = Buffer.alloc(4)
  size.writeUInt32BE(8 + payload.length)
  return Buffer.concat([size, Buffer.from(type, 'ascii'), payload])
}

/** An MP4 file: an ftyp box (brand isom) and an mdat box of `bytes` bytes. */
function mp4(bytes = 1024): Buffer {
  const ftyp = box('ftyp', Buffer.concat([Buffer.from('isom'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2mp41')]))
  return Buffer.concat([ftyp, box('mdat', randomBytes(bytes))])
}

/** A one-page PDF. */
function pdf(): Buffer {
  const objects = [
    '1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj',
    '2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj',
    '3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >> endobj',
  ]
  let body = '%PDF-1.4\n'
  const offsets: number[] = []
  for (const object of objects) {
    offsets.push(body.length)
    body += `${object}\n`
  }
  const xref = body.length
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`
  for (const offset of offsets) body += `${String(offset).padStart(10, '0')} 00000 n \n`
  body += `trailer << /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return Buffer.from(body, 'latin1')
}

function multipart(
  fields: Record<string, string>,
  file?: { name: string; type: string; data: Buffer; field?: string },
) {
  const boundary = `----herold${randomBytes(8).toString('hex')}`
  const parts: Buffer[] = []
  for (const [name, value] of Object.entries(fields)) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`))
  }
  if (file) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${file.field ?? 'file'}"; filename="${file.name}"\r\nContent-Type: ${file.type}\r\n\r\n`,
      ),
      file.data,
      Buffer.from('\r\n'),
    )
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(parts), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

// ---- a file server on loopback ----

let files: Server
let filesUrl = ''
const served = new Map<string, { type: string; data: Buffer }>()

function startFiles(): Promise<void> {
  files = createServer((request, response) => {
    const url = request.url ?? '/'
    if (url.startsWith('/redirect/')) {
      response.writeHead(302, { location: `/${url.slice('/redirect/'.length)}` }).end()
      return
    }
    const file = served.get(url)
    if (!file) {
      response.writeHead(404).end('missing')
      return
    }
    response.writeHead(200, { 'content-type': file.type, 'content-length': file.data.length })
    response.end(file.data)
  })
  return new Promise((resolve) =>
    files.listen(0, '127.0.0.1', () => {
      filesUrl = `http://127.0.0.1:${(files.address() as AddressInfo).port}`
      resolve()
    }),
  )
}

let harness: Harness
let dataDir: string

before(async () => {
  await startFiles()
  dataDir = mkdtempSync(path.join(tmpdir(), 'herold-media-test-'))
  harness = await createHarness({ config: { allowPrivateTargets: true, dataDir } })
})
after(async () => {
  await harness.close()
  files.close()
})

const upload = (account: TestAccount, payload: Json) => account.request({ method: 'POST', url: '/v1/media', payload })
const base64 = (data: Buffer, filename: string, mime: string, extra: Json = {}) => ({
  data_base64: data.toString('base64'),
  filename,
  mime,
  ...extra,
})
const errorOf = (response: { json(): unknown }) => (response.json() as { error: Json }).error

async function libraryOf(account: TestAccount): Promise<Json[]> {
  const response = await account.request({ method: 'GET', url: '/v1/media' })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().media
}

/** The bytes behind a media url, through the public route that serves them. */
async function bytesAt(url: string): Promise<Buffer> {
  const response = await harness.app.inject({ method: 'GET', url: new URL(url).pathname })
  assert.equal(response.statusCode, 200, response.body)
  return response.rawPayload
}

describe('POST /media', () => {
  test('base64: a PNG becomes an image with its size and dimensions, stored in the data directory', async () => {
    const account = await createTestAccount(harness)
    const image = png(3, 2)
    const response = await upload(account, base64(image, 'logo.png', 'image/png', { usage: 'logo' }))
    assert.equal(response.statusCode, 200, response.body)
    const item = response.json().media
    assert.equal(item.kind, 'image')
    assert.equal(item.usage, 'logo')
    assert.equal(item.mime, 'image/png')
    assert.equal(item.size, image.length)
    assert.equal(item.width, 3)
    assert.equal(item.height, 2)
    assert.equal(item.filename, 'logo.png')
    assert.match(item.url, /^http:\/\/herold\.test\/public\/media\/[0-9a-f-]{36}\/[0-9a-f-]{36}$/)
    assert.deepEqual(await bytesAt(item.url), image)
    const key = new URL(item.url).pathname.replace('/public/media/', '')
    assert.deepEqual(readFileSync(path.join(dataDir, 'media', key)), image)
    const got = await account.request({ method: 'GET', url: `/v1/media/${item.id}` })
    assert.deepEqual(got.json().media, item)
  })

  test('multipart: an MP4 box is a video, a PDF a document; usage from the form field', async () => {
    const account = await createTestAccount(harness)
    const video = mp4(4096)
    const sent = multipart({ usage: 'newsletter' }, { name: 'clip.mp4', type: 'video/mp4', data: video })
    const response = await account.request({ method: 'POST', url: '/v1/media', ...sent })
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(response.json().media.kind, 'video')
    assert.equal(response.json().media.mime, 'video/mp4')
    assert.equal(response.json().media.usage, 'newsletter')
    assert.equal(response.json().media.width, undefined)
    assert.deepEqual(await bytesAt(response.json().media.url), video)

    // the usage field may come after the file; a part typed application/octet-stream claims nothing
    const document = pdf()
    const form = multipart({}, { name: 'agb.pdf', type: 'application/octet-stream', data: document })
    const late = await account.request({ method: 'POST', url: '/v1/media', ...form })
    assert.equal(late.statusCode, 200, late.body)
    assert.equal(late.json().media.kind, 'document')
    assert.equal(late.json().media.usage, 'generic')
  })

  test('multipart: a form field other than file and usage is refused by name and nothing is stored', async () => {
    const account = await createTestAccount(harness)
    const sent = multipart({ usgae: 'newsletter' }, { name: 'agb.pdf', type: 'application/pdf', data: pdf() })
    const response = await account.request({ method: 'POST', url: '/v1/media', ...sent })
    assert.equal(response.statusCode, 400, response.body)
    assert.equal(response.json().error.code, 'bad_request')
    assert.deepEqual(response.json().error.unknown_fields, ['usgae'])
    assert.match(response.json().error.message, /body\.usgae is not a known field/)
    const list = await account.request({ method: 'GET', url: '/v1/media' })
    assert.deepEqual(list.json().media, [])
  })

  test('the kind comes from the bytes: a mismatch with the claimed type or the extension is a 400, nothing stored', async () => {
    const account = await createTestAccount(harness)
    const cases: Array<[Json | ReturnType<typeof multipart>, string]> = [
      [base64(png(2, 2), 'bild.png', 'application/pdf'), 'media_type_mismatch'],
      [base64(png(2, 2), 'bild.pdf', 'image/png'), 'media_type_mismatch'],
      [base64(pdf(), 'rechnung.jpg', 'image/jpeg'), 'media_type_mismatch'],
      [base64(Buffer.from('just some text, not an image'), 'notes.png', 'image/png'), 'media_type_unsupported'],
      [
        base64(Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1'), 'a.gif', 'image/gif'),
        'media_type_unsupported',
      ],
      [multipart({}, { name: 'x.mp4', type: 'image/png', data: mp4() }), 'media_type_mismatch'],
    ]
    for (const [payload, key] of cases) {
      const response =
        'headers' in payload
          ? await account.request({ method: 'POST', url: '/v1/media', ...(payload as ReturnType<typeof multipart>) })
          : await upload(account, payload)
      assert.equal(response.statusCode, 400, response.body)
      assert.equal(errorOf(response).code, 'bad_request')
      assert.equal(errorOf(response).key, key, errorOf(response).message)
    }
    assert.deepEqual(await libraryOf(account), [])
  })

  test("WhatsApp's limits per kind: an image over 5 MB and a video over 16 MB are refused, nothing stored", async () => {
    const account = await createTestAccount(harness)
    const big = png(2, 2, 5 * MB)
    const image = await upload(account, base64(big, 'gross.png', 'image/png'))
    assert.equal(image.statusCode, 400, image.body)
    assert.equal(errorOf(image).key, 'media_too_large')
    assert.match(errorOf(image).message, /5 MB/)

    served.set('/big.mp4', { type: 'video/mp4', data: mp4(16 * MB) })
    const video = await upload(account, { url: `${filesUrl}/big.mp4` })
    assert.equal(video.statusCode, 400, video.body)
    assert.equal(errorOf(video).key, 'media_too_large')
    assert.match(errorOf(video).message, /16 MB/)

    const under = await upload(account, base64(png(2, 2, 4 * MB), 'fast-5.png', 'image/png'))
    assert.equal(under.statusCode, 200, under.body)
    assert.equal((await libraryOf(account)).length, 1)
    assert.equal(
      readdirSync(path.join(dataDir, 'tmp')).filter((f) => f.startsWith('herold-media-')).length,
      0,
      'no temporary file is left behind',
    )
  })

  test('url: downloaded from a loopback server, redirects followed; the name comes from the final address', async () => {
    const account = await createTestAccount(harness)
    const image = png(5, 4)
    served.set('/bilder/sommer.png', { type: 'image/png', data: image })
    const response = await upload(account, { url: `${filesUrl}/redirect/bilder/sommer.png`, usage: 'landing' })
    assert.equal(response.statusCode, 200, response.body)
    const item = response.json().media
    assert.equal(item.kind, 'image')
    assert.equal(item.width, 5)
    assert.equal(item.filename, 'sommer.png')
    assert.deepEqual(await bytesAt(item.url), image)

    const missing = await upload(account, { url: `${filesUrl}/nope.png` })
    assert.equal(missing.statusCode, 400)
    assert.equal(errorOf(missing).key, 'media_download_failed')
    served.set('/lie.png', { type: 'image/png', data: pdf() })
    const lie = await upload(account, { url: `${filesUrl}/lie.png` })
    assert.equal(errorOf(lie).key, 'media_type_mismatch')
  })

  test('url with the guard on: private and loopback addresses are refused, plain http too', async () => {
    const guarded = await createHarness({ config: { allowPrivateTargets: false } })
    try {
      const account = await createTestAccount(guarded)
      const port = (files.address() as AddressInfo).port
      for (const [url, key] of [
        [`https://127.0.0.1:${port}/x.png`, 'media_url_blocked'],
        [`https://localhost:${port}/x.png`, 'media_url_blocked'],
        [`https://[::1]:${port}/x.png`, 'media_url_blocked'],
        [`https://10.0.0.8/x.png`, 'media_url_blocked'],
        [`http://example.com/x.png`, 'media_url_invalid'],
        ['not a url', 'media_url_invalid'],
      ]) {
        const response = await account.request({ method: 'POST', url: '/v1/media', payload: { url } })
        assert.equal(response.statusCode, 400, response.body)
        assert.equal(errorOf(response).key, key, `${url}: ${response.body}`)
      }
    } finally {
      await guarded.close()
    }
  })

  test('a redirect to a refused address is refused at that hop', async () => {
    const http = createOutboundHttp({ allowPrivateTargets: false, isAllowed: (address) => address === '127.0.0.1' })
    const port = (files.address() as AddressInfo).port
    served.set('/ok.png', { type: 'image/png', data: png(1, 1) })
    const fine = await http.download(`http://127.0.0.1:${port}/redirect/ok.png`)
    for await (const _ of fine.body);
    const redirecting = createServer((_request, response) =>
      response.writeHead(302, { location: `http://[::1]:${port}/ok.png` }).end(),
    )
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve))
    try {
      await assert.rejects(
        http.download(`http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/`),
        (error: unknown) => error instanceof OutboundError && error.code === 'blocked_target',
      )
    } finally {
      redirecting.close()
      await http.close()
    }
  })

  test('bad bodies: no form, both forms, bad usage, bad base64, a file part under another name', async () => {
    const account = await createTestAccount(harness)
    const bad: Array<[Json | ReturnType<typeof multipart>, string]> = [
      [{}, 'bad_request'],
      [{ url: 'https://example.com/a.png', data_base64: 'AAAA' }, 'bad_request'],
      [base64(png(1, 1), 'a.png', 'image/png', { usage: 'wallpaper' }), 'bad_request'],
      [{ data_base64: '***', filename: 'a.png', mime: 'image/png' }, 'media_base64_invalid'],
      [{ data_base64: 'AAAA', filename: 'ohne-endung', mime: 'image/png' }, 'bad_request'],
      [multipart({ usage: 'generic' }), 'bad_request'],
      [multipart({ usage: 'poster' }, { name: 'a.png', type: 'image/png', data: png(1, 1) }), 'bad_request'],
      [multipart({}, { name: 'a.png', type: 'image/png', data: png(1, 1), field: 'bild' }), 'bad_request'],
    ]
    for (const [payload, key] of bad) {
      const response =
        'headers' in payload
          ? await account.request({ method: 'POST', url: '/v1/media', ...(payload as ReturnType<typeof multipart>) })
          : await upload(account, payload)
      assert.equal(response.statusCode, 400, response.body)
      assert.equal(errorOf(response).key, key, response.body)
    }
    assert.deepEqual(await libraryOf(account), [])
  })
})

describe('GET /media, DELETE /media/{id}', () => {
  test('list newest first with a kind filter and pages; another account sees nothing and gets 404', async () => {
    const account = await createTestAccount(harness)
    const ids: string[] = []
    for (const [data, name, mime] of [
      [png(1, 1), 'a.png', 'image/png'],
      [mp4(), 'b.mp4', 'video/mp4'],
      [png(2, 2), 'c.png', 'image/png'],
      [pdf(), 'd.pdf', 'application/pdf'],
    ] as const) {
      harness.clock.advance(1000)
      const response = await upload(account, base64(data, name, mime))
      assert.equal(response.statusCode, 200, response.body)
      ids.push(response.json().media.id)
    }
    assert.deepEqual(
      (await libraryOf(account)).map((m) => m.id),
      [...ids].reverse(),
    )
    const images = await account.request({ method: 'GET', url: '/v1/media?kind=image&limit=1' })
    assert.deepEqual(
      images.json().media.map((m: Json) => m.id),
      [ids[2]],
    )
    assert.equal(images.json().has_more, true)
    assert.equal(images.json().next_offset, 1)
    const second = await account.request({ method: 'GET', url: '/v1/media?kind=image&limit=1&offset=1' })
    assert.deepEqual(
      second.json().media.map((m: Json) => m.id),
      [ids[0]],
    )
    assert.equal(second.json().has_more, false)
    const badKind = await account.request({ method: 'GET', url: '/v1/media?kind=audio' })
    assert.equal(badKind.statusCode, 400)

    const other = await createTestAccount(harness)
    assert.deepEqual(await libraryOf(other), [])
    for (const method of ['GET', 'DELETE'] as const) {
      const response = await other.request({ method, url: `/v1/media/${ids[0]}` })
      assert.equal(response.statusCode, 404)
      assert.equal(errorOf(response).code, 'not_found')
    }
    const readOnly = await createKey(harness, account.accountId, ['media:read'])
    const denied = await harness.app.inject({
      method: 'POST',
      url: '/v1/media',
      headers: { authorization: `Bearer ${readOnly}` },
      payload: base64(png(1, 1), 'a.png', 'image/png'),
    })
    assert.equal(denied.statusCode, 403)
    assert.equal(errorOf(denied).key, 'apikey_scope_fehlt')
  })

  test("delete removes the row and the file; 409 while a template's header image uses it", async () => {
    const account = await createTestAccount(harness)
    const item = (await upload(account, base64(png(4, 4), 'kopf.png', 'image/png', { usage: 'template' }))).json().media
    const template = await account.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: 'mit_bild', content: 'Hallo {{1}}', header_media: { url: item.url, mime_type: 'image/png' } },
    })
    assert.equal(template.statusCode, 201, template.body)
    const blocked = await account.request({ method: 'DELETE', url: `/v1/media/${item.id}` })
    assert.equal(blocked.statusCode, 409, blocked.body)
    assert.equal(errorOf(blocked).code, 'media_in_use')
    assert.equal(errorOf(blocked).used_by.length, 1)

    const removedHeader = await account.request({
      method: 'PATCH',
      url: `/v1/templates/${template.json().id ?? template.json().template?.id}`,
      payload: { header_media: null },
    })
    assert.equal(removedHeader.statusCode, 200, removedHeader.body)
    const key = new URL(item.url).pathname.replace('/public/media/', '')
    assert.ok(existsSync(path.join(dataDir, 'media', key)))
    const deleted = await account.request({ method: 'DELETE', url: `/v1/media/${item.id}` })
    assert.equal(deleted.statusCode, 200, deleted.body)
    assert.deepEqual(deleted.json(), { ok: true, id: item.id })
    assert.equal(existsSync(path.join(dataDir, 'media', key)), false)
    assert.equal((await account.request({ method: 'GET', url: `/v1/media/${item.id}` })).statusCode, 404)
    const gone = await harness.app.inject({ method: 'GET', url: new URL(item.url).pathname })
    assert.equal(gone.statusCode, 404)
  })
})

describe('S3-compatible storage', () => {
  test('with HEROLD_STORAGE_URL the bytes go to the bucket (s3rver on loopback), are served and deleted there', async () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'herold-s3rver-'))
    const s3 = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory,
      configureBuckets: [{ name: 'herold-media', configs: [] }],
    })
    const { port } = await s3.run()
    const endpoint = `http://127.0.0.1:${port}`
    const storageUrl = `s3://S3RVER:S3RVER@herold-media/library?endpoint=${encodeURIComponent(endpoint)}`
    const withS3 = await createHarness({ config: { storageUrl } })
    const client = new S3Client({
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    })
    try {
      const account = await createTestAccount(withS3)
      const document = pdf()
      const form = multipart({ usage: 'blog' }, { name: 'preise.pdf', type: 'application/pdf', data: document })
      const response = await account.request({ method: 'POST', url: '/v1/media', ...form })
      assert.equal(response.statusCode, 200, response.body)
      const item = response.json().media
      const key = `library/${new URL(item.url).pathname.replace('/public/media/', '')}`
      const object = await client.send(new GetObjectCommand({ Bucket: 'herold-media', Key: key }))
      assert.equal(object.ContentType, 'application/pdf')
      assert.deepEqual(Buffer.from(await object.Body!.transformToByteArray()), document)
      const servedBack = await withS3.app.inject({ method: 'GET', url: new URL(item.url).pathname })
      assert.equal(servedBack.statusCode, 200)
      assert.equal(servedBack.headers['content-type'], 'application/pdf')
      assert.deepEqual(servedBack.rawPayload, document)

      const deleted = await account.request({ method: 'DELETE', url: `/v1/media/${item.id}` })
      assert.equal(deleted.statusCode, 200, deleted.body)
      await assert.rejects(client.send(new HeadObjectCommand({ Bucket: 'herold-media', Key: key })))
    } finally {
      client.destroy()
      await withS3.close()
      await s3.close()
    }
  })
})
