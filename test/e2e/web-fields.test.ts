import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { type ConsoleRig, startConsole } from '../helpers/console.ts'
import { defineFields, setFieldValues } from '../helpers/fields.ts'
import { nextPhone, setOptin } from '../helpers/fixtures.ts'
import type { TestAccount } from '../helpers/harness.ts'
import { pageChecks } from '../helpers/pages.ts'

// Custom fields in the web app's audiences (issue 33), in a real headless Chromium: the contact list filters by a
// field condition built in rows, and the newsletter segment editor's field conditions move the estimate.

const checks = pageChecks('web-fields')
const OWNER = { name: 'Frida Fields', email: 'frida.fields@example.org', password: 'fields password 1' }

let rig: ConsoleRig
let account: TestAccount
let page: Page

before(async () => {
  rig = await startConsole()
  const { harness } = rig
  ;({ account } = await rig.account({ name: 'Blumen Fields', owner: OWNER, sandbox: true }))
  await defineFields(harness.database.orm, account.accountId)
  for (const [name, fields] of [
    ['Gerda Gold', { level: 'gold', visits: 12 }],
    ['Silke Silber', { level: 'silver', visits: 3 }],
    ['Bruno Bronze', { level: 'bronze', visits: 30 }],
    ['Olaf Ohne', {}],
  ] as const) {
    const created = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name, phone: nextPhone() },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = created.json().contact.id
    await setFieldValues(harness.database.orm, account.accountId, id, fields)
    await setOptin(harness, account.accountId, id)
  }
  page = await rig.signedInPage(OWNER)
  await page.getByRole('heading', { name: 'Overview' }).waitFor()
})

after(() => rig?.close())

/** A newsletter made through the API, opened on its page; its id. */
async function openNewNewsletter(subject: string, content: string): Promise<string> {
  const created = await account.request({ method: 'POST', url: '/v1/newsletters', payload: { subject, content } })
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().newsletter.id as string
  await page.goto(`${rig.base}/newsletters/${id}`)
  await page.getByRole('heading', { name: subject }).waitFor()
  return id
}

describe('custom fields in the web app’s audiences', () => {
  test('the contact list filters by a condition on a custom field', async () => {
    await page.getByRole('link', { name: 'Contacts' }).first().click()
    await page.getByRole('heading', { name: 'Contacts', exact: true }).waitFor()
    await page.getByRole('link', { name: 'Olaf Ohne' }).waitFor()
    await page.getByRole('button', { name: 'Add condition' }).click()
    await page.getByLabel('Field', { exact: true }).selectOption({ label: 'visits' })
    await page.getByLabel('Condition', { exact: true }).selectOption({ label: 'greater than' })
    await page.getByLabel('Value', { exact: true }).fill('10')
    await page.getByRole('link', { name: 'Olaf Ohne' }).waitFor({ state: 'detached' })
    await page.getByRole('link', { name: 'Gerda Gold' }).waitFor()
    await page.getByRole('link', { name: 'Bruno Bronze' }).waitFor()
    assert.equal(await page.getByRole('link', { name: 'Silke Silber' }).count(), 0)
    await checks.accessibleShot(page, 'contacts-filtered-by-field')
    await page.getByRole('button', { name: 'Remove condition' }).click()
    await page.getByRole('link', { name: 'Olaf Ohne' }).waitFor()
  })

  test('the newsletter segment editor’s field conditions move the estimate and are saved', async () => {
    const id = await openNewNewsletter('Gold offers', 'Hello {{name}}, something for you.')
    await page.getByText('Recipients now: 4').waitFor()
    await page.getByRole('button', { name: 'Add condition' }).click()
    await page.getByLabel('Field', { exact: true }).selectOption({ label: 'level' })
    await page.getByLabel('Condition', { exact: true }).selectOption({ label: 'equals' })
    await page.getByLabel('Value', { exact: true }).selectOption({ label: 'gold' })
    await page.getByText('Recipients now: 1').waitFor()
    await checks.accessibleShot(page, 'newsletter-segment-by-field')
    const saved = (await account.request({ method: 'GET', url: `/v1/newsletters/${id}` })).json()
    assert.deepEqual(saved.newsletter.segment, { fields: [{ field: 'level', op: 'equals', value: 'gold' }] })
  })

  test('the newsletter preview fills the account’s custom fields: the chosen contact’s value, else the label', async () => {
    await openNewNewsletter('Your level', 'Hello {{name}}, you are {{level}} after {{visits}} visits.')
    const preview = page.getByTestId('preview')
    // no contact chosen: each field's label stands in (these fields have no default)
    await preview.getByText('you are [level] after [visits] visits.').waitFor()
    await page.getByLabel('Preview for contact').selectOption({ label: 'Gerda Gold' })
    await preview.getByText('Hello Gerda, you are gold after 12 visits.').waitFor()
    await page.getByLabel('Preview for contact').selectOption({ label: 'Olaf Ohne' })
    await preview.getByText('Hello Olaf, you are [level] after [visits] visits.').waitFor()
    await checks.accessibleShot(page, 'newsletter-preview-fields')
  })

  test('the settings page defines a field; the import page shows the columns, the member changes one, the import follows', async () => {
    await page.goto(`${rig.base}/settings`)
    await page.getByRole('heading', { name: 'Custom fields' }).waitFor()
    await page.getByRole('cell', { name: '{{level}}' }).waitFor()
    await page.getByLabel('Label', { exact: true }).fill('Branch')
    await page.getByLabel('Key', { exact: true }).fill('branch')
    await page.getByLabel('Type', { exact: true }).selectOption({ label: 'Choice' })
    await page.getByLabel('Choices (separated by commas)').fill('Köln, Bonn')
    await page.getByRole('button', { name: 'Create field' }).click()
    await page.getByRole('cell', { name: '{{branch}}' }).waitFor()
    await checks.accessibleShot(page, 'settings-custom-fields')

    await page.getByRole('link', { name: 'Contacts' }).first().click()
    await page.getByRole('heading', { name: 'Contacts', exact: true }).waitFor()
    const csv = Buffer.from(
      'Name;E-Mail;Filiale;Intern\r\nJörg Import;ida.import@example.org;Bonn;geheim\r\n',
      'latin1',
    )
    await page.locator('input[type=file]').setInputFiles({ name: 'kunden.csv', mimeType: 'text/csv', buffer: csv })
    const preview = page.getByTestId('import-preview')
    await preview.getByText('windows-1252').waitFor()
    const target = (header: string) => preview.getByLabel(`fills: ${header}`)
    assert.equal(await target('E-Mail').inputValue(), 'email')
    assert.equal(await target('Filiale').inputValue(), '-', 'Filiale is no key or label yet: left out')
    await target('Filiale').selectOption({ label: 'Branch' })
    // the preview asked again with the member's choice
    for (let tries = 0; (await target('Filiale').inputValue()) !== 'branch'; tries++) {
      assert.ok(tries < 100, 'the preview shows the changed mapping')
      await page.waitForTimeout(100)
    }
    assert.equal(await target('Intern').inputValue(), '-')
    await checks.accessibleShot(page, 'import-preview')
    await page.getByRole('button', { name: 'Import' }).click()
    await page.getByTestId('import-report').waitFor()
    const listed = (
      await account.request({ method: 'GET', url: `/v1/contacts?q=${encodeURIComponent('ida.import')}` })
    ).json()
    assert.deepEqual(
      listed.contacts.map((c: { name: string; fields: unknown }) => [c.name, c.fields]),
      [['Jörg Import', { branch: 'Bonn' }]],
    )
  })
})
