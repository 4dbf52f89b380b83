import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import nodemailer from 'nodemailer'
import type { Page } from 'playwright-core'
import { pageTrue } from '../helpers/browser.ts'
import { type ConsoleRig, startConsole } from '../helpers/console.ts'
import { attackScript, hostileFiles, png } from '../helpers/files.ts'
import type { TestAccount } from '../helpers/harness.ts'

// Issue 51, finding 1, in a real headless Chromium: a customer's files (sandbox media and an e-mail attachment) of
// every active type carry a script that, run on Herold's origin, marks a global and creates an API key with the
// signed-in owner's session. A signed-in owner opens each file's media_url, and a page of Herold's origin embeds
// each one (iframe, object, embed, script, img). No script may run: no key is created, no mark is set. A control
// (the same script inline in the probe page itself) proves that the probe would see an attack that worked, and a
// PNG still shows both opened and embedded.

const OWNER = { name: 'Xenia Sicher', email: 'xenia.media@example.org', password: 'media password 51' }
const PROBE = '/__media-probe'

let rig: ConsoleRig
let account: TestAccount
let page: Page
/** the hostile files' addresses by name, and the PNG's */
const urls = new Map<string, string>()

async function newestMediaUrl(): Promise<string> {
  const answer = await account.request({ method: 'GET', url: '/v1/messages?limit=1' })
  assert.equal(answer.statusCode, 200, answer.body)
  return answer.json().messages[0].media_url as string
}

before(async () => {
  rig = await startConsole()
  ;({ account } = await rig.account({ name: 'Sicher Media', owner: OWNER, sandbox: true }))
  for (const file of hostileFiles('sandbox')) {
    const sent = await account.request({
      method: 'POST',
      url: '/v1/sandbox/inbound',
      payload: { from: '+491517770051', media: { data_base64: file.data.toString('base64'), mime: file.mime } },
    })
    assert.equal(sent.statusCode, 200, sent.body)
    urls.set(file.name, await newestMediaUrl())
  }
  const image = await account.request({
    method: 'POST',
    url: '/v1/sandbox/inbound',
    payload: { from: '+491517770051', media: { data_base64: png(40, 30).toString('base64'), mime: 'image/png' } },
  })
  assert.equal(image.statusCode, 200, image.body)
  urls.set('png', await newestMediaUrl())
  // an e-mail attachment of text/html, as issue 51 reproduced it
  const connected = await rig.harness.services.channels.connect(account.accountId, {
    channel: 'email',
    provider: 'sandbox',
    address: 'shop@example.com',
  })
  const html = hostileFiles('mail').find((f) => f.name === 'html')!
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true })
  const raw = (
    await transport.sendMail({
      from: 'mallory@example.org',
      to: 'shop@example.com',
      subject: 'Rechnung',
      text: 'Anbei',
      attachments: [{ filename: 'rechnung.html', content: html.data, contentType: 'text/html' }],
    })
  ).message as Buffer
  const inboundUrl = new URL(connected.inbound_url!)
  const posted = await rig.harness.app.inject({
    method: 'POST',
    url: `${inboundUrl.pathname}${inboundUrl.search}`,
    headers: { 'content-type': 'message/rfc822' },
    payload: raw,
  })
  assert.equal(posted.statusCode, 200, posted.body)
  urls.set('mail-html', await newestMediaUrl())
  page = await rig.signedInPage(OWNER)
})

after(() => rig?.close())

/** The names of the account's API keys that a hostile script made (`xss …`), read with the owner's session. */
async function keyNames(): Promise<string[]> {
  await page.goto(`${rig.base}/keys`)
  const keys = await page.evaluate(async () => {
    const answer = await fetch('/app/keys', { credentials: 'include' })
    return ((await answer.json()) as { keys: Array<{ name: string }> }).keys
  })
  return keys
    .map((k) => k.name)
    .filter((name) => name.startsWith('xss '))
    .sort()
}

/** Every frame's `__xss` marks, sorted (a frame that cannot be read answers none). */
async function marks(on: Page): Promise<string[]> {
  const found: string[] = []
  for (const frame of on.frames()) {
    const mark = await (frame.evaluate('window.__xss || []') as Promise<string[]>).catch(() => [])
    found.push(...mark)
  }
  return found.sort()
}

/** Waits until the page's network is quiet, so that a script that ran has finished its requests. */
async function settle(on: Page): Promise<void> {
  await on.waitForLoadState('networkidle').catch(() => {})
  await on.waitForTimeout(300)
}

describe('stored files opened by a signed-in owner run no script', () => {
  test('the probe sees an attack that works: the same script inline in a page of Herold’s origin', async () => {
    const probe = await page.context().newPage()
    await probe.route(`${rig.base}${PROBE}`, (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: `<!doctype html><title>probe</title><script>${attackScript('control')}</script>`,
      }),
    )
    await probe.goto(`${rig.base}${PROBE}`)
    await settle(probe)
    const seen = { marks: await marks(probe), keys: await keyNames() }
    await probe.close()
    assert.deepEqual(seen, { marks: ['control'], keys: ['xss control'] }, 'the control ran with the owner’s session')
  })

  test('opening each file’s media_url (html, svg, xml, xhtml, js, text, unknown, a false PNG, a mail attachment)', async () => {
    const marked: string[] = []
    for (const [name, url] of urls) {
      if (name === 'png') continue
      const opened = await page.context().newPage()
      await opened.goto(url).catch(() => {}) // a download ends the navigation with an error
      await settle(opened)
      marked.push(...(await marks(opened)))
      await opened.close()
    }
    const seen = { marks: marked.sort(), keys: await keyNames() }
    assert.deepEqual(seen, { marks: [], keys: ['xss control'] }, 'no opened file ran its script')
  })

  test('embedding each file in a page of Herold’s origin: iframe, object, embed, script', async () => {
    const probe = await page.context().newPage()
    const embeds = [...urls]
      .filter(([name]) => name !== 'png')
      .map(
        ([name, url]) =>
          `<iframe title="${name}" src="${url}"></iframe><object data="${url}"></object><embed src="${url}"><script src="${url}"></script>`,
      )
      .join('\n')
    await probe.route(`${rig.base}${PROBE}`, (route) =>
      route.fulfill({ contentType: 'text/html', body: `<!doctype html><title>probe</title>${embeds}` }),
    )
    await probe.goto(`${rig.base}${PROBE}`)
    await settle(probe)
    await probe.waitForTimeout(700)
    const seen = { marks: await marks(probe), keys: await keyNames() }
    await probe.close()
    assert.deepEqual(seen, { marks: [], keys: ['xss control'] }, 'no embedded file ran its script')
  })

  test('a PNG still shows: opened on its own and as an <img> of Herold’s origin', async () => {
    const url = urls.get('png')!
    const opened = await page.context().newPage()
    const answer = await opened.goto(url)
    assert.equal(answer?.status(), 200)
    assert.equal(answer?.headers()['content-type'], 'image/png')
    const shown = await opened.evaluate('document.images[0] ? document.images[0].naturalWidth : 0')
    assert.equal(shown, 40, 'the image document draws the PNG')
    await opened.close()
    const probe = await page.context().newPage()
    await probe.route(`${rig.base}${PROBE}`, (route) =>
      route.fulfill({ contentType: 'text/html', body: `<!doctype html><img alt="png" src="${url}">` }),
    )
    await probe.goto(`${rig.base}${PROBE}`)
    await pageTrue(probe, 'document.images[0] && document.images[0].complete')
    assert.equal(await probe.evaluate('document.images[0].naturalWidth'), 40)
    await probe.close()
  })
})
