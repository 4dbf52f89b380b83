import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { png } from '../../../test/helpers/files.ts'
import { phoneSequence, setOptin } from '../../../test/helpers/fixtures.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { scheduleNewsletter } from '../../../test/helpers/newsletters.ts'
import { sandboxOutboxOf } from '../channels/index.ts'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
const HOUR = 3600_000

const PDF = Buffer.from(
  '%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n',
)

let harness: Harness
let dataDir: string
const nextPhone = phoneSequence('+4914')

before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'herold-refs-test-'))
  // WhatsApp fetches header images by https address: the public address is https here
  harness = await createHarness({ workers: true, config: { publicUrl: 'https://herold.example', dataDir } })
  await harness.jobs!.stop()
})
after(async () => {
  await harness.close()
  rmSync(dataDir, { recursive: true, force: true })
})

const errorOf = (response: { json(): unknown }) => (response.json() as { error: Json }).error

async function drain() {
  await harness.jobs!.start()
  await harness.jobs!.drain()
  await harness.jobs!.stop()
}

async function uploaded(account: TestAccount, data: Buffer, filename: string, mime: string): Promise<Json> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/media',
    payload: { data_base64: data.toString('base64'), filename, mime },
  })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().media
}

const remove = (account: TestAccount, id: string) => account.request({ method: 'DELETE', url: `/v1/media/${id}` })

describe('templates refer to a media library file by id', () => {
  test('media_id becomes the file address and type; another account’s id is a 404, a PDF a 400, both forms a 400', async () => {
    const account = await createTestAccount(harness)
    const image = await uploaded(account, png(4, 3), 'kopf.png', 'image/png')
    const created = await account.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: 'mit_bild', content: 'Hallo {{1}}, neu da.', header_media: { media_id: image.id } },
    })
    assert.equal(created.statusCode, 201, created.body)
    const template = created.json().template ?? created.json()
    assert.deepEqual(template.header_media, { media_id: image.id, url: image.url, mime_type: 'image/png' })

    // in use: the delete is a 409 in the spec's error format, naming the template
    const blocked = await remove(account, image.id)
    assert.equal(blocked.statusCode, 409, blocked.body)
    assert.equal(errorOf(blocked).code, 'media_in_use')
    assert.equal(errorOf(blocked).key, 'media_in_use')
    assert.equal(typeof errorOf(blocked).message, 'string')
    assert.deepEqual(errorOf(blocked).used_by, [`template mit_bild (${template.id})`])

    const other = await createTestAccount(harness)
    const foreign = await other.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: 'fremd', content: 'Hallo {{1}}, neu da.', header_media: { media_id: image.id } },
    })
    assert.equal(foreign.statusCode, 404, foreign.body)
    assert.equal(errorOf(foreign).code, 'not_found')
    assert.equal(errorOf(foreign).key, 'media_not_found')
    const notUuid = await other.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: 'fremd', content: 'Hallo {{1}}, neu da.', header_media: { media_id: 'nope' } },
    })
    assert.equal(notUuid.statusCode, 404)
    const listed = await other.request({ method: 'GET', url: '/v1/templates' })
    assert.deepEqual(listed.json().templates, [], 'nothing was stored')

    const pdf = await uploaded(account, PDF, 'preise.pdf', 'application/pdf')
    const notImage = await account.request({
      method: 'PATCH',
      url: `/v1/templates/${template.id}`,
      payload: { header_media: { media_id: pdf.id } },
    })
    assert.equal(notImage.statusCode, 400, notImage.body)
    assert.equal(errorOf(notImage).key, 'header_media_not_image')
    const both = await account.request({
      method: 'PATCH',
      url: `/v1/templates/${template.id}`,
      payload: { header_media: { media_id: image.id, url: 'https://cdn.example/a.png' } },
    })
    assert.equal(both.statusCode, 400, both.body)
    assert.equal(errorOf(both).key, 'header_media_form')
    const unchanged = await account.request({ method: 'GET', url: `/v1/templates/${template.id}` })
    assert.equal((unchanged.json().template ?? unchanged.json()).header_media.media_id, image.id)

    // a public https address is the other form; then the file is free to go
    const byUrl = await account.request({
      method: 'PATCH',
      url: `/v1/templates/${template.id}`,
      payload: { header_media: { url: 'https://cdn.example/kopf.png' } },
    })
    assert.equal(byUrl.statusCode, 200, byUrl.body)
    assert.deepEqual((byUrl.json().template ?? byUrl.json()).header_media, { url: 'https://cdn.example/kopf.png' })
    assert.equal((await remove(account, image.id)).statusCode, 200)
  })
})

describe('newsletters carry a header image from the media library', () => {
  test('the media goes to the provider with each send; the file cannot be deleted while the newsletter uses it', async () => {
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 100 } })
    await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    const contact = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name: 'Erika Muster', phone: nextPhone() },
    })
    await setOptin(harness, account.accountId, contact.json().contact.id)
    const image = await uploaded(account, png(8, 8), 'tulpen.png', 'image/png')
    const other = await createTestAccount(harness)
    const foreign = await other.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'Fremd', content: 'Hallo {{name}}.', header_media: { media_id: image.id } },
    })
    assert.equal(foreign.statusCode, 404, foreign.body)
    assert.equal(errorOf(foreign).key, 'media_not_found')
    assert.deepEqual((await other.request({ method: 'GET', url: '/v1/newsletters' })).json().newsletters, [])

    const created = await account.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'Frühling', content: 'Hallo {{name}}, unsere Tulpen sind da.' },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = created.json().newsletter.id as string
    assert.equal(created.json().newsletter.header_media, null)
    const patched = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${id}`,
      payload: { header_media: { media_id: image.id } },
    })
    assert.equal(patched.statusCode, 200, patched.body)
    assert.deepEqual(patched.json().newsletter.header_media, {
      media_id: image.id,
      url: image.url,
      mime_type: 'image/png',
    })
    const blocked = await remove(account, image.id)
    assert.equal(blocked.statusCode, 409, blocked.body)
    assert.deepEqual(errorOf(blocked).used_by, [`newsletter Frühling (${id})`])

    const at = new Date(harness.clock.now().getTime() + HOUR).toISOString()
    const scheduled = await scheduleNewsletter(account, id, at)
    assert.equal(scheduled.statusCode, 200, scheduled.body)
    const template = await account.request({
      method: 'GET',
      url: `/v1/templates/${scheduled.json().newsletter.template_id}`,
    })
    assert.equal((template.json().template ?? template.json()).header_media.media_id, image.id)
    harness.clock.advance(HOUR + 1000)
    await drain()
    const [sent] = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.equal((sent.payload as Json).header_image, image.url, 'the media address goes to the provider')
    // the address serves the image
    const served = await harness.app.inject({ method: 'GET', url: new URL(image.url).pathname })
    assert.equal(served.statusCode, 200)
    assert.equal(served.headers['content-type'], 'image/png')

    const still = await remove(account, image.id)
    assert.equal(still.statusCode, 409)
    assert.equal(errorOf(still).used_by.length, 2, 'the newsletter and its template')
  })

  test('a draft can drop its header image (null) or take a public address; then the file can go', async () => {
    const account = await createTestAccount(harness)
    const image = await uploaded(account, png(2, 2), 'a.png', 'image/png')
    const created = await account.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'S', content: 'Hallo {{name}}.', header_media: { media_id: image.id } },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = created.json().newsletter.id as string
    assert.equal(created.json().newsletter.header_media.media_id, image.id)
    const both = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${id}`,
      payload: { header_media: {} },
    })
    assert.equal(both.statusCode, 400)
    assert.equal(errorOf(both).key, 'header_media_form')
    const byUrl = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${id}`,
      payload: { header_media: { url: 'https://cdn.example/b.jpg' } },
    })
    assert.equal(byUrl.statusCode, 200, byUrl.body)
    assert.deepEqual(byUrl.json().newsletter.header_media, { url: 'https://cdn.example/b.jpg' })
    assert.equal((await remove(account, image.id)).statusCode, 200)
    const cleared = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${id}`,
      payload: { header_media: null },
    })
    assert.equal(cleared.statusCode, 200)
    assert.equal(cleared.json().newsletter.header_media, null)
  })
})

describe('the landing page carries a logo from the media library', () => {
  test('the logo shows on the sign-up page; the file cannot be deleted while it is the logo; other accounts’ ids are a 404', async () => {
    const account = await createTestAccount(harness)
    const image = await uploaded(account, png(6, 4), 'logo.png', 'image/png')
    const setLogo = (who: TestAccount, logo: unknown) =>
      who.request({ method: 'PATCH', url: '/v1/settings/consent', payload: { landing_logo: logo } })

    const set = await setLogo(account, { media_id: image.id })
    assert.equal(set.statusCode, 200, set.body)
    const settings = set.json().settings ?? set.json()
    assert.deepEqual(settings.landing_logo, { media_id: image.id, url: image.url })
    const read = await account.request({ method: 'GET', url: '/v1/settings/consent' })
    assert.deepEqual((read.json().settings ?? read.json()).landing_logo, { media_id: image.id, url: image.url })

    const signup = await harness.app.inject({ method: 'GET', url: `/public/signup/${account.accountId}` })
    assert.equal(signup.statusCode, 200)
    assert.ok(signup.body.includes(`<img class="logo" src="${image.url}"`), signup.body)

    const blocked = await remove(account, image.id)
    assert.equal(blocked.statusCode, 409, blocked.body)
    assert.equal(errorOf(blocked).key, 'media_in_use')
    assert.deepEqual(errorOf(blocked).used_by, ['the landing page (logo)'])

    // another account's file, an unknown id, a PDF, or another shape: refused, and the logo stays
    const other = await createTestAccount(harness)
    const foreign = await setLogo(other, { media_id: image.id })
    assert.equal(foreign.statusCode, 404, foreign.body)
    assert.equal(errorOf(foreign).key, 'media_not_found')
    const pdf = await uploaded(account, PDF, 'flyer.pdf', 'application/pdf')
    const notImage = await setLogo(account, { media_id: pdf.id })
    assert.equal(notImage.statusCode, 400, notImage.body)
    assert.equal(errorOf(notImage).key, 'header_media_not_image')
    const byUrl = await setLogo(account, { url: 'https://cdn.example/logo.png' })
    assert.equal(byUrl.statusCode, 400, byUrl.body)
    const still = await account.request({ method: 'GET', url: '/v1/settings/consent' })
    assert.equal((still.json().settings ?? still.json()).landing_logo.media_id, image.id)

    // removed: the page has no logo, and the file may go
    const cleared = await setLogo(account, null)
    assert.equal(cleared.statusCode, 200, cleared.body)
    const plain = await harness.app.inject({ method: 'GET', url: `/public/signup/${account.accountId}` })
    assert.ok(!plain.body.includes('<img'), 'no logo')
    const gone = await remove(account, image.id)
    assert.ok(gone.statusCode < 300, gone.body)
  })
})
