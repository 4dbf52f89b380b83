import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { type ConsoleRig, startConsole } from '../helpers/console.ts'
import type { TestAccount } from '../helpers/harness.ts'
import { pageChecks } from '../helpers/pages.ts'

// The frequency cap and quiet hours on the web app's settings page (issue 50), in a real headless Chromium: the
// account's settings as stored, changed through the form and read back by the API.

const checks = pageChecks('web-sending-protection')
const OWNER = { name: 'Greta Schutz', email: 'greta.protection@example.org', password: 'protection password 1' }

let rig: ConsoleRig
let account: TestAccount
let page: Page

before(async () => {
  rig = await startConsole()
  ;({ account } = await rig.account({ name: 'Blumen Schutz', owner: OWNER }))
  page = await rig.signedInPage(OWNER)
  await page.getByRole('heading', { name: 'Overview' }).waitFor()
})

after(() => rig?.close())

async function stored() {
  const got = await account.request({ method: 'GET', url: '/v1/settings/sending' })
  assert.equal(got.statusCode, 200, got.body)
  return got.json()
}

describe('sending protection on the settings page', () => {
  test('switch the cap on at 2 in 24 hours and quiet hours 21:00–09:00; the API reads the change', async () => {
    await page.goto(`${rig.base}/settings`)
    const section = page.getByRole('region', { name: 'Sending protection' })
    const cap = section.getByLabel('Limit marketing messages per contact')
    await cap.waitFor()
    assert.equal(await cap.isChecked(), false, 'an existing account: the cap is off')
    await checks.accessibleShot(page, 'settings-sending-protection')

    await cap.check()
    await section.getByLabel('At most this many messages').fill('2')
    await section.getByLabel('in this many hours').fill('24')
    await section.getByLabel('Quiet hours (in the contact’s time zone)').check()
    await section.getByLabel('Quiet from (HH:MM)').fill('21:00')
    await section.getByLabel('Quiet until (HH:MM)').fill('09:00')
    await section.getByRole('button', { name: 'Save' }).click()
    await section.getByText('Saved.').waitFor()
    assert.deepEqual(await stored(), {
      frequency_cap: { enabled: true, max_messages: 2, window_hours: 24 },
      quiet_hours: { enabled: true, from: '21:00', to: '09:00' },
    })

    await page.reload()
    await section.getByLabel('Limit marketing messages per contact').waitFor()
    assert.equal(await section.getByLabel('Limit marketing messages per contact').isChecked(), true)
    assert.equal(await section.getByLabel('Quiet from (HH:MM)').inputValue(), '21:00')
  })

  test('quiet hours that begin when they end: the page says why nothing was saved', async () => {
    const section = page.getByRole('region', { name: 'Sending protection' })
    await section.getByLabel('Quiet until (HH:MM)').fill('21:00')
    await section.getByRole('button', { name: 'Save' }).click()
    await section.getByText('The quiet hours must begin and end at different times.').waitFor()
    assert.equal((await stored()).quiet_hours.to, '09:00')
  })
})
