import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { deflateSync } from 'node:zlib'
import AxeBuilder from '@axe-core/playwright'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { channelsServiceFor } from '../../src/modules/channels/index.ts'
import { recordOptinChange } from '../../src/modules/contacts/index.ts'
import { createMember } from '../../src/modules/people/index.ts'
import { webAppBuilt } from '../../src/platform/http/web-app.ts'
import { launchBrowser } from '../helpers/browser.ts'
import { makePdf } from '../helpers/documents.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../helpers/harness.ts'
import { freePort, ROOT } from '../helpers/process.ts'

// The campaign pages in a real headless Chromium. The server is the in-process harness listening on loopback, so
// the test moves its clock (a newsletter's time, a follow-up step's delay) and runs the due jobs (`drain()`) while
// the browser watches the pages update by themselves. Every test leaves screenshots in test-results/web-campaign/
// (HEROLD_TEST_OUTPUT overrides).

const OUTPUT = path.resolve(process.env.HEROLD_TEST_OUTPUT ?? path.join(ROOT, 'test-results'), 'web-campaign')
const OWNER = { name: 'Olga Owner', email: 'olga.campaign@example.org', password: 'campaign password 1' }
const HOUR = 3600_000

let harness: Harness
let account: TestAccount
let base: string
let browser: Browser
let context: BrowserContext
let page: Page
let counter = 0
const nextPhone = () => `+4917${String(process.pid % 1000).padStart(3, '0')}${String(++counter).padStart(5, '0')}`

before(async () => {
  assert.ok(webAppBuilt(), 'the web app is built (npm install does it; npm run web:build by hand)')
  mkdirSync(OUTPUT, { recursive: true })
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  harness = await createHarness({ workers: true, config: { publicUrl: base } })
  await harness.app.listen({ host: '127.0.0.1', port })
  account = await createTestAccount(harness, { name: 'Blumen Becker', plan: { messagesPerMonth: 1000 } })
  const deps = { config: harness.config, database: harness.database, clock: harness.clock }
  await channelsServiceFor(deps).connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
  const user = await createMember(harness.database.orm, { accountId: account.accountId, role: 'owner', ...OWNER })
  await harness.database.query(`UPDATE users SET language = 'en' WHERE id = $1`, [user.id])
  browser = await launchBrowser()
  context = await browser.newContext({ locale: 'en-US' })
  page = await context.newPage()
  await page.goto(`${base}/sign-in`)
  await page.getByLabel('E-mail address').fill(OWNER.email)
  await page.getByLabel('Password', { exact: true }).fill(OWNER.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { name: 'Contacts' }).waitFor()
})

after(async () => {
  await browser?.close()
  await harness?.close()
})

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(OUTPUT, `${name}.png`), fullPage: true })
}

/** axe-core on the page as it is: no serious or critical violation. */
async function accessible(name: string): Promise<void> {
  const result = await new AxeBuilder({ page }).analyze()
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  assert.deepEqual(
    bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
    [],
    `${name}: axe violations`,
  )
}

/** Moves the server's clock and runs every job that is due then. */
async function advance(ms: number): Promise<void> {
  harness.clock.advance(ms)
  await harness.jobs!.drain()
}

/** Moves time in small steps until a condition holds (the sandbox reports delivered and read a second apart). */
async function until(what: string, check: () => Promise<boolean>, stepMs = 5000, tries = 60): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return
    await advance(stepMs)
  }
  assert.fail(`never happened: ${what}`)
}

async function contact(name: string, confirmed: boolean, tags: string[] = []): Promise<string> {
  const created = await account.request({ method: 'POST', url: '/v1/contacts', payload: { name, phone: nextPhone() } })
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().contact.id as string
  if (confirmed) {
    await harness.database.orm.transaction((tx) =>
      recordOptinChange(tx, harness.clock, {
        accountId: account.accountId,
        contactId: id,
        channel: 'chat',
        to: 'confirmed',
        source: 'test',
      }),
    )
  }
  for (const tag of tags) {
    const added = await account.request({ method: 'POST', url: `/v1/contacts/${id}/tags`, payload: { tag } })
    assert.ok(added.statusCode < 300, added.body)
  }
  return id
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
  let crc = 0xffffffff
  for (const byte of body) {
    crc ^= byte
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1
  }
  const sum = Buffer.alloc(4)
  sum.writeUInt32BE((crc ^ 0xffffffff) >>> 0)
  return Buffer.concat([length, body, sum])
}

/** A real RGB PNG (a tulip-red square). */
function png(width: number, height: number): Buffer {
  const header = Buffer.alloc(13)
  header.writeUInt32BE(width, 0)
  header.writeUInt32BE(height, 4)
  header.set([8, 2, 0, 0, 0], 8)
  const rows = Buffer.alloc((width * 3 + 1) * height)
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1)
    for (let x = 0; x < width; x++) rows.set([200, 30, 60], row + 1 + x * 3)
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', header),
    pngChunk('IDAT', deflateSync(rows)),
    pngChunk('IEND', Buffer.alloc(0)),
  ])
}

/** Drops a file onto the page's drop zone as a mouse drag would. */
async function dropFile(name: string, mime: string, bytes: Buffer): Promise<void> {
  const transfer = await page.evaluateHandle(
    ({ name, mime, data }) => {
      // runs in the browser, where DataTransfer exists
      // biome-ignore lint/suspicious/noExplicitAny: a browser global the Node types do not know
      const dt = new (globalThis as any).DataTransfer()
      dt.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], name, { type: mime }))
      return dt
    },
    { name, mime, data: bytes.toString('base64') },
  )
  const zone = page.getByTestId('dropzone')
  await zone.dispatchEvent('dragover', { dataTransfer: transfer })
  await zone.dispatchEvent('drop', { dataTransfer: transfer })
}

describe('the campaign pages', () => {
  test('a newsletter is composed, sent to a tag segment of confirmed contacts at its time, and its counts reach sent', async () => {
    await contact('Erika Mustermann', true, ['spring'])
    await contact('Max Müller', true, ['spring'])
    await contact('Lena Schmidt', true, ['spring', 'vip'])
    await contact('Paul Ohnetag', true)
    await contact('Nora Unbestätigt', false, ['spring'])

    await page.getByRole('link', { name: 'Newsletters' }).click()
    await page.getByRole('heading', { name: 'Newsletters' }).waitFor()
    await page.getByLabel('Subject').fill('Spring offers')
    await page.getByLabel('Content').fill('Hello {{name}}, the tulips are here.')
    await page.getByLabel('Preview for contact').selectOption({ label: 'Erika Mustermann' })
    await page.getByTestId('preview').getByText('Hello Erika, the tulips are here.').waitFor()
    await accessible('newsletters')
    await shot('newsletter-compose')
    await page.getByRole('button', { name: 'Create draft' }).click()

    await page.getByRole('heading', { name: 'Spring offers' }).waitFor()
    // every confirmed contact until a segment is set
    await page.getByText('Recipients now: 4').waitFor()
    // the estimate follows the builder as the member types a tag the account has
    await page.getByLabel('with at least one of these tags').pressSequentially('spring')
    await page.getByText('Recipients now: 3').waitFor()
    // an unknown tag is refused in words, and nothing changes
    await page.getByLabel('without these tags').fill('no-such-tag')
    await page.getByRole('button', { name: 'Save recipients' }).click()
    await page.getByRole('alert').waitFor()
    assert.match((await page.getByRole('alert').textContent()) ?? '', /no-such-tag/)
    await page.getByLabel('without these tags').fill('')
    await page.getByLabel('Button text').fill('See the tulips')
    await page.getByLabel('Address (https)').fill('https://blumen.example/tulips')
    await page.getByRole('button', { name: 'Save button' }).click()
    await page.getByRole('button', { name: 'Remove button' }).waitFor()
    assert.equal(await page.getByRole('button', { name: /send now/i }).count(), 0, 'no "send now" anywhere')

    // a time in the past is refused by the API, shown in words
    await page.getByLabel('Date').fill('2020-01-01')
    await page.getByRole('button', { name: 'Schedule', exact: true }).click()
    await page.getByRole('alert').waitFor()
    // tomorrow 09:00 in the account's timezone
    const [{ timezone }] = await harness.database.query<{ timezone: string }>(
      'SELECT timezone FROM accounts WHERE id = $1',
      [account.accountId],
    )
    const tomorrow = new Intl.DateTimeFormat('en-CA', { timeZone: timezone }).format(
      new Date(harness.clock.now().getTime() + 24 * HOUR),
    )
    await page.getByLabel('Date').fill(tomorrow)
    await page.getByLabel('Time').fill('09:00')
    await page.getByRole('button', { name: 'Schedule', exact: true }).click()
    await page.getByRole('button', { name: 'Cancel schedule' }).waitFor()
    await page.getByTestId('newsletter-status').filter({ hasText: 'scheduled' }).waitFor()
    const list = (await account.request({ method: 'GET', url: '/v1/newsletters' })).json()
    const newsletter = list.newsletters[0]
    assert.equal(newsletter.status, 'scheduled')
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: timezone,
      hour: '2-digit',
      minute: '2-digit',
    }).format(new Date(newsletter.scheduled_at))
    assert.equal(local, '09:00', 'the time picked is 09:00 in the account timezone')
    await accessible('newsletter-scheduled')
    await shot('newsletter-scheduled')

    // move the clock past the scheduled time: the newsletter sends; the page follows by itself
    harness.clock.set(new Date(new Date(newsletter.scheduled_at).getTime() + 60_000))
    await until('the newsletter is sent', async () => {
      const status = (await account.request({ method: 'GET', url: `/v1/newsletters/${newsletter.id}/status` })).json()
      return status.status === 'sent' && status.counts.read === 3
    })
    await page.getByTestId('newsletter-phase').filter({ hasText: 'done' }).waitFor({ timeout: 15_000 })
    await page.getByTestId('count-read').filter({ hasText: '3' }).waitFor({ timeout: 15_000 })
    assert.equal(await page.getByTestId('count-queued').textContent(), '0')
    assert.equal(await page.getByTestId('count-skipped').textContent(), '0')
    // sent: nothing left to schedule, cancel or delete
    await page.getByRole('button', { name: 'Schedule', exact: true }).waitFor({ state: 'detached' })
    assert.equal(await page.getByRole('button', { name: 'Delete' }).count(), 0)
    await accessible('newsletter-sent')
    await shot('newsletter-sent')
  })

  test('a follow-up sequence of two steps is built, activated, and a newly confirmed contact gets its first step', async () => {
    await page.getByRole('link', { name: 'Follow-ups' }).click()
    await page.getByRole('heading', { name: 'Follow-up sequences' }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Welcome')
    // the template check speaks while typing: a text that ends with a variable is refused by WhatsApp
    await page.getByLabel('Step 1: Text').fill('Welcome to Blumen Becker, {{name}}')
    await page.getByTestId('check-issues').waitFor()
    await page.getByLabel('Step 1: Text').fill('Hello {{name}}, welcome to Blumen Becker!')
    await page.getByText('The template check finds nothing.').waitFor()
    await page.getByLabel('Step 1: Delay').fill('1')
    await page.getByLabel('Step 1: Unit').selectOption('hours')
    await page.getByRole('button', { name: 'Add step' }).click()
    await page.getByLabel('Step 2: Text').fill('Hello {{name}}, have you seen our bouquets?')
    await page.getByLabel('Step 2: Delay').fill('2')
    await page.getByLabel('Step 2: Unit').selectOption('days')
    await page.getByLabel('Step 2: Send time (optional, HH:MM)').fill('09:30')
    await accessible('followups')
    await shot('followup-build')
    await page.getByRole('button', { name: 'Create sequence' }).click()

    await page.getByRole('heading', { name: 'Welcome' }).waitFor()
    await page.getByText('only contacts with a confirmed chat opt-in are enrolled').waitFor()
    await advance(1000) // the sandbox decides the step templates
    await page.getByRole('button', { name: 'Activate' }).click()
    await page.getByTestId('followup-status').filter({ hasText: 'active' }).waitFor()

    // the contacts confirmed earlier were scheduled on activation for their future steps only
    const id = (await account.request({ method: 'GET', url: '/v1/followups' })).json().followups[0].id
    const enrolled = async () =>
      (await account.request({ method: 'GET', url: `/v1/followups/${id}` })).json().followup.enrollments
        .active as number
    const before = await enrolled()
    await page
      .getByTestId('enrollments')
      .filter({ hasText: new RegExp(`^${before} /`) })
      .waitFor()
    await contact('Frieda Neu', true)
    assert.equal(await enrolled(), before + 1, 'the newly confirmed contact is enrolled at once')
    await page
      .getByTestId('enrollments')
      .filter({ hasText: new RegExp(`^${before + 1} /`) })
      .waitFor({ timeout: 15_000 })
    await until(
      'the first step is sent',
      async () => {
        const detail = (await account.request({ method: 'GET', url: '/v1/followups' })).json().followups[0]
        const full = (await account.request({ method: 'GET', url: `/v1/followups/${detail.id}` })).json().followup
        return full.steps[0].counts.sent === 1
      },
      10 * 60_000,
    )
    await page.getByTestId('counts-1').filter({ hasText: 'sent 1' }).waitFor({ timeout: 15_000 })
    await page.getByTestId('approval-1').filter({ hasText: 'approved' }).waitFor()
    await accessible('followup')
    await shot('followup-active')

    // a third step added here, the place where steps are made
    await page.getByLabel('Step 3: Text').fill('Thank you, {{name}}, for being with us.')
    await page.getByRole('button', { name: 'Add step' }).click()
    await page.getByTestId('step-3').waitFor()
  })

  test('an automation with a webhook trigger is built, activated, and a POST to its address runs to completion', async () => {
    await page.getByRole('link', { name: 'Automations' }).click()
    await page.getByRole('heading', { name: 'Automations' }).waitFor()
    await page.getByLabel('Name', { exact: true }).fill('Shop orders')
    await page.getByRole('combobox', { name: 'Trigger' }).selectOption('webhook')
    await page.getByLabel('Step 1: Tag').fill('customer')
    await page.getByRole('button', { name: 'Add step' }).click()
    await page.getByLabel('Step 2: Kind').selectOption('branch')
    await page.getByLabel('Step 2: Condition').selectOption('field')
    await page.getByLabel('Step 2: Field (path, e.g. order.status)').fill('order.status')
    await page.getByLabel('Step 2: equals').fill('paid')
    await page.getByRole('button', { name: 'Add step' }).click()
    await page.getByLabel('Step 3: Tag').fill('paid')
    // reorder: the branch first, then back
    await page.getByRole('button', { name: 'Move step 2 up' }).click()
    await shot('automation-reordered')
    assert.equal(await page.getByLabel('Step 1: Kind').inputValue(), 'branch')
    assert.equal(await page.getByLabel('Step 2: Tag').inputValue(), 'customer')
    await page.getByRole('button', { name: 'Move step 1 down' }).click()
    assert.equal(await page.getByLabel('Step 2: Kind').inputValue(), 'branch')
    await page.getByLabel('Step 2: if no: continue at').selectOption('end')
    await accessible('automations')
    await shot('automation-build')
    await page.getByRole('button', { name: 'Create automation' }).click()

    await page.getByRole('heading', { name: 'Shop orders' }).waitFor()
    await page.getByText("The webhook steps' signing secret").waitFor()
    await page.getByRole('button', { name: 'Activate' }).click()
    await page.getByTestId('automation-status').filter({ hasText: 'active' }).waitFor()
    const url = (await page.getByTestId('webhook-url').textContent())?.trim() ?? ''
    assert.ok(url.startsWith(`${base}/`), url)
    await page.getByRole('button', { name: 'Copy: Webhook address' }).waitFor()

    const posted = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'hook@example.org', name: 'Hanna Hook', order: { status: 'paid' } }),
    })
    assert.equal(posted.status, 202, await posted.clone().text())
    const refused = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' })
    assert.equal(refused.status, 415)
    await until(
      'the run completes',
      async () => {
        const automation = (await account.request({ method: 'GET', url: '/v1/automations' })).json().automations[0]
        const runs = (await account.request({ method: 'GET', url: `/v1/automations/${automation.id}/runs` })).json()
        return runs.runs[0]?.state === 'completed'
      },
      1000,
    )
    await page.getByTestId('run-state').filter({ hasText: 'completed' }).waitFor({ timeout: 15_000 })
    await page.getByTestId('webhook-events').filter({ hasText: '1' }).waitFor({ timeout: 15_000 })
    const run = page.getByTestId('run').first()
    assert.equal(await run.getByRole('row').count(), 4, 'a header and one row per step')
    await accessible('automation')
    await shot('automation-run')
  })

  test('an image and a PDF are uploaded (drag and drop and file choice), shown in the library, and the PDF is searched', async () => {
    const pdf = await makePdf([
      { heading: 'Shipping', paragraphs: ['Bouquets ship within two days; orders before noon leave the same day.'] },
      { heading: 'Returns', paragraphs: ['Wilted flowers are replaced free of charge within a week.'] },
    ])
    await page.getByRole('link', { name: 'Media' }).click()
    await page.getByRole('heading', { name: 'Media library' }).first().waitFor()
    await dropFile('tulip.png', 'image/png', png(40, 30))
    await page.getByText('tulip.png is uploaded.').waitFor()
    await page.getByLabel('Choose a file').setInputFiles({ name: 'care.pdf', mimeType: 'application/pdf', buffer: pdf })
    await page.getByText('care.pdf is uploaded.').waitFor()
    await page.getByRole('img', { name: 'tulip.png' }).waitFor()
    await page.getByTestId('media-item').filter({ hasText: 'care.pdf' }).waitFor()
    assert.equal(await page.getByTestId('media-item').count(), 2)
    // a file that is not an image, video or PDF is refused in words
    await page
      .getByLabel('Choose a file')
      .setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hi') })
    await page.getByRole('alert').waitFor()
    await page.getByRole('combobox', { name: 'Kind' }).selectOption('image')
    await page.getByTestId('media-item').filter({ hasText: 'care.pdf' }).waitFor({ state: 'detached' })
    assert.equal(await page.getByTestId('media-item').count(), 1)
    // the thumbnail really loads from the public media address
    assert.ok(
      await page
        .getByRole('img', { name: 'tulip.png' })
        .evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth === 40),
    )
    await accessible('media')
    await shot('media')

    await page.getByRole('link', { name: 'Knowledge' }).click()
    await page.getByRole('heading', { name: 'Knowledge' }).first().waitFor()
    await dropFile('care.pdf', 'application/pdf', pdf)
    await page.getByText('care.pdf is uploaded.').waitFor()
    await page.getByTestId('document').waitFor()
    await page.getByRole('button', { name: /Show the passages of/ }).click()
    await page.getByTestId('passage').filter({ hasText: 'Wilted flowers are replaced' }).waitFor()
    await page.getByLabel('Search the knowledge').fill('wilted')
    await page.getByTestId('knowledge-hits').locator('mark').first().waitFor()
    assert.match((await page.getByTestId('knowledge-hits').textContent()) ?? '', /Returns/)
    await page.getByLabel('Test question').fill('How fast do bouquets ship?')
    await page.getByTestId('ai-test').getByText('Shipping').first().waitFor()
    await accessible('knowledge')
    await shot('knowledge')
  })

  test('the pages speak German when the member chooses it', async () => {
    await page.evaluate(async () => {
      const session = (await (await fetch('/app/session')).json()) as { csrf_token: string }
      await fetch('/app/session/language', {
        method: 'PUT',
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token },
        body: JSON.stringify({ language: 'de' }),
      })
    })
    await page.goto(`${base}/newsletters`)
    await page.getByRole('heading', { name: 'Neuer Newsletter' }).waitFor()
    await page.getByRole('link', { name: 'Automationen' }).click()
    await page.getByRole('heading', { name: 'Neue Automation' }).waitFor()
    await page.getByRole('link', { name: 'Follow-ups' }).click()
    await page.getByRole('heading', { name: 'Neue Sequenz' }).waitFor()
    await accessible('followups-de')
    await shot('followups-de')
  })
})
