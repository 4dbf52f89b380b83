import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Page } from 'playwright-core'
import { type ConsoleRig, startConsole } from '../helpers/console.ts'
import type { TestAccount } from '../helpers/harness.ts'
import { pageChecks } from '../helpers/pages.ts'

// The inbox routing in the console (issue 48) on a phone (390 × 844), in German and English: the settings of
// automatic assignment, opening hours, days off and the away message; the member's availability switch in the menu;
// the away banner in the inbox while the business is closed. No sideways scrolling, axe-core serious/critical 0.
// Screenshots go to test-results/web-routing/.

const checks = pageChecks('web-routing')
const PHONE = { width: 390, height: 844 }
const OWNER = { name: 'Rita Route', email: 'rita.route@example.org', password: 'route password 12' }

let rig: ConsoleRig
let shop: TestAccount
let ownerId: string

before(async () => {
  rig = await startConsole()
  ;({ account: shop, ownerId } = await rig.account({ name: 'Laden Route', owner: OWNER, sandbox: true }))
})

after(() => rig?.close())

async function noSidewaysScroll(page: Page, name: string) {
  const wide = Number(await page.evaluate('document.documentElement.scrollWidth'))
  assert.ok(wide <= PHONE.width, `${name}: ${wide} px wide`)
}

for (const language of ['en', 'de'] as const) {
  test(`${language}: settings, availability and the away banner at 390 × 844`, async () => {
    await rig.harness.database.query('UPDATE users SET language = $1 WHERE id = $2', [language, ownerId])
    const page = await rig.signedInPage(OWNER, {
      viewport: PHONE,
      locale: language === 'de' ? 'de-DE' : 'en-US',
    })
    const t =
      language === 'de'
        ? {
            hours: 'Öffnungszeiten verwenden (sonst gilt das Geschäft immer als geöffnet)',
            away: 'Außerhalb der Öffnungszeiten automatisch antworten',
            text: 'Text der Abwesenheitsnachricht',
            mode: 'Zuweisung',
            assignmentSection: 'Automatische Zuweisung',
            hoursSection: 'Öffnungszeiten',
            save: 'Speichern',
            saved: 'Gespeichert.',
            menu: 'Menü',
            toggle: /Ich nehme Unterhaltungen an/,
            banner: /Außerhalb der Öffnungszeiten/,
          }
        : {
            hours: 'Use opening hours (otherwise the business counts as always open)',
            away: 'Reply automatically outside opening hours',
            text: 'Text of the away message',
            mode: 'Assignment',
            assignmentSection: 'Automatic assignment',
            hoursSection: 'Opening hours',
            save: 'Save',
            saved: 'Saved.',
            menu: 'Menu',
            toggle: /I take conversations/,
            banner: /Outside opening hours/,
          }
    await page.goto(`${rig.base}/settings`)
    // the settings page has a form and a Save button per section: each step works inside its own section
    const assignment = page.getByRole('region', { name: t.assignmentSection, exact: true })
    await assignment.getByLabel(t.mode, { exact: true }).selectOption('round_robin')
    await assignment.getByRole('button', { name: t.save }).click()
    await assignment.getByRole('status').filter({ hasText: t.saved }).waitFor()
    // opening hours on, no day with ranges: closed now
    const hours = page.getByRole('region', { name: t.hoursSection, exact: true })
    await hours.getByLabel(t.hours).check()
    await hours.getByLabel(t.away).check()
    await hours.getByLabel(t.text).fill(language === 'de' ? 'Wir sind gleich wieder da.' : 'We will be right back.')
    await hours.getByRole('button', { name: t.save }).click()
    await hours.getByRole('status').filter({ hasText: t.saved }).waitFor()
    const stored = (await page.evaluate(async () => (await fetch('/app/inbox/routing')).json())) as {
      assignment: { mode: string }
      hours: { enabled: boolean }
    }
    assert.equal(stored.assignment.mode, 'round_robin', JSON.stringify(stored))
    assert.equal(stored.hours.enabled, true, JSON.stringify(stored))
    await noSidewaysScroll(page, 'settings')
    await checks.accessibleShot(page, `settings-${language}`)

    // the member's own switch, in the phone's menu
    await page.goto(`${rig.base}/inbox`)
    await page.locator('.signed-in main h1').first().waitFor()
    const state = (await page.evaluate(async () => (await fetch('/app/inbox/opening-state')).json())) as Record<
      string,
      unknown
    >
    await checks.shot(page, `inbox-${language}`)
    assert.equal(state.open_now, false, JSON.stringify(state))
    await page.getByTestId('away-banner').getByText(t.banner).waitFor()
    await noSidewaysScroll(page, 'inbox')
    await checks.accessibleShot(page, `inbox-closed-${language}`)
    await page.getByRole('button', { name: t.menu }).first().click()
    const toggle = page.locator('dialog.drawer').getByLabel(t.toggle)
    const before = await toggle.isChecked()
    await toggle.click()
    for (let i = 0; i < 50 && (await toggle.isChecked()) === before; i++) await page.waitForTimeout(100)
    assert.equal(await toggle.isChecked(), !before)
    await checks.shot(page, `menu-availability-${language}`)
    const answer = await shop.request({ method: 'GET', url: '/v1/contacts?limit=1' })
    assert.equal(answer.statusCode, 200)
    await page.context().close()
  })
}
