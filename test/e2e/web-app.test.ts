import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { simpleParser } from 'mailparser'
import type { Browser, Page } from 'playwright-core'
import { browserWithPage, openPage } from '../helpers/browser.ts'
import { assertAccessible, fetchFrom, pageChecks, signInThroughPage, submitSetupForm } from '../helpers/pages.ts'
import { childEnv, freePort, npmStart, type ServerProcess, setupLinkOf, tempDataDir } from '../helpers/process.ts'
import { type SmtpSink, startSmtpSink } from '../helpers/smtp-sink.ts'

// The web app in a real headless Chromium, against a server started as `npm start` starts it. Every test leaves a
// screenshot of its page in test-results/web-app/ (HEROLD_TEST_OUTPUT overrides) for a reviewer.

const { shot, accessibleShot } = pageChecks('web-app')
const OWNER = { name: 'Olga Owner', email: 'olga@example.org', password: 'first password 1' }

let server: ServerProcess
let smtp: SmtpSink
let browser: Browser
let page: Page
let setupLink: string

before(async () => {
  smtp = await startSmtpSink()
  const port = await freePort()
  server = await npmStart(
    childEnv({
      HEROLD_DATA_DIR: tempDataDir(),
      PORT: String(port),
      HEROLD_SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
      HEROLD_MAIL_FROM: 'herold@example.org',
    }),
  )
  setupLink = setupLinkOf(server)
  ;({ browser, page } = await browserWithPage())
})

after(async () => {
  await browser?.close()
  await server?.stop()
  await smtp?.close()
})

async function mailLink(to: string, kind: 'invitations' | 'reset'): Promise<string> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const mail = [...smtp.arrived].reverse().find((m) => m.to.includes(to))
    if (mail) {
      const text = (await simpleParser(mail.raw)).text ?? ''
      const match = new RegExp(`(http://127\\.0\\.0\\.1:\\d+/${kind}/[A-Za-z0-9_-]+)`).exec(text)
      if (match) return match[1]
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`no ${kind} e-mail to ${to}`)
}

async function signIn(target: Page, email: string, password: string): Promise<void> {
  await signInThroughPage(target, server.url, { email, password })
  await target.getByRole('heading', { name: 'Overview' }).waitFor()
}

describe('the web app', () => {
  test('the owner is created through the setup link npm start printed, and the link works only once', async () => {
    await page.goto(setupLink)
    await page.getByRole('heading', { name: 'Set up Herold' }).waitFor()
    await page.getByText('Create the owner of the account “Default”').waitFor()
    await assertAccessible(page, 'setup')
    await submitSetupForm(page, OWNER)
    // signed in, on the dashboard, the app speaks the account's language (German) until the member chooses another
    await page.getByRole('heading', { name: 'Übersicht' }).waitFor()
    await page.getByRole('link', { name: 'Mein Zugang' }).click()
    await page.getByRole('combobox', { name: 'Sprache' }).selectOption('en')
    await page.getByRole('heading', { name: 'My sign-in' }).waitFor()
    await page.getByRole('link', { name: 'Contacts' }).click()
    await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor()
    const cookie = (await page.context().cookies()).find((c) => c.name === 'herold_session')
    assert.ok(cookie?.httpOnly, 'the session cookie is HTTP-only')
    assert.equal(cookie?.sameSite, 'Lax')
    await accessibleShot(page, 'contacts', 'setup-done')

    const again = await browser.newPage({ locale: 'en-US' })
    await again.goto(setupLink)
    await again.getByText('This link is invalid, was used already or has expired.').waitFor()
    await shot(again, 'setup-link-used')
    await again.close()
  })

  test('sign-out ends the session on the server; signing in again works', async () => {
    const before = (await page.context().cookies()).find((c) => c.name === 'herold_session')!.value
    await page.getByRole('button', { name: 'Sign out' }).click()
    await page.getByRole('heading', { name: 'Sign in' }).waitFor()
    await assertAccessible(page, 'sign-in')
    const replay = await fetch(`${server.url}/v1/me`, { headers: { cookie: `herold_session=${before}` } })
    assert.equal(replay.status, 401, 'the old cookie is dead on the server, not only in the browser')

    await page.getByLabel('E-mail address').fill(OWNER.email)
    await page.getByLabel('Password', { exact: true }).fill('not the password')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.getByText('E-mail address or password is wrong.').waitFor()
    await shot(page, 'sign-in-wrong-password')
    await signIn(page, OWNER.email, OWNER.password)
  })

  test('an API key made in the app (shown once) works with curl-like requests; the contact is found as you type', async () => {
    await page.getByRole('link', { name: 'API keys' }).click()
    await page.getByRole('heading', { name: 'API keys' }).waitFor()
    await page.getByLabel('Label').fill('shop')
    await page.getByRole('checkbox', { name: 'contacts:write' }).check()
    await page.getByRole('button', { name: 'Create key' }).click()
    const key = (await page.getByTestId('new-key').textContent())?.trim() ?? ''
    assert.match(key, /^hk_[A-Za-z0-9_-]+$/)
    await page.getByText('This key is shown only now.').waitFor()
    await accessibleShot(page, 'keys', 'key-created')

    const created = await fetch(`${server.url}/v1/contacts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Erika Mustermann', email: 'erika@example.com' }),
    })
    assert.equal(created.status, 201, await created.clone().text())
    const team = await fetch(`${server.url}/v1/team`, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(team.status, 403, 'the key carries only the scopes chosen')

    await page.reload()
    assert.equal(await page.getByTestId('new-key').count(), 0, 'the key is not shown again')
    await page.getByRole('link', { name: 'Contacts' }).click()
    await page.getByLabel('Search (name, e-mail, phone)').pressSequentially('muster')
    await page.getByRole('link', { name: 'Erika Mustermann' }).click()
    await page.getByRole('heading', { name: 'Erika Mustermann' }).waitFor()
    await page.getByText('erika@example.com').waitFor()
    await accessibleShot(page, 'contact')
  })

  test('a change without the CSRF token is refused, even from the app origin with the session cookie', async () => {
    const refused = await fetchFrom(page, '/v1/contacts', { method: 'POST', body: { email: 'x@example.org' } })
    assert.equal(refused.status, 403)
    assert.equal(refused.body.error?.code, 'csrf_invalid')
    const allowed = await fetchFrom(page, '/v1/contacts', {
      method: 'POST',
      body: { email: 'x@example.org' },
      csrf: true,
    })
    assert.equal(allowed.status, 201)
    await shot(page, 'csrf')
  })

  test('an invited viewer signs in and the server refuses every change they try', async () => {
    await page.goto(`${server.url}/team`)
    await page.getByRole('heading', { name: 'Team' }).waitFor()
    await page.getByLabel('E-mail address').fill('vera@example.org')
    await page.getByRole('combobox', { name: 'Role', exact: true }).selectOption('viewer')
    await page.getByRole('button', { name: 'Invite' }).click()
    await page.getByText('The invitation is on its way by e-mail.').waitFor()
    await page.getByRole('cell', { name: 'vera@example.org', exact: true }).waitFor()
    await accessibleShot(page, 'team', 'team-invited')

    const link = await mailLink('vera@example.org', 'invitations')
    const viewer = await openPage(browser)
    await viewer.goto(link)
    await viewer.getByText('You were invited as Viewer (vera@example.org).').waitFor()
    await assertAccessible(viewer, 'invitation')
    await viewer.getByLabel('Name').fill('Vera Viewer')
    await viewer.getByLabel('New password (at least 10 characters)').fill('viewer password')
    await viewer.getByRole('button', { name: 'Accept invitation' }).click()
    // a new member sees the account's language, German
    await viewer.getByRole('heading', { name: 'Übersicht' }).waitFor()
    assert.equal(await viewer.getByRole('link', { name: 'API-Schlüssel' }).count(), 0, 'no keys page for a viewer')

    const write = await fetchFrom(viewer, '/v1/contacts', {
      method: 'POST',
      body: { email: 'v@example.org' },
      csrf: true,
    })
    assert.equal(write.status, 403)
    assert.equal(write.body.error?.code, 'forbidden')
    const keys = await fetchFrom(viewer, '/app/keys', {
      method: 'POST',
      body: { name: 'x', scopes: ['contacts:read'] },
      csrf: true,
    })
    assert.equal(keys.status, 403)
    const promote = await fetchFrom(viewer, '/app/team/invitations', {
      method: 'POST',
      body: { email: 'eve@example.org', role: 'owner' },
      csrf: true,
    })
    assert.equal(promote.status, 403)
    await viewer.goto(`${server.url}/team`)
    await viewer.getByText('Ihre Rolle erlaubt hier nur Lesen.').waitFor()
    assert.equal(await viewer.getByRole('button', { name: 'Einladen' }).count(), 0)
    await shot(viewer, 'viewer-team')
    await viewer.context().close()
  })

  test('a password change ends every other session of the member', async () => {
    const other = await openPage(browser)
    await signIn(other, OWNER.email, OWNER.password)

    await page.goto(`${server.url}/account`)
    await page.getByLabel('Current password').fill(OWNER.password)
    await page.getByLabel('New password (at least 10 characters)').fill('second password 2')
    await page.getByRole('button', { name: 'Save' }).click()
    await page.getByText('Password changed. Every other session has ended.').waitFor()
    await accessibleShot(page, 'account', 'password-changed')

    assert.equal((await fetchFrom(other, '/app/session')).status, 401, 'the other browser is signed out')
    assert.equal((await fetchFrom(page, '/app/session')).status, 200, 'this browser has a new session')
    await other.goto(`${server.url}/contacts`)
    await other.getByRole('heading', { name: 'Sign in' }).waitFor()
    await other.context().close()
  })

  test('a forgotten password is reset through the e-mailed link, in German when the browser asks for it', async () => {
    const german = await openPage(browser, 'de-DE')
    await german.goto(`${server.url}/sign-in`)
    await german.getByRole('link', { name: 'Passwort vergessen?' }).click()
    await german.getByLabel('E-Mail-Adresse').fill(OWNER.email)
    await german.getByRole('button', { name: 'Link senden' }).click()
    await german.getByText('Falls die Adresse zu einem Konto gehört').waitFor()
    await assertAccessible(german, 'reset-request')
    const link = await mailLink(OWNER.email, 'reset')
    await german.goto(link)
    await german.getByLabel('Neues Passwort (mindestens 10 Zeichen)').fill('third password 3')
    await german.getByRole('button', { name: 'Neues Passwort speichern' }).click()
    await german.getByText('Ihr Passwort ist geändert.').waitFor()
    await accessibleShot(german, 'reset-done')
    assert.equal((await fetchFrom(page, '/app/session')).status, 401, 'a reset ends every session')
    await german.context().close()
    await signIn(page, OWNER.email, 'third password 3')
    await shot(page, 'signed-in-after-reset')
  })
})
