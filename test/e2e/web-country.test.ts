import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { type ConsoleRig, startConsole } from '../helpers/console.ts'
import { type SignedIn, signIn } from '../helpers/fixtures.ts'
import type { TestAccount } from '../helpers/harness.ts'
import { pageChecks } from '../helpers/pages.ts'

// The account's country in the web app (issue 47), in a real headless Chromium, for an account in Europe/Berlin:
// the settings page shows the country derived from the time zone and changes it; the contacts page's import preview
// shows the country national numbers are read in and each number as it will be stored; the new-contact form reads a
// national number in the account's country and refuses one that cannot be valid there, naming the country.

const checks = pageChecks('web-country')
const OWNER = { name: 'Greta Land', email: 'greta.country@example.org', password: 'country password 1' }
const COUNTRY_LABEL = 'Country of phone numbers (ISO code such as DE; empty: the time zone’s)'
const PHONE_LABEL = 'Phone (national, such as 0151 12345678, or international)'

let rig: ConsoleRig
let account: TestAccount
let page: Page
/** the owner's /app session, for reading what the pages stored */
let session: SignedIn

before(async () => {
  rig = await startConsole()
  ;({ account } = await rig.account({ name: 'Blumen Berlin', owner: OWNER }))
  await rig.harness.database.query('UPDATE accounts SET timezone = $1, country = NULL WHERE id = $2', [
    'Europe/Berlin',
    account.accountId,
  ])
  session = await signIn(rig.harness, { email: OWNER.email, password: OWNER.password })
  page = await rig.signedInPage(OWNER)
  await page.getByRole('heading', { name: 'Overview' }).waitFor()
})

after(() => rig?.close())

/** GET /app/account as the owner: the country and whether it is set. */
async function storedCountry(): Promise<[string | null, boolean]> {
  const got = await rig.harness.app.inject({ method: 'GET', url: '/app/account', headers: session.headers })
  assert.equal(got.statusCode, 200, got.body)
  const { country, country_set } = got.json().account
  return [country, country_set]
}

/** The contacts whose name, address or number matches `q`, through the public API. */
async function contactsMatching(q: string): Promise<Array<{ name: string; email: string | null; phone: string }>> {
  const listed = await account.request({ method: 'GET', url: `/v1/contacts?q=${encodeURIComponent(q)}` })
  assert.equal(listed.statusCode, 200, listed.body)
  return listed.json().contacts
}

describe('the account’s country in the web app', () => {
  test('settings show the time zone’s country DE, change it to AT and back to automatic', async () => {
    assert.deepEqual(await storedCountry(), ['DE', false])
    await page.goto(`${rig.base}/settings`)
    const section = page.getByRole('region', { name: 'Country' })
    await section.getByText('are read as numbers of DE.').waitFor()
    const field = section.getByLabel(COUNTRY_LABEL)
    assert.equal(await field.inputValue(), '', 'not set: the field is empty, the country follows the time zone')
    await checks.accessibleShot(page, 'settings-country-derived')

    await field.fill('AT')
    await section.getByRole('button', { name: 'Save' }).click()
    await section.getByText('are read as numbers of AT.').waitFor()
    assert.equal(await section.getByLabel(COUNTRY_LABEL).inputValue(), 'AT')
    assert.deepEqual(await storedCountry(), ['AT', true])
    await checks.accessibleShot(page, 'settings-country-set')

    // a reload reads the stored country
    await page.reload()
    await section.getByText('are read as numbers of AT.').waitFor()
    assert.equal(await section.getByLabel(COUNTRY_LABEL).inputValue(), 'AT')

    await section.getByLabel(COUNTRY_LABEL).fill('')
    await section.getByRole('button', { name: 'Save' }).click()
    await section.getByText('are read as numbers of DE.').waitFor()
    assert.equal(await section.getByLabel(COUNTRY_LABEL).inputValue(), '')
    assert.deepEqual(await storedCountry(), ['DE', false], 'automatic again: the time zone’s country')
  })

  test('the import preview shows the country DE and the number as stored; the import stores it in E.164', async () => {
    await page.getByRole('link', { name: 'Contacts' }).first().click()
    await page.getByRole('heading', { name: 'Contacts', exact: true }).waitFor()
    // the import's help says national numbers are taken (it asked for the international format only before)
    await page.getByText('phone national in the account’s country, such as 0151 12345678, or international').waitFor()
    const csv = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('Name;E-Mail;Telefon\r\nJürgen Import;juergen.import@example.de;0151 12345678\r\n', 'utf8'),
    ])
    await page.locator('input[type=file]').setInputFiles({ name: 'kunden.csv', mimeType: 'text/csv', buffer: csv })
    const preview = page.getByTestId('import-preview')
    await preview.waitFor()
    assert.match((await preview.getByTestId('import-country').textContent()) ?? '', /numbers of DE\./)
    assert.equal(await preview.getByLabel('fills: Telefon').inputValue(), 'phone')
    assert.equal(await preview.getByLabel('fills: E-Mail').inputValue(), 'email')
    await preview
      .getByRole('row', { name: /Telefon/ })
      .getByText('0151 12345678 → +4915112345678')
      .waitFor()
    await checks.accessibleShot(page, 'import-preview-country')

    await page.getByRole('button', { name: 'Import', exact: true }).click()
    await page.getByTestId('import-report').waitFor()
    const found = await contactsMatching('juergen.import')
    assert.deepEqual(
      found.map((c) => [c.name, c.email, c.phone]),
      [['Jürgen Import', 'juergen.import@example.de', '+4915112345678']],
    )
  })

  test('the new-contact form stores a national number in E.164 and refuses an invalid one, naming the country', async () => {
    await page.goto(`${rig.base}/contacts`)
    await page.getByRole('heading', { name: 'Contacts', exact: true }).waitFor()
    await page.getByText('Add a contact', { exact: true }).click()
    const form = page.locator('form', { has: page.getByLabel(PHONE_LABEL) })
    await form.getByLabel('Name', { exact: true }).fill('Nina National')
    await form.getByLabel(PHONE_LABEL).fill('0151 23456789')
    await form.getByRole('button', { name: 'Add', exact: true }).click()
    await form.getByRole('status').getByText('Added. Number stored: +4915123456789').waitFor()
    const stored = await contactsMatching('Nina National')
    assert.deepEqual(
      stored.map((c) => [c.name, c.phone]),
      [['Nina National', '+4915123456789']],
    )
    await page.getByRole('link', { name: 'Nina National' }).waitFor()
    await checks.accessibleShot(page, 'contact-form-national')

    const before = (await account.request({ method: 'GET', url: '/v1/contacts?limit=100' })).json().contacts.length
    await form.getByLabel('Name', { exact: true }).fill('Ida Invalid')
    await form.getByLabel(PHONE_LABEL).fill('0000 1234')
    await form.getByRole('button', { name: 'Add', exact: true }).click()
    const alert = form.getByRole('alert')
    await alert.waitFor()
    assert.match(
      (await alert.textContent()) ?? '',
      /valid number of DE\b/,
      'the error names the country the number was read in',
    )
    await checks.accessibleShot(page, 'contact-form-invalid')
    assert.deepEqual(await contactsMatching('Ida Invalid'), [])
    const after = (await account.request({ method: 'GET', url: '/v1/contacts?limit=100' })).json().contacts.length
    assert.equal(after, before, 'nothing stored')
  })
})
