import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { browserWithPage, openPage } from '../helpers/browser.ts'
import { fetchFrom, type PageAnswer, pageChecks, submitSetupForm } from '../helpers/pages.ts'
import {
  childEnv,
  freePort,
  npmStart,
  runCli,
  type ServerProcess,
  setupLinkOf,
  tempDataDir,
} from '../helpers/process.ts'

// The console's pages in a real headless Chromium against a server started as `npm start` starts it: the
// dashboard, templates (live check, submit), the inbox (a sandbox message answered, a template sent), CSV import,
// webhook subscriptions and settings, and a viewer refused every change by the server. Every test leaves
// screenshots in test-results/console/ (HEROLD_TEST_OUTPUT overrides) for a reviewer.

const { folder: OUTPUT, shot, accessibleShot } = pageChecks('console')
const OWNER = { name: 'Olga Owner', email: 'olga@example.org', password: 'first password 1' }
const CUSTOMER = '+4915112345678'

let server: ServerProcess
let env: NodeJS.ProcessEnv
let browser: Browser
let page: Page
let key: string
let accountId: string

before(async () => {
  const port = await freePort()
  env = childEnv({ HEROLD_DATA_DIR: tempDataDir(), PORT: String(port), HEROLD_ALLOW_PRIVATE_TARGETS: '1' })
  server = await npmStart(env)
  const link = setupLinkOf(server)
  ;({ browser, page } = await browserWithPage())
  await page.goto(link)
  await submitSetupForm(page, OWNER)
  await page.getByRole('heading', { name: 'Übersicht' }).waitFor()
  const english = await fetchFrom(page, '/app/session/language', {
    method: 'PUT',
    body: { language: 'en' },
    csrf: true,
  })
  assert.equal(english.status, 200)
  accountId = (english.body.account as { id: string }).id
  const created = await fetchFrom(page, '/app/keys', {
    method: 'POST',
    body: {
      name: 'test',
      scopes: [
        'contacts:write',
        'contacts:read',
        'messages:write',
        'templates:read',
        'templates:write',
        'templates:submit',
        'inbox:read',
      ],
    },
    csrf: true,
  })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  key = created.body.secret as string
  const connected = await runCli(['channels', 'connect', '--account', accountId, '--provider', 'sandbox'], env)
  assert.equal(connected.code, 0, connected.stderr + connected.stdout)
})

after(async () => {
  await browser?.close()
  await server?.stop()
})

/** The public API with the key made in before(). */
async function api(method: string, url: string, body?: unknown): Promise<PageAnswer> {
  const response = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, body: text ? JSON.parse(text) : {} }
}

async function inbound(message: Record<string, unknown>): Promise<void> {
  const answer = await api('POST', '/v1/sandbox/inbound', { from: CUSTOMER, name: 'Kim Kunde', ...message })
  assert.equal(answer.status, 200, JSON.stringify(answer.body))
}

describe('the console', () => {
  test('the dashboard is the start page and shows the statistics as accessible charts', async () => {
    // a new account sees its first steps and no empty charts; with a contact there is something to chart
    await page.goto(`${server.url}/`)
    await page.getByRole('heading', { name: 'Overview' }).waitFor()
    await page.getByTestId('first-steps').getByText('1 of 4 done').waitFor()
    await page.getByText(/^Nothing to show yet/).waitFor()
    const first = await api('POST', '/v1/contacts', { name: 'Dora Dashboard', email: 'dora.dashboard@example.org' })
    assert.equal(first.status, 201, JSON.stringify(first.body))
    await page.reload()
    await page.getByTestId('first-steps').getByText('2 of 4 done').waitFor()
    await page.getByRole('img', { name: /^Messages per day/ }).waitFor()
    await page.getByRole('img', { name: /^New contacts per day/ }).waitFor()
    await page.getByRole('img', { name: /^Contacts' consent/ }).waitFor()
    await page.getByText('Contacts in total').waitFor()
    await page.getByRole('button', { name: 'Show as table' }).first().click()
    await page.getByRole('columnheader', { name: 'Messages received' }).waitFor()
    await page.getByRole('combobox', { name: 'Period' }).selectOption('7d')
    // a header and seven days
    await page.locator('tbody tr').nth(6).waitFor()
    await page.locator('tbody tr').nth(7).waitFor({ state: 'detached' })
    await accessibleShot(page, 'dashboard')
  })

  test('a template is edited until the live check passes, then submitted and approved', async () => {
    await page.goto(`${server.url}/templates`)
    await page.getByRole('heading', { name: 'Templates', level: 1 }).waitFor()
    await page.getByRole('button', { name: 'New template' }).click()
    await page.getByLabel('Name').fill('Anmeldung bestätigen')
    await page.getByRole('combobox', { name: 'Purpose' }).selectOption('optin_confirm')
    await page.getByLabel('Language (such as de or en_US)').fill('de')
    const content = page.getByLabel('Content', { exact: true })
    await content.pressSequentially('{{1}} bitte bestätigen')
    await page.getByText('The content must not start with a variable.').waitFor()
    await page.getByText('The check finds 1 issue(s):').waitFor()
    await accessibleShot(page, 'template-issues')
    await content.fill('')
    await content.pressSequentially('Bitte bestätigen Sie Ihre Anmeldung.')
    await page.getByText("The check passes: the template keeps the provider's rules.").waitFor()
    await page.getByRole('button', { name: 'Create draft' }).click()
    await page.getByTestId('template-state').getByText('draft').waitFor()
    await page.getByText('Name at the provider').waitFor()
    await page.getByRole('button', { name: 'Submit for review' }).click()
    await page.getByText(/^Submitted\. Provider status: /).waitFor()
    await page.getByTestId('provider-status').getByText('approved').waitFor()
    await page.getByTestId('template-state').getByText('approved').waitFor()
    await accessibleShot(page, 'template-submitted')

    const list = await api('GET', '/v1/templates?limit=10')
    const stored = (list.body.templates as Array<{ name: string; state: string; purpose: string }>).find(
      (t) => t.name === 'Anmeldung bestätigen',
    )
    assert.equal(stored?.state, 'approved')
    assert.equal(stored?.purpose, 'optin_confirm')
  })

  test('a sandbox message is answered in the inbox with free text, and an approved template is sent with its variable', async () => {
    // a marketing template with a variable the sender fills in
    const created = await api('POST', '/v1/templates', {
      name: 'Gutschein',
      content: 'Ihr Gutschein {{code}} gilt bis Sonntag.',
      language: 'de',
    })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const id = (created.body.template as { id: string }).id
    const submitted = await api('POST', `/v1/templates/${id}/submit`)
    assert.equal((submitted.body.template as { state: string }).state, 'approved', JSON.stringify(submitted.body))

    // the customer opts in by keyword and confirm button, then asks
    await inbound({ text: 'START' })
    await inbound({ button: 'Ja, bestätigen' })
    await inbound({ text: 'Habt ihr am Samstag offen?' })

    await page.goto(`${server.url}/inbox`)
    await page.getByRole('heading', { name: 'Inbox', level: 1 }).waitFor()
    await page.getByRole('link', { name: /Kim Kunde/ }).click()
    // the question in the thread (the conversation list may show it too, as its last message)
    await page.getByRole('list', { name: 'Thread' }).getByText('Habt ihr am Samstag offen?', { exact: true }).waitFor()
    await page
      .getByTestId('window')
      .getByText(/^Free-text replies are possible until /)
      .waitFor()
    await page.getByLabel('Reply').fill('Ja, von 9 bis 14 Uhr.')
    // by keyboard: from the reply, Tab reaches the send button and Enter sends
    await page.keyboard.press('Tab')
    await page.keyboard.press('Enter')
    await page.getByRole('list', { name: 'Thread' }).getByText('Ja, von 9 bis 14 Uhr.').waitFor()

    // while the window is open the templates are one tap away below the reply
    await page.getByText('Use a template', { exact: true }).click()
    await page.getByRole('combobox', { name: 'Approved template' }).selectOption({ label: 'Gutschein (de)' })
    await page.getByLabel('Variable code').fill('SOMMER10')
    await page.getByRole('button', { name: 'Send template' }).click()
    await page.getByText('The template is queued and goes out shortly.').waitFor()
    await page.getByRole('list', { name: 'Thread' }).getByText('Ihr Gutschein SOMMER10 gilt bis Sonntag.').waitFor()
    await accessibleShot(page, 'inbox')

    const conversations = await api('GET', '/v1/inbox/conversations')
    const conversation = (conversations.body.conversations as Array<{ id: string; automated_only: boolean }>)[0]
    assert.equal(conversation.automated_only, false)
    const messages = await api('GET', `/v1/inbox/conversations/${conversation.id}/messages`)
    const texts = (messages.body.messages as Array<{ direction: string; text: string }>).map(
      (m) => `${m.direction}: ${m.text}`,
    )
    assert.ok(texts.includes('outbound: Ja, von 9 bis 14 Uhr.'), texts.join('\n'))
    assert.ok(texts.includes('outbound: Ihr Gutschein SOMMER10 gilt bis Sonntag.'), texts.join('\n'))

    // the contact's page shows the consent history the keyword and the button wrote
    const contactId = (conversation as unknown as { contact_id: string }).contact_id
    await page.goto(`${server.url}/contacts/${contactId}`)
    await page.getByRole('heading', { name: 'Consent history' }).waitFor()
    const history = page.getByTestId('consent-history')
    await page.getByText('Chat consent').locator('xpath=following-sibling::dd[1]').getByText('confirmed').waitFor()
    await history.getByText('requested → confirmed').waitFor()
    assert.ok((await history.getByRole('row').count()) >= 3, 'a header row and at least two changes')
    await accessibleShot(page, 'contact-consent')
    // a contact that is not the account's is a 404, also with the member's session
    const other = await page.evaluate(async () => {
      const answer = await fetch('/app/contacts/00000000-0000-4000-8000-000000000000/consent-history')
      return answer.status
    })
    assert.equal(other, 404)
  })

  test('a CSV import shows its progress and the rejected lines', async () => {
    const lines = ['name,email,phone,tags']
    for (let i = 0; i < 3000; i++) lines.push(`Kunde ${i},kunde${i}@example.org,,import`)
    lines.splice(1001, 0, 'Falsch,not-an-email,,')
    lines.splice(2002, 0, 'Ohne,,,')
    lines.splice(3003, 0, 'Telefon,,12ab,')
    const file = path.join(OUTPUT, 'contacts.csv')
    writeFileSync(file, `${lines.join('\n')}\n`)

    await page.goto(`${server.url}/contacts`)
    await page.getByRole('heading', { name: 'Import contacts (CSV)' }).waitFor()
    await page.getByLabel('CSV file').setInputFiles(file)
    await page.getByRole('button', { name: 'Import', exact: true }).click()
    const progress = page.getByRole('progressbar', { name: 'Import progress' })
    await progress.waitFor()
    await page
      .getByTestId('import-report')
      .getByText('Done: 3,000 new, 0 updated, 0 unchanged, 3 rejected of 3,003 rows')
      .waitFor({ timeout: 180_000 })
    assert.equal(await progress.getAttribute('value'), await progress.getAttribute('max'), 'the bar is full')
    await page.getByTestId('import-progress').getByText('3,003 rows read').waitFor()
    const rejected = page.getByRole('table', { name: 'Rejected lines' })
    await rejected.getByRole('cell', { name: 'invalid email "not-an-email"' }).waitFor()
    await rejected.getByRole('cell', { name: 'no email and no phone' }).waitFor()
    await rejected.getByRole('cell', { name: /^invalid phone "12ab"/ }).waitFor()
    assert.deepEqual(
      await rejected.locator('tbody tr td:first-child').allTextContents(),
      ['1002', '2003', '3004'],
      'the file lines of the rejected records',
    )
    await accessibleShot(page, 'import')

    // the imported contacts are found as you type
    await page.getByLabel('Search (name, e-mail, phone)').pressSequentially('kunde2999@')
    await page.getByRole('link', { name: 'Kunde 2999' }).waitFor()

    const bad = await fetchFrom(page, '/app/contacts/import', {
      method: 'POST',
      csrf: true,
      csv: 'vorname;nachname\nA;B\n',
    })
    assert.equal(bad.status, 400)
    assert.equal(bad.body.error?.key, 'csv_invalid')
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'x.csv', mimeType: 'text/csv', buffer: Buffer.from('a;b\n1;2\n') })
    await page.getByRole('button', { name: 'Import', exact: true }).click()
    await page
      .getByText(/^The file is not a usable CSV file: the CSV header needs an email or a phone column/)
      .waitFor()
    await shot(page, 'import-refused')
  })

  test('a webhook subscription shows its secret once, its deliveries, and is enabled again and rotated', async () => {
    let calls = 0
    const receiver: Server = createServer((request, response) => {
      request.resume()
      calls++
      // the first delivery is refused for good (410): the subscription is disabled
      response.statusCode = calls === 1 ? 410 : 200
      response.end()
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const address = receiver.address() as { port: number }
    try {
      await page.goto(`${server.url}/webhooks`)
      await page.getByRole('heading', { name: 'Webhook subscriptions' }).waitFor()
      await page.getByLabel('Receiving address (https)').fill(`http://127.0.0.1:${address.port}/hook`)
      await page.getByRole('checkbox', { name: 'message.received' }).uncheck()
      await page.getByRole('checkbox', { name: 'contact.created' }).check()
      await page.getByRole('button', { name: 'Create subscription' }).click()
      const secret = (await page.getByTestId('webhook-secret').textContent())?.trim() ?? ''
      assert.match(secret, /^whsec_[0-9a-f]{64}$/)
      await accessibleShot(page, 'webhooks', 'webhook-created')

      const contact = await api('POST', '/v1/contacts', { name: 'Hanna Hook', email: 'hanna@example.org' })
      assert.equal(contact.status, 201)
      await page.reload()
      assert.equal(await page.getByTestId('webhook-secret').count(), 0, 'the secret is not shown again')
      // the delivery runs in the background: wait until the subscription is disabled, then look at the page
      let subscription: { status?: string; disabled_reason?: string | null } = {}
      for (let attempt = 0; attempt < 600 && subscription.status !== 'disabled'; attempt++) {
        if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 200))
        const list = await fetchFrom(page, '/v1/webhook-subscriptions')
        subscription = (list.body.webhook_subscriptions as Array<typeof subscription>)[0] ?? {}
      }
      assert.equal(subscription.status, 'disabled')
      assert.equal(subscription.disabled_reason, 'gone_410')
      await page.reload()
      await page.getByText(/^disabled \(the receiver answered 410/).waitFor()
      await page.getByRole('button', { name: 'Deliveries' }).click()
      await page.getByRole('cell', { name: /^failed \(HTTP 410\)/ }).waitFor()
      await page.getByRole('button', { name: 'Enable again' }).click()
      await page.getByText('enabled', { exact: true }).waitFor()
      await page.getByRole('button', { name: 'Rotate secret' }).click()
      await page.getByText('The signing secret is shown only now.').waitFor()
      const rotated = (await page.getByTestId('webhook-secret').textContent())?.trim() ?? ''
      assert.match(rotated, /^whsec_[0-9a-f]{64}$/)
      assert.notEqual(rotated, secret)
      await accessibleShot(page, 'webhook-deliveries')
    } finally {
      receiver.close()
    }
  })

  test('settings: channels, coexistence, consent keywords and landing text, follow-up timing', async () => {
    await page.goto(`${server.url}/settings`)
    await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor()
    await page
      .getByTestId('chat-state')
      .getByText(/^connected through sandbox/)
      .waitFor()
    // the box follows the server's answer
    await page.getByRole('checkbox', { name: /^The number is also used in the WhatsApp Business app/ }).click()
    await page.getByText('Pace in effect: 20 messages per second.').waitFor()
    // the number's sending pace as every process claims it (lower after throughput refusals)
    await page.getByTestId('sending-pace').getByText('20 messages per second', { exact: true }).waitFor()

    await page.getByLabel('Stop keywords (comma-separated)').fill('STOP, Abmelden, Los')
    await page.getByLabel('Start keywords (comma-separated)').fill('START, Anmelden, Los')
    await page.getByRole('button', { name: 'Save' }).first().click()
    await page.getByText('A keyword cannot be a start and a stop keyword at once.').waitFor()
    await page.getByLabel('Stop keywords (comma-separated)').fill('STOP, Abmelden')
    await page.getByLabel("The sign-up page's consent text").fill('Ja, schreibt mir per WhatsApp.')
    await page.getByRole('button', { name: 'Save' }).first().click()
    await page.getByText('Saved.').waitFor()

    await page.getByRole('radio', { name: 'Fixed time of day' }).check()
    await page.getByLabel('Time (HH:MM)').fill('09:30')
    await page.getByLabel('Time zone (such as Europe/Berlin)').fill('Europe/Vienna')
    // the follow-up timing's own Save (the routing sections below have theirs)
    await page
      .locator('form')
      .filter({ has: page.getByLabel('Time (HH:MM)') })
      .getByRole('button', { name: 'Save' })
      .click()
    await page.getByText('Saved.').last().waitFor()
    await accessibleShot(page, 'settings')

    const consent = await fetchFrom(page, '/v1/settings/consent')
    assert.deepEqual(consent.body.start_keywords, ['START', 'Anmelden', 'Los'])
    assert.equal(consent.body.landing_consent_text, 'Ja, schreibt mir per WhatsApp.')
    const timing = await fetchFrom(page, '/v1/settings/followup-timing')
    assert.equal(timing.body.send_time, '09:30')
    assert.equal(timing.body.timezone, 'Europe/Vienna')
    const coexistence = await fetchFrom(page, '/v1/settings/coexistence')
    assert.equal(coexistence.body.enabled, true)
  })

  test('a viewer sees every page in German and the server refuses each change they try', async () => {
    const invited = await fetchFrom(page, '/app/team/invitations', {
      method: 'POST',
      body: { email: 'vera@example.org', role: 'viewer' },
      csrf: true,
    })
    assert.equal(invited.status, 201, JSON.stringify(invited.body))
    const link = invited.body.invite_url as string
    assert.ok(link, 'without SMTP the link is in the answer')
    const viewer = await openPage(browser, 'de-DE')
    await viewer.goto(link)
    await viewer.getByLabel('Name').fill('Vera Viewer')
    await viewer.getByLabel('Neues Passwort (mindestens 10 Zeichen)').fill('viewer password')
    await viewer.getByRole('button', { name: 'Einladung annehmen' }).click()
    await viewer.getByRole('heading', { name: 'Übersicht' }).waitFor()
    await viewer.getByRole('img', { name: /^Nachrichten pro Tag/ }).waitFor()
    await accessibleShot(viewer, 'viewer-dashboard')

    const pages: Array<[string, string, string]> = [
      ['Kontakte', 'Kontakte', 'viewer-contacts'],
      ['Posteingang', 'Posteingang', 'viewer-inbox'],
      ['Vorlagen', 'Vorlagen', 'viewer-templates'],
      ['Webhooks', 'Webhook-Abonnements', 'viewer-webhooks'],
      ['Einstellungen', 'Einstellungen', 'viewer-settings'],
    ]
    for (const [link, heading, name] of pages) {
      await viewer.getByRole('link', { name: link, exact: true }).click()
      await viewer.getByRole('heading', { name: heading, level: 1 }).waitFor()
      await accessibleShot(viewer, name)
    }
    assert.equal(await viewer.getByText('Ihre Rolle erlaubt hier nur Lesen.').count(), 1, 'settings say so')
    await viewer.getByRole('link', { name: 'Kontakte', exact: true }).click()
    assert.equal(await viewer.getByRole('heading', { name: 'Kontakte importieren (CSV)' }).count(), 0)
    await viewer.getByRole('link', { name: 'Posteingang', exact: true }).click()
    await viewer.getByRole('link', { name: /Kim Kunde/ }).click()
    await viewer
      .getByRole('list', { name: 'Verlauf' })
      .getByText('Habt ihr am Samstag offen?', { exact: true })
      .waitFor()
    assert.equal(await viewer.getByLabel('Antwort').count(), 0, 'no reply form for a viewer')
    await shot(viewer, 'viewer-conversation')

    const templates = await fetchFrom(viewer, '/v1/templates')
    const template = (templates.body.templates as Array<{ id: string }>)[0]
    const contacts = await fetchFrom(viewer, '/v1/contacts?q=Kim')
    const contact = (contacts.body.contacts as Array<{ id: string }>)[0]
    const webhooks = await fetchFrom(viewer, '/v1/webhook-subscriptions')
    const webhook = (webhooks.body.webhook_subscriptions as Array<{ id: string }>)[0]
    const changes: Array<[string, string, { body?: unknown; csv?: string }]> = [
      ['POST', '/app/contacts/import', { csv: 'name,email\nA,a@example.org\n' }],
      ['POST', '/v1/messages', { body: { contact_id: contact.id, text: 'Hallo' } }],
      ['POST', '/v1/messages', { body: { contact_id: contact.id, template: { id: template.id } } }],
      ['POST', '/v1/templates', { body: { name: 'x', content: 'Hallo' } }],
      ['PATCH', `/v1/templates/${template.id}`, { body: { content: 'Anders' } }],
      ['POST', `/v1/templates/${template.id}/submit`, {}],
      ['POST', '/v1/webhook-subscriptions', { body: { url: 'https://example.org/x', events: ['contact.created'] } }],
      ['POST', `/v1/webhook-subscriptions/${webhook.id}/rotate-secret`, {}],
      ['POST', `/v1/webhook-subscriptions/${webhook.id}/enable`, {}],
      ['PATCH', '/v1/settings/consent', { body: { start_keywords: ['GO'] } }],
      ['PATCH', '/v1/settings/coexistence', { body: { enabled: false } }],
      ['PATCH', '/v1/settings/followup-timing', { body: { send_time: null } }],
    ]
    for (const [method, url, init] of changes) {
      const answer = await fetchFrom(viewer, url, { method, ...init, csrf: true })
      assert.equal(answer.status, 403, `${method} ${url}: ${JSON.stringify(answer.body)}`)
      assert.equal(answer.body.error?.code, 'forbidden')
    }
    // reading stays allowed: the live check changes nothing
    const check = await fetchFrom(viewer, '/app/templates/check', {
      method: 'POST',
      body: { name: 'x', content: '{{1}}' },
      csrf: true,
    })
    assert.equal(check.status, 200)
    assert.ok((check.body.issues as unknown[]).length > 0)
    const consent = await fetchFrom(page, '/v1/settings/consent')
    assert.deepEqual(consent.body.start_keywords, ['START', 'Anmelden', 'Los'], 'nothing changed')
    await viewer.context().close()
  })
})
