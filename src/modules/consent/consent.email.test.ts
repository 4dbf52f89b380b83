import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { simpleParser } from 'mailparser'
import { createTestAccount, type Harness, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { smtpChannel, smtpSinkPerFile } from '../../../test/helpers/smtp-sink.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { blockAccount } from '../../platform/auth/accounts.service.ts'
import { consentHistory } from '../contacts/index.ts'
import { PUBLIC_POSTS_PER_MINUTE } from './index.ts'

let harness: Harness

harnessPerFile({ config: { allowPrivateTargets: true }, workers: true }, (created) => {
  harness = created
})
/** A real SMTP server on loopback that keeps what arrives. */
const smtp = smtpSinkPerFile()
const arrived = smtp.arrived

let counter = 0
const nextEmail = () => `kunde-${process.pid}-${++counter}@example.org`
const DAY = 24 * 60 * 60 * 1000

async function smtpAccount(name = 'Blumen Erika'): Promise<TestAccount> {
  const account = await createTestAccount(harness, { name })
  await harness.services.channels.connect(account.accountId, smtpChannel(smtp.port))
  return account
}

/** The landing page as a browser sees it: the form token and the cookie of the GET. */
async function openForm(accountId: string) {
  const page = await harness.app.inject({ method: 'GET', url: `/public/signup/${accountId}` })
  assert.equal(page.statusCode, 200, page.body)
  const token = page.body.match(/name="form_token" value="([^"]+)"/)?.[1]
  assert.ok(token)
  const cookie = String(page.headers['set-cookie']).split(';')[0]
  return { page, token, cookie }
}

async function postForm(
  accountId: string,
  fields: Record<string, string>,
  options: { cookie?: string; token?: string } = {},
) {
  const form = await openForm(accountId)
  return harness.app.inject({
    method: 'POST',
    url: `/public/signup/${accountId}`,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: options.cookie ?? form.cookie,
      'user-agent': 'TestBrowser/1.0',
    },
    payload: new URLSearchParams({ form_token: options.token ?? form.token, ...fields }).toString(),
  })
}

async function contactByEmail(account: TestAccount, email: string) {
  const { contacts } = json<{
    contacts: Array<{
      id: string
      email: string
      optin_email: string
      optin_chat: string
      source: string
      name: string
    }>
  }>(await account.request({ method: 'GET', url: `/v1/contacts?q=${encodeURIComponent(email)}` }))
  return contacts.find((c) => c.email === email)
}

async function mailTo(address: string) {
  const mail = arrived.findLast((m) => m.to.includes(address))
  assert.ok(mail, `a mail reached ${address}`)
  return simpleParser(mail.raw)
}

const pathOf = (url: string) => new URL(url).pathname

/** GET on a link shows a form that posts; the contact's e-mail opt-in stays `optin`. */
async function assertFormOnly(link: string, account: TestAccount, email: string, optin: string, message: string) {
  const page = await harness.app.inject({ method: 'GET', url: pathOf(link) })
  assert.equal(page.statusCode, 200)
  assert.match(page.body, /<form method="post"/)
  assert.equal((await contactByEmail(account, email))?.optin_email, optin, message)
}

/** A new address signed up through the landing page with consent; the confirmation link mailed to it. */
async function signedUp(account: TestAccount): Promise<{ email: string; link: string }> {
  const email = nextEmail()
  await postForm(account.accountId, { email, consent: 'yes' })
  await harness.jobs?.drain()
  const link = (await mailTo(email)).text?.match(/http:\/\/herold\.test\/public\/optin\/\S+/)?.[0]
  assert.ok(link)
  return { email, link }
}

describe('e-mail double opt-in from the landing page', () => {
  test('sign-up → pending → mail with link → GET shows a button → POST confirms, with evidence', async () => {
    const account = await smtpAccount()
    const email = nextEmail()
    const response = await postForm(account.accountId, { name: 'Erika Muster', email, consent: 'yes' })
    assert.equal(response.statusCode, 200, response.body)
    assert.match(response.body, /Almost done/)
    // the sign-up is applied by a job after the answer
    await harness.jobs?.drain()
    const contact = await contactByEmail(account, email)
    assert.ok(contact)
    assert.equal(contact.optin_email, 'pending')
    assert.equal(contact.source, 'landing')

    await harness.jobs?.drain()
    const mail = await mailTo(email)
    assert.equal(mail.subject, 'Bitte bestätigen Sie Ihre Anmeldung')
    const link = mail.text?.match(/http:\/\/herold\.test\/public\/optin\/\S+/)?.[0]
    assert.ok(link, mail.text)

    await assertFormOnly(link, account, email, 'pending', 'opening the link confirms nothing')

    const confirmed = await harness.app.inject({
      method: 'POST',
      url: pathOf(link),
      headers: { 'user-agent': 'TestBrowser/2.0' },
    })
    assert.equal(confirmed.statusCode, 200)
    assert.match(confirmed.body, /confirmed/)
    assert.equal((await contactByEmail(account, email))?.optin_email, 'confirmed')

    const trail = await consentHistory(harness.database.orm, account.accountId, contact.id)
    assert.deepEqual(
      trail.map((r) => [r.channel, r.fromState, r.toState, r.source]),
      [
        ['email', 'none', 'pending', 'landing'],
        ['email', 'pending', 'confirmed', 'double_opt_in'],
      ],
    )
    assert.equal(trail[0].evidence.ip, '127.0.0.1')
    assert.equal(trail[0].evidence.user_agent, 'TestBrowser/1.0')
    assert.match(String(trail[0].evidence.consent_text), /E-Mail/)
    assert.equal(trail[0].address, email)
    assert.equal(typeof trail[1].evidence.token_id, 'string')
    assert.equal(trail[1].evidence.user_agent, 'TestBrowser/2.0')

    const again = await harness.app.inject({ method: 'POST', url: pathOf(link) })
    assert.match(again.body, /already used/)
    assert.equal(
      (await consentHistory(harness.database.orm, account.accountId, contact.id)).length,
      2,
      'a used link records nothing',
    )
  })

  test('an expired link or a made-up one confirms nothing', async () => {
    const account = await smtpAccount()
    const { email, link } = await signedUp(account)
    const madeUp = await harness.app.inject({ method: 'POST', url: '/public/optin/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' })
    assert.equal(madeUp.statusCode, 404)
    harness.clock.advance(8 * DAY)
    const expired = await harness.app.inject({ method: 'POST', url: pathOf(link) })
    assert.equal(expired.statusCode, 410)
    assert.equal((await contactByEmail(account, email))?.optin_email, 'pending')
  })

  test('sign-up with phone and e-mail starts both opt-ins; an existing contact is not changed by the form', async () => {
    const account = await smtpAccount()
    const email = nextEmail()
    const existing = await account.request({ method: 'POST', url: '/v1/contacts', payload: { email, name: 'Alt' } })
    assert.equal(existing.statusCode, 201)
    const phone = `+4916${String(process.pid % 1000).padStart(3, '0')}${String(++counter).padStart(5, '0')}`
    const response = await postForm(account.accountId, { name: 'Neu', email, phone, consent: 'yes' })
    assert.equal(response.statusCode, 200, response.body)
    assert.match(response.body, /WhatsApp message/)
    await harness.jobs?.drain()
    const contact = await contactByEmail(account, email)
    assert.equal(contact?.id, json<{ contact: { id: string } }>(existing).contact.id)
    assert.equal(contact?.optin_email, 'pending')
    assert.equal(contact?.name, 'Alt', 'an unauthenticated form does not rename a contact')
    assert.equal(contact?.optin_chat, 'none', 'nor gives it a phone')
    // the new number is a contact of its own, with the form's name, waiting for its WhatsApp confirmation
    const { contacts } = json<{ contacts: Array<{ id: string; name: string; optin_chat: string; phone: string }> }>(
      await account.request({ method: 'GET', url: '/v1/contacts' }),
    )
    const byPhone = contacts.find((c) => c.phone === phone)
    assert.equal(byPhone?.name, 'Neu')
    assert.equal(byPhone?.optin_chat, 'pending')
  })

  test('a hostile sign-up with a confirmed address changes nothing, sends nothing and answers as for a new one', async () => {
    const account = await smtpAccount()
    const email = nextEmail()
    assert.equal((await postForm(account.accountId, { name: 'Erika', email, consent: 'yes' })).statusCode, 200)
    await harness.jobs?.drain()
    const link = (await mailTo(email)).text?.match(/http:\/\/herold\.test\/public\/optin\/\S+/)?.[0]
    assert.ok(link)
    assert.equal((await harness.app.inject({ method: 'POST', url: pathOf(link) })).statusCode, 200)
    const before = await contactByEmail(account, email)
    assert.equal(before?.optin_email, 'confirmed')
    const mails = arrived.filter((m) => m.to.includes(email)).length

    // the runner is held while the two forms are answered: it would otherwise claim the sign-up jobs at their
    // NOTIFY, and whether a write came before the answer or in the job could not be told apart
    assert.ok(harness.jobs)
    await harness.jobs.stop()
    const hostile = await postForm(account.accountId, { name: 'Mallory', email, consent: 'yes' })
    const stranger = nextEmail()
    const unknown = await postForm(account.accountId, { name: 'Mallory', email: stranger, consent: 'yes' })
    assert.equal(hostile.statusCode, unknown.statusCode)
    assert.equal(hostile.body, unknown.body, 'the answer does not tell a subscriber from an unknown address')
    assert.equal(hostile.headers['set-cookie'], unknown.headers['set-cookie'])
    // the same work before both answers: the look-up and any write come after, in the sign-up's job
    assert.equal(await contactByEmail(account, stranger), undefined, 'nothing is stored before the answer')

    await harness.jobs.start()
    await harness.jobs.drain()
    const after = await contactByEmail(account, email)
    assert.equal(after?.name, 'Erika')
    assert.equal(after?.optin_email, 'confirmed')
    assert.equal((await contactByEmail(account, stranger))?.optin_email, 'pending', 'the new address signed up')
    assert.equal(arrived.filter((m) => m.to.includes(email)).length, mails, 'a confirmed subscriber gets no new mail')
    const trail = await consentHistory(harness.database.orm, account.accountId, before.id)
    assert.equal(trail.length, 2, 'no consent change recorded')
  })

  test('the phone and the e-mail of two different contacts: each keeps its data, the answer is the usual one', async () => {
    const account = await smtpAccount()
    const email = nextEmail()
    const phone = `+4917${String(process.pid % 1000).padStart(3, '0')}${String(++counter).padStart(5, '0')}`
    const a = await account.request({ method: 'POST', url: '/v1/contacts', payload: { email, name: 'A' } })
    const b = await account.request({ method: 'POST', url: '/v1/contacts', payload: { phone, name: 'B' } })
    assert.equal(a.statusCode, 201)
    assert.equal(b.statusCode, 201)
    const both = await postForm(account.accountId, { name: 'Mallory', email, phone, consent: 'yes' })
    const fresh = await postForm(account.accountId, {
      name: 'Mallory',
      email: nextEmail(),
      phone: `+4917${String(process.pid % 1000).padStart(3, '0')}${String(++counter).padStart(5, '0')}`,
      consent: 'yes',
    })
    assert.equal(both.statusCode, 200, both.body)
    assert.equal(both.body, fresh.body)
    await harness.jobs?.drain()
    for (const [created, name] of [
      [a, 'A'],
      [b, 'B'],
    ] as const) {
      const id = json<{ contact: { id: string } }>(created).contact.id
      const contact = json<{ contact: { name: string } }>(
        await account.request({ method: 'GET', url: `/v1/contacts/${id}` }),
      ).contact
      assert.equal(contact.name, name)
    }
  })

  test('bad input shows the form again with a clear error and changes nothing', async () => {
    const account = await smtpAccount()
    const email = nextEmail()
    for (const [fields, message] of [
      [{ email, name: 'Erika' }, /agree/],
      [{ consent: 'yes', name: 'Erika' }, /mobile number or your e-mail/],
      [{ email: 'no-at-sign', consent: 'yes' }, /e-mail address/],
      [{ phone: '12', consent: 'yes' }, /mobile number/],
    ] as const) {
      const response = await postForm(account.accountId, fields)
      assert.equal(response.statusCode, 400, response.body)
      assert.match(response.body, /role="alert"/)
      assert.match(response.body, message)
      assert.match(response.body, /name="form_token"/)
    }
    assert.equal(await contactByEmail(account, email), undefined)
    const { contacts } = json<{ contacts: unknown[] }>(await account.request({ method: 'GET', url: '/v1/contacts' }))
    assert.equal(contacts.length, 0)
  })

  test('a post without the form cookie or with another account’s token is refused (CSRF) and changes nothing', async () => {
    const account = await smtpAccount()
    const other = await smtpAccount()
    const email = nextEmail()
    const foreign = await openForm(other.accountId)
    for (const options of [
      { cookie: '' },
      { cookie: 'herold_signup=forged' },
      { token: foreign.token, cookie: foreign.cookie },
    ]) {
      const response = await postForm(account.accountId, { email, consent: 'yes' }, options)
      assert.equal(response.statusCode, 403, response.body)
      assert.match(response.body, /expired/)
    }
    assert.equal(await contactByEmail(account, email), undefined)
  })

  test('everything shown is escaped', async () => {
    const account = await smtpAccount('<script>alert(1)</script> & "Shop"')
    const { page } = await openForm(account.accountId)
    assert.doesNotMatch(page.body, /<script>/)
    assert.match(page.body, /&lt;script&gt;alert\(1\)&lt;\/script&gt; &amp; &quot;Shop&quot;/)
    const response = await postForm(account.accountId, { name: '"><img src=x onerror=alert(1)>', consent: '' })
    assert.doesNotMatch(response.body, /<img src=x/)
  })

  test('a blocked account has no landing page', async () => {
    const account = await smtpAccount()
    await blockAccount(harness.database.orm, account.accountId)
    const response = await harness.app.inject({ method: 'GET', url: `/public/signup/${account.accountId}` })
    assert.equal(response.statusCode, 404)
  })

  test('a signed-up contact can be deleted; its pending link goes with it', async () => {
    const account = await smtpAccount()
    const { email, link } = await signedUp(account)
    const contact = await contactByEmail(account, email)
    const deleted = await account.request({ method: 'DELETE', url: `/v1/contacts/${contact?.id}` })
    assert.equal(deleted.statusCode, 200, deleted.body)
    const confirm = await harness.app.inject({ method: 'POST', url: pathOf(link) })
    assert.equal(confirm.statusCode, 404)
  })

  test('unknown account: a 404 page', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id']) {
      const response = await harness.app.inject({ method: 'GET', url: `/public/signup/${id}` })
      assert.equal(response.statusCode, 404)
      assert.match(String(response.headers['content-type']), /text\/html/)
    }
  })

  test(`form posts are rate limited (${PUBLIC_POSTS_PER_MINUTE} per minute and address)`, async () => {
    const account = await smtpAccount()
    const statuses: number[] = []
    for (let i = 0; i <= PUBLIC_POSTS_PER_MINUTE; i++) {
      statuses.push((await postForm(account.accountId, { name: 'x', consent: '' })).statusCode)
    }
    assert.deepEqual(statuses.slice(0, PUBLIC_POSTS_PER_MINUTE), Array(PUBLIC_POSTS_PER_MINUTE).fill(400))
    assert.equal(statuses.at(-1), 429)
  })
})

describe('marketing e-mail and one-click unsubscribe (RFC 8058)', () => {
  async function confirmedEmailContact(account: TestAccount) {
    const { email, link } = await signedUp(account)
    await harness.app.inject({ method: 'POST', url: pathOf(link) })
    const contact = await contactByEmail(account, email)
    assert.equal(contact?.optin_email, 'confirmed')
    return { email, contactId: contact.id }
  }

  test('a marketing mail carries the unsubscribe link and headers; a one-click POST opts out with evidence', async () => {
    const account = await smtpAccount()
    const { email, contactId } = await confirmedEmailContact(account)
    const result = await harness.services.consent.sendMarketingEmail(account.accountId, contactId, {
      subject: 'Frühlingsangebote',
      text: 'Alle Tulpen 20 % günstiger.',
      html: '<html><body><p>Alle Tulpen 20 % günstiger.</p></body></html>',
    })
    assert.equal(result.ok, true)
    const mail = await mailTo(email)
    assert.equal(mail.subject, 'Frühlingsangebote')
    const headerLine = (name: string) => mail.headerLines.find((l) => l.key === name)?.line ?? ''
    assert.equal(headerLine('list-unsubscribe-post'), 'List-Unsubscribe-Post: List-Unsubscribe=One-Click')
    const header = headerLine('list-unsubscribe').replace(/\r?\n\s+/g, '')
    const url = header.match(/^List-Unsubscribe:\s*<(http:\/\/herold\.test\/public\/unsubscribe\/[^>]+)>$/)?.[1]
    assert.ok(url, header)
    assert.ok(mail.text?.includes(url), 'the text carries the same link')
    assert.ok(String(mail.html).includes('/public/unsubscribe/'), 'the HTML carries the link')

    await assertFormOnly(url, account, email, 'confirmed', 'opening the page changes nothing')

    const oneClick = await harness.app.inject({
      method: 'POST',
      url: pathOf(url),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'MailProvider/1.0' },
      payload: 'List-Unsubscribe=One-Click',
    })
    assert.equal(oneClick.statusCode, 200)
    assert.equal((await contactByEmail(account, email))?.optin_email, 'opted_out')
    const record = (await consentHistory(harness.database.orm, account.accountId, contactId)).at(-1)
    assert.equal(record?.toState, 'opted_out')
    assert.equal(record?.source, 'unsubscribe_link')
    assert.equal(record?.evidence.one_click, true)
    assert.equal(record?.evidence.user_agent, 'MailProvider/1.0')

    await assert.rejects(
      harness.services.consent.sendMarketingEmail(account.accountId, contactId, { subject: 's', text: 't' }),
      { status: 409, code: 'contact_opted_out' },
    )
  })

  test('marketing mail only to a confirmed e-mail opt-in', async () => {
    const account = await smtpAccount()
    const created = await account.request({ method: 'POST', url: '/v1/contacts', payload: { email: nextEmail() } })
    const contactId = json<{ contact: { id: string } }>(created).contact.id
    await assert.rejects(
      harness.services.consent.sendMarketingEmail(account.accountId, contactId, { subject: 's', text: 't' }),
      { status: 409, code: 'contact_not_optin' },
    )
  })

  test('a forged or altered unsubscribe token is refused', async () => {
    const account = await smtpAccount()
    const { contactId } = await confirmedEmailContact(account)
    const url = harness.services.consent.unsubscribeUrl(account.accountId, contactId)
    const token = pathOf(url).split('/').at(-1) ?? ''
    const altered = `${token.slice(0, -2)}${token.endsWith('A') ? 'BB' : 'AA'}`
    for (const bad of [altered, 'v1.AAAA.BBBB.CCCC', 'x'.repeat(40)]) {
      const response = await harness.app.inject({ method: 'POST', url: `/public/unsubscribe/${bad}`, payload: '' })
      assert.equal(response.statusCode, 404)
    }
    const contact = json<{ contact: { optin_email: string } }>(
      await account.request({ method: 'GET', url: `/v1/contacts/${contactId}` }),
    ).contact
    assert.equal(contact.optin_email, 'confirmed')
  })
})
