import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Page } from 'playwright-core'
import { sandboxOutboxOf } from '../../src/modules/channels/index.ts'
import { type ConsoleRig, startConsole } from '../helpers/console.ts'
import { png } from '../helpers/files.ts'
import { nextPhone, setOptin } from '../helpers/fixtures.ts'
import type { TestAccount } from '../helpers/harness.ts'
import { pageChecks } from '../helpers/pages.ts'

// Saved replies in the console (issue 48) on a phone (390 × 844), in German and English: one is saved in the
// settings; in the conversation's reply box typing / opens the picker, Enter inserts the reply with the contact's
// first name filled in, and Send sends it; a reply whose variable the contact has no value for is refused, named.
// No sideways scrolling, axe-core serious/critical 0. Screenshots go to test-results/web-saved-replies/.

const checks = pageChecks('web-saved-replies')
const PHONE = { width: 390, height: 844 }
const OWNER = { name: 'Sina Satz', email: 'sina.satz@example.org', password: 'saved replies 12' }

let rig: ConsoleRig
let shop: TestAccount
let ownerId: string

before(async () => {
  rig = await startConsole()
  ;({ account: shop, ownerId } = await rig.account({ name: 'Laden Satz', owner: OWNER, sandbox: true }))
})

after(() => rig?.close())

async function noSidewaysScroll(page: Page, name: string) {
  const wide = Number(await page.evaluate('document.documentElement.scrollWidth'))
  assert.ok(wide <= PHONE.width, `${name}: ${wide} px wide`)
}

/** A contact (without an e-mail address) who just wrote, chat opt-in confirmed; the id of their conversation. */
async function customerWrote(name: string): Promise<string> {
  const phone = nextPhone()
  const created = await shop.request({ method: 'POST', url: '/v1/contacts', payload: { name, phone } })
  assert.equal(created.statusCode, 201, created.body)
  const contactId = created.json().contact.id as string
  const inbound = await shop.request({
    method: 'POST',
    url: '/v1/sandbox/inbound',
    payload: { from: phone, text: 'Hallo?' },
  })
  assert.equal(inbound.statusCode, 200, inbound.body)
  await setOptin(rig.harness, shop.accountId, contactId)
  const rows = await rig.harness.database.query<{ id: string }>(
    'SELECT id FROM conversations WHERE account_id = $1 AND contact_id = $2',
    [shop.accountId, contactId],
  )
  return rows[0].id
}

for (const language of ['de', 'en'] as const) {
  test(`${language}: save a reply in the settings, insert it with / in the reply box, send it`, async () => {
    await rig.harness.database.query('UPDATE users SET language = $1 WHERE id = $2', [language, ownerId])
    const t =
      language === 'de'
        ? {
            section: 'Gespeicherte Antworten',
            code: 'Kurzbefehl',
            title: 'Titel',
            text: 'Text',
            create: 'Antwort speichern',
            reply: 'Antwort',
            send: 'Senden',
            customer: 'Erika Mustermann',
            saved: 'danke',
            body: 'Danke für Ihre Nachricht, {{name}}! Wir melden uns heute.',
            filled: 'Danke für Ihre Nachricht, Erika! Wir melden uns heute.',
            missing: /Dem Kontakt fehlt ein Wert für: email/,
          }
        : {
            section: 'Saved replies',
            code: 'Code',
            title: 'Title',
            text: 'Text',
            create: 'Save reply',
            reply: 'Reply',
            send: 'Send',
            customer: 'John Smith',
            saved: 'thanks',
            body: 'Thanks for your message, {{name}}! We will get back to you today.',
            filled: 'Thanks for your message, John! We will get back to you today.',
            missing: /The contact has no value for: email/,
          }
    const conversationId = await customerWrote(t.customer)
    const page = await rig.signedInPage(OWNER, { viewport: PHONE, locale: language === 'de' ? 'de-DE' : 'en-US' })

    // the settings: one reply with the first name, one with the e-mail address
    await page.goto(`${rig.base}/settings`)
    const section = page.getByRole('region', { name: t.section, exact: true })
    for (const [code, title, text] of [
      [`/${t.saved}`, t.saved, t.body],
      [`/${t.saved}-mail`, 'mail', 'E-Mail: {{email}}'],
    ]) {
      await section.getByLabel(t.code, { exact: true }).fill(code)
      await section.getByLabel(t.title, { exact: true }).fill(title)
      await section.getByLabel(t.text, { exact: true }).fill(text)
      await section.getByRole('button', { name: t.create }).click()
      await section.getByTestId('saved-replies').getByText(code, { exact: true }).waitFor()
    }
    await noSidewaysScroll(page, 'settings')
    await checks.accessibleShot(page, `settings-${language}`)

    // the reply box: / and part of the code opens the picker; Enter inserts the reply for this contact
    await page.goto(`${rig.base}/inbox/${conversationId}`)
    const box = page.getByLabel(t.reply, { exact: true })
    await box.click()
    await box.pressSequentially(`/${t.saved.slice(0, 3)}`)
    const options = page.getByTestId('saved-reply-options')
    await options.getByText(`/${t.saved}`, { exact: true }).waitFor()
    assert.equal(await options.locator('li').count(), 2, 'both replies match the first letters')
    await noSidewaysScroll(page, 'picker')
    await checks.accessibleShot(page, `picker-${language}`)
    await box.press('Enter')
    // the rendered text comes back from the server
    for (let i = 0; i < 100 && (await box.inputValue()) !== t.filled; i++) await page.waitForTimeout(100)
    assert.equal(await box.inputValue(), t.filled)
    assert.equal(await options.count(), 0, 'the picker closed with the text inserted')

    // the member may change it, then sends it as a free-text reply
    await box.press('End')
    await box.pressSequentially(' :)')
    await page.getByRole('button', { name: t.send, exact: true }).click()
    await page.locator('.thread li.outbound').getByText(`${t.filled} :)`).waitFor()
    const outbox = await sandboxOutboxOf(rig.harness.database.orm, shop.accountId, 'chat')
    assert.ok(
      outbox.some((m) => JSON.stringify(m).includes(`${t.filled} :)`)),
      `sent through the sandbox: ${JSON.stringify(outbox)}`,
    )

    // a reply whose variable the contact has no value for: named, nothing inserted
    await box.fill('')
    await box.pressSequentially(`/${t.saved}-m`)
    await options.getByText(`/${t.saved}-mail`, { exact: true }).click()
    await page.getByTestId('saved-reply-missing').getByText(t.missing).waitFor()
    assert.equal(await box.inputValue(), `/${t.saved}-m`)
    await noSidewaysScroll(page, 'missing')
    await checks.accessibleShot(page, `missing-${language}`)
    await page.context().close()
  })
}

test('de: a saved reply with a picture: the file is attached in the reply box and sent with the text as caption', async () => {
  await rig.harness.database.query('UPDATE users SET language = $1 WHERE id = $2', ['de', ownerId])
  const conversationId = await customerWrote('Maria Bild')
  const uploaded = await shop.request({
    method: 'POST',
    url: '/v1/media',
    payload: { data_base64: png(40, 30).toString('base64'), filename: 'lageplan.png', mime: 'image/png' },
  })
  assert.equal(uploaded.statusCode, 200, uploaded.body)
  const media = uploaded.json().media as { id: string; url: string }
  await rig.harness.database.query(
    `INSERT INTO saved_replies (account_id, id, code, title, text, media_id, created_at, updated_at)
     VALUES ($1, gen_random_uuid(), 'anfahrt', 'Anfahrt', 'So finden Sie uns, {{name}}.', $2, now(), now())`,
    [shop.accountId, media.id],
  )
  const page = await rig.signedInPage(OWNER, { viewport: PHONE, locale: 'de-DE' })
  await page.goto(`${rig.base}/inbox/${conversationId}`)
  const box = page.getByLabel('Antwort', { exact: true })
  await box.click()
  await box.pressSequentially('/anf')
  await page.getByTestId('saved-reply-options').getByText('/anfahrt', { exact: true }).waitFor()
  await box.press('Enter')
  const attached = page.getByTestId('saved-reply-file')
  await attached.getByText(/Wird mit der Datei lageplan\.png gesendet/).waitFor()
  assert.equal(await box.inputValue(), 'So finden Sie uns, Maria.')
  await noSidewaysScroll(page, 'attached')
  await checks.accessibleShot(page, 'attached-de')
  await page.getByRole('button', { name: 'Senden', exact: true }).click()
  const sent = page.locator('.thread li.outbound').filter({ hasText: 'So finden Sie uns, Maria.' })
  await sent.locator('img.message-image').waitFor()
  assert.equal(await sent.locator('img.message-image').getAttribute('src'), media.url)
  assert.equal(await attached.count(), 0, 'the file went with the reply')
  const outbox = await sandboxOutboxOf(rig.harness.database.orm, shop.accountId, 'chat')
  const picture = outbox.find((m) => (m.payload as { type?: string }).type === 'image')
  assert.ok(picture, `the picture went through the sandbox: ${JSON.stringify(outbox)}`)
  assert.equal((picture.payload as { caption?: string }).caption, 'So finden Sie uns, Maria.')
  assert.equal((picture.payload as { media?: { link?: string } }).media?.link, media.url)
  await noSidewaysScroll(page, 'sent with file')
  await checks.accessibleShot(page, 'sent-with-file-de')
  await page.context().close()
})
