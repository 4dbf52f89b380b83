import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import nodemailer from 'nodemailer'
import type { Page } from 'playwright-core'
import { createMember, invite } from '../../src/modules/people/index.ts'
import { CONSOLE_PAGES, type ConsoleRig, startConsole } from '../helpers/console.ts'
import type { TestAccount } from '../helpers/harness.ts'
import { fetchFrom } from '../helpers/pages.ts'

// Issue 51, the adversarial pass over the console: every text a customer or a member can set carries script in the
// classic forms (an <img onerror>, an <svg onload>, a closing quote and <script>, a template's braces, a javascript:
// address where an address is taken). Then the owner, signed in in a real Chromium, opens every page of the console
// (lists and details) and the public pages. Nothing may run: the global mark stays empty, no dialog opens, and no
// CSP violation is reported (a violation means the payload reached the DOM as HTML and only the CSP stopped it). A
// control at the start proves the probe sees a payload that runs (a page without CSP) and one the CSP blocks.

const OWNER = { name: 'Xaver Prüfer', email: 'xaver.sweep@example.org', password: 'sweep password 51' }
/** one text carrying every form; `xss(n)` marks the global `__xss` */
const P = `"><img src=x onerror=xss(1)><svg onload=xss(2)></svg><script>xss(3)</script>{{constructor}}'-alert(4)-'`
/** a shorter one for texts with a tighter bound */
const SHORT = `<img src=x onerror=xss(5)>`
/** for texts of at most 80 characters */
const MID = `"><img src=x onerror=xss(1)><svg onload=xss(2)></svg>{{name}}`
const PROBE = '/__xss-probe'

const INIT = `
  window.__xss = [];
  window.__csp = [];
  window.xss = (n) => window.__xss.push(String(n));
  document.addEventListener('securitypolicyviolation', (e) =>
    window.__csp.push(e.violatedDirective + ' ' + (e.sample || e.blockedURI)));
`

let rig: ConsoleRig
let account: TestAccount
let page: Page
const dialogs: string[] = []
/** what each seed answered: what the API refused is not stored, so it needs no page to show it inert */
const tried: Record<string, number> = {}
const detail: Record<string, string> = {}

async function api(method: 'POST' | 'PATCH' | 'PUT', url: string, payload: unknown, label: string) {
  const answer = await account.request({ method, url, payload: payload as Record<string, unknown> })
  tried[label] = answer.statusCode
  if (answer.statusCode >= 300) console.log(label, answer.body)
  assert.ok(answer.statusCode < 500, `${label}: ${answer.body}`)
  return answer.statusCode < 300 ? answer.json() : null
}

before(async () => {
  rig = await startConsole()
  ;({ account } = await rig.account({ name: `Shop ${P}`, owner: OWNER, sandbox: true }))
  // a member who names themself with the payload
  await createMember(rig.harness.database.orm, {
    accountId: account.accountId,
    role: 'member',
    name: P,
    email: 'mallory.member@example.org',
    password: 'member password 51',
  })
  await api('POST', '/v1/contact-fields', { key: 'note', label: MID, type: 'text' }, 'contact field label')
  const contact = await api(
    'POST',
    '/v1/contacts',
    { name: P, phone: '+4917612345051', email: 'x+{{7*7}}@example.org', fields: { note: P } },
    'contact name, e-mail local part, field value',
  )
  if (contact) {
    detail.contact = `/contacts/${contact.contact.id}`
    await api(
      'POST',
      `/v1/contacts/${contact.contact.id}/tags`,
      { tags: [SHORT, `"><svg onload=xss(8)>{{x}}`] },
      'tags',
    )
  }
  await api('POST', '/v1/sandbox/inbound', { from: '+491517770051', text: P }, 'sandbox inbound text')
  // an e-mail from a customer: subject, body, attachment's file name, sender's display name
  const connected = await rig.harness.services.channels.connect(account.accountId, {
    channel: 'email',
    provider: 'sandbox',
    address: 'shop@example.com',
  })
  const transport = nodemailer.createTransport({ streamTransport: true, buffer: true })
  const raw = (
    await transport.sendMail({
      from: { name: P, address: 'mallory@example.org' },
      to: 'shop@example.com',
      subject: P,
      text: P,
      html: `<p>${P}</p>`,
      attachments: [{ filename: `${SHORT}.png`, content: Buffer.from('x'), contentType: 'image/png' }],
    })
  ).message as Buffer
  const inbound = new URL(connected.inbound_url!)
  const posted = await rig.harness.app.inject({
    method: 'POST',
    url: `${inbound.pathname}${inbound.search}`,
    headers: { 'content-type': 'message/rfc822' },
    payload: raw,
  })
  tried['e-mail hook subject, body, html, sender name, attachment name'] = posted.statusCode
  const template = await api(
    'POST',
    '/v1/templates',
    { name: 'sweep', content: `Hallo {{name}} ${P}` },
    'template body',
  )
  await api('POST', '/v1/templates', { name: P, content: 'Hallo' }, 'template name')
  if (template) detail.template = `/templates/${template.template.id}`
  const newsletter = await api('POST', '/v1/newsletters', { subject: P, content: `Hallo ${P}` }, 'newsletter')
  if (newsletter) detail.newsletter = `/newsletters/${newsletter.newsletter.id}`
  const automation = await api(
    'POST',
    '/v1/automations',
    { name: P, trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'sweep' }] },
    'automation name',
  )
  if (automation) detail.automation = `/automations/${automation.id}`
  const followup = await rig.harness.services.followups.create(
    { accountId: account.accountId, account: { language: 'en' } },
    { name: P, steps: [{ text: `Hallo {{name}} ${P}`, delay: { amount: 1, unit: 'days' } }] },
  )
  detail.followup = `/followups/${followup.id}`
  await api(
    'POST',
    '/v1/webhook-subscriptions',
    { url: 'javascript:xss(6)', events: ['contact.created'] },
    'webhook javascript: url',
  )
  await api(
    'POST',
    '/v1/webhook-subscriptions',
    { url: `https://hooks.example.com/"><img src=x onerror=xss(7)>`, events: ['contact.created'] },
    'webhook url with markup',
  )
  await api(
    'POST',
    '/v1/knowledge/documents',
    { data_base64: Buffer.from(`FAQ ${P}`).toString('base64'), filename: `${SHORT}.txt`, mime: 'text/plain' },
    'knowledge document file name',
  )
  const png = Buffer.from(
    'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
    'base64',
  )
  await api(
    'POST',
    '/v1/media',
    { data_base64: png.toString('base64'), filename: `${SHORT}.png`, mime: 'image/png' },
    'media file name',
  )
  await api('PATCH', '/v1/settings/consent', { landing_consent_text: P, stop_confirmation: P }, 'consent texts')
  page = await rig.signedInPage(OWNER)
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  await page.context().addInitScript(INIT)
  const key = await fetchFrom(page, '/app/keys', {
    method: 'POST',
    body: { name: P, scopes: ['contacts:read'] },
    csrf: true,
  })
  tried['API key name'] = key.status
  const invited = await fetchFrom(page, '/app/team/invitations', {
    method: 'POST',
    body: { email: 'invitee@example.org', role: 'member' },
    csrf: true,
  })
  tried.invitation = invited.status
  // the e-mail channel carries the invitation's mail, so the link is made here, as the route makes it
  const { token } = await invite(rig.harness.database.orm, rig.harness.clock, {
    accountId: account.accountId,
    email: 'invitee.two@example.org',
    role: 'member',
    actorRole: 'owner',
  })
  detail.invitation = `/invitations/${token}`
})

after(() => rig?.close())

interface Seen {
  marks: string[]
  csp: string[]
}

async function look(on: Page): Promise<Seen> {
  const found: Seen = { marks: [], csp: [] }
  for (const frame of on.frames()) {
    const got = await (
      frame.evaluate('({ marks: window.__xss || [], csp: window.__csp || [] })') as Promise<Seen>
    ).catch(() => ({ marks: [], csp: [] }))
    found.marks.push(...got.marks)
    found.csp.push(...got.csp)
  }
  return found
}

async function open(path: string): Promise<Seen> {
  await page.goto(`${rig.base}${path}`)
  await page.locator('main, h1').first().waitFor()
  await page.waitForLoadState('networkidle').catch(() => {})
  await page.waitForTimeout(500)
  return look(page)
}

describe('every text a customer or member can set stays text on every page', () => {
  test('the control: the probe sees a payload that runs, and one the console’s CSP blocks', async () => {
    const probe = await page.context().newPage()
    await probe.route(`${rig.base}${PROBE}`, (route) =>
      route.fulfill({ contentType: 'text/html', body: '<!doctype html><title>probe</title><main></main>' }),
    )
    await probe.goto(`${rig.base}${PROBE}`)
    await probe.evaluate(`document.querySelector('main').innerHTML = ${JSON.stringify(P)}`)
    await probe.waitForTimeout(300)
    const ran = await look(probe)
    await probe.close()
    assert.ok(ran.marks.includes('1'), `the img payload ran without CSP: ${JSON.stringify(ran)}`)
    await page.goto(`${rig.base}/contacts`)
    await page.locator('main h1').first().waitFor()
    await page.evaluate(`document.querySelector('main').insertAdjacentHTML('beforeend', ${JSON.stringify(P)})`)
    await page.waitForTimeout(300)
    const blocked = await look(page)
    assert.deepEqual(blocked.marks, [], 'the console’s CSP stops an inline handler')
    assert.ok(blocked.csp.length > 0, `and reports it: ${JSON.stringify(blocked)}`)
  })

  test('the seeds reached the API (what was refused is listed)', () => {
    console.log('seeds:', JSON.stringify(tried))
    for (const label of [
      'contact field label',
      'contact name, e-mail local part, field value',
      'tags',
      'sandbox inbound text',
      'template body',
      'newsletter',
      'automation name',
      'media file name',
      'knowledge document file name',
      'consent texts',
      'API key name',
    ]) {
      assert.ok(tried[label]! < 300, `${label}: ${tried[label]}`)
    }
  })

  test('every console page, lists and details, runs nothing and reports no violation', async () => {
    const contacts = await fetchFrom(page, '/v1/contacts?limit=10')
    const contactIds = ((contacts.body.contacts ?? []) as Array<{ id: string }>).map((c) => c.id)
    const conversations = await fetchFrom(page, '/v1/inbox/conversations?limit=10')
    const conversationIds = ((conversations.body.conversations ?? []) as Array<{ id: string }>).map((c) => c.id)
    const paths = [
      ...CONSOLE_PAGES,
      '/consent',
      ...Object.entries(detail)
        .filter(([name]) => name !== 'invitation')
        .map(([, path]) => path),
      ...contactIds.map((id) => `/contacts/${id}`),
      ...conversationIds.map((id) => `/inbox/${id}`),
    ]
    const found: Record<string, Seen> = {}
    for (const path of paths) {
      const seen = await open(path)
      if (seen.marks.length > 0 || seen.csp.length > 0) found[path] = seen
    }
    console.log('pages:', paths.join(' '))
    assert.ok(conversationIds.length >= 2, 'the chat and the e-mail conversation were opened')
    assert.deepEqual({ found, dialogs }, { found: {}, dialogs: [] })
  })

  test('the payload is shown as text where it appears', async () => {
    await open('/automations')
    await page.getByText(P).first().waitFor()
    await open(detail.followup!)
    await page.getByText(P).first().waitFor()
    await open('/team')
    await page.getByText(P).first().waitFor()
    await open('/contacts')
    await page.getByText(P).first().waitFor()
    await open('/media')
    await page.getByText(`${SHORT}.png`).first().waitFor()
    const conversations = await fetchFrom(page, '/v1/inbox/conversations?limit=10')
    for (const { id } of conversations.body.conversations as Array<{ id: string }>) {
      await open(`/inbox/${id}`)
      await page.getByText(P).first().waitFor()
    }
  })

  test('the public pages: sign-up (account name, consent text), its answer, and a sign-up with the payload', async () => {
    const signup = `/public/signup/${account.accountId}`
    const found: Record<string, Seen> = {}
    await page.goto(`${rig.base}${signup}`)
    found.signup = await look(page)
    await page.getByText(P).first().waitFor()
    await page.getByLabel(/name/i).first().fill(P)
    await page.locator('#email').fill('y@example.org')
    await page.locator('#consent').check()
    await page.locator('#signup button[type=submit], #signup [type=submit]').first().click()
    await page.waitForLoadState('networkidle').catch(() => {})
    found.done = await look(page)
    const others = ['/public/optin/not-a-token', '/public/unsubscribe/not-a-token', '/invitations/not-a-token']
    for (const path of others) {
      await page.goto(`${rig.base}${path}`)
      await page.waitForLoadState('networkidle').catch(() => {})
      found[path] = await look(page)
    }
    await page.goto(`${rig.base}${detail.invitation}`)
    await page.getByText(P).first().waitFor() // the account's name, as text
    found.invitation = await look(page)
    assert.ok(detail.invitation, 'the invitation page (account name) was opened')
    const bad = Object.fromEntries(Object.entries(found).filter(([, s]) => s.marks.length > 0 || s.csp.length > 0))
    assert.deepEqual({ bad, dialogs }, { bad: {}, dialogs: [] })
  })
})
