import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Page } from 'playwright-core'
import { createMember } from '../../src/modules/people/index.ts'
import { type ConsoleRig, startConsole } from '../helpers/console.ts'
import type { TestAccount } from '../helpers/harness.ts'
import { pageChecks } from '../helpers/pages.ts'

// The inbox's views, search, snooze and assignee picker in the console (issue 48): on a desktop in English and on a
// phone (390 × 844) in German. No sideways scrolling on the phone, axe-core serious/critical 0. Screenshots go to
// test-results/web-inbox-views/.

const checks = pageChecks('web-inbox-views')
const PHONE = { width: 390, height: 844 }
const OWNER = { name: 'Vera Views', email: 'vera.views@example.org', password: 'views password 12' }
const COLLEAGUE = { name: 'Carl Colleague', email: 'carl.views@example.org', password: 'views password 12' }

let rig: ConsoleRig
let shop: TestAccount
let ownerId: string
let colleagueId: string

before(async () => {
  rig = await startConsole()
  ;({ account: shop, ownerId } = await rig.account({ name: 'Laden Ansichten', owner: OWNER, sandbox: true }))
  colleagueId = (
    await createMember(rig.harness.database.orm, { accountId: shop.accountId, role: 'member', ...COLLEAGUE })
  ).id
})

after(() => rig?.close())

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>

async function inbound(from: string, name: string, text: string): Promise<string> {
  const response = await shop.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from, name, text } })
  assert.equal(response.statusCode, 200, response.body)
  const list = await shop.request({ method: 'GET', url: '/v1/inbox/conversations?limit=100' })
  const found = (list.json().conversations as Json[]).find((c) => c.contact.name === name)
  assert.ok(found, `no conversation of ${name}`)
  return found.id
}

async function conversation(id: string): Promise<Json> {
  return (await shop.request({ method: 'GET', url: `/v1/inbox/conversations?limit=100` }))
    .json()
    .conversations.find((c: Json) => c.id === id)
}

/** Waits until the API shows what the page did. */
async function until(check: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 100; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  assert.fail(`never: ${what}`)
}

async function noSidewaysScroll(page: Page, name: string) {
  const wide = Number(await page.evaluate('document.documentElement.scrollWidth'))
  assert.ok(wide <= PHONE.width, `${name}: ${wide} px wide`)
}

const tab = (page: Page, view: string) => page.locator(`.view-tab[data-view="${view}"]`)

test('en, desktop: views with counts, search, the assignee picker and the snooze choices', async () => {
  const anna = await inbound('+4915111000001', 'Anna Alpha', 'Wo ist mein Paket?')
  const bert = await inbound('+4915111000002', 'Bert Beta', 'Rechnung bitte')
  const page = await rig.signedInPage(OWNER, { viewport: { width: 1280, height: 900 } })
  await page.goto(`${rig.base}/inbox`)
  await tab(page, 'all').filter({ hasText: 'All open' }).filter({ hasText: '2' }).waitFor()
  await tab(page, 'unassigned').filter({ hasText: '2' }).waitFor()
  await tab(page, 'mine').filter({ hasText: '0' }).waitFor()

  // search: the message text finds Bert only
  await page.getByLabel('Search').fill('rechnung')
  await page.locator('.conversations li').filter({ hasText: 'Bert Beta' }).waitFor()
  await until(async () => (await page.locator('.conversations li').count()) === 1, 'only Bert listed')
  await page.getByLabel('Search').fill('')
  await until(async () => (await page.locator('.conversations li').count()) === 2, 'both listed again')

  // the assignee picker: Anna to me; Mine counts 1, Unassigned 1
  await page.locator('.conversations a').filter({ hasText: 'Anna Alpha' }).click()
  const actions = page.getByTestId('conversation-actions')
  await actions.getByLabel('Assignee').selectOption(ownerId)
  await until(async () => (await conversation(anna)).assignee_id === ownerId, 'Anna assigned to the owner')
  await tab(page, 'mine').filter({ hasText: '1' }).waitFor()
  await tab(page, 'unassigned').filter({ hasText: '1' }).waitFor()
  // and on to the colleague, by name
  await actions.getByLabel('Assignee').selectOption({ label: COLLEAGUE.name })
  await until(async () => (await conversation(anna)).assignee_id === colleagueId, 'Anna assigned to the colleague')
  await tab(page, 'mine').filter({ hasText: '0' }).waitFor()

  // snooze until they reply: the status says so, the Snoozed view counts it
  await actions.getByText('Snooze', { exact: true }).click()
  await actions.getByRole('button', { name: 'Until they reply' }).click()
  await actions.getByTestId('conversation-status').filter({ hasText: 'Snoozed until the customer writes' }).waitFor()
  await tab(page, 'snoozed').filter({ hasText: '1' }).waitFor()
  await tab(page, 'all').filter({ hasText: '1' }).waitFor()
  const snoozed = await conversation(anna)
  assert.equal(snoozed.status, 'snoozed')
  assert.equal(snoozed.snooze_until_reply, true)
  await checks.accessibleShot(page, 'desktop-snoozed-en')

  // tomorrow 9:00 in the account's time zone (Europe/Berlin)
  await page.locator('.conversations a').filter({ hasText: 'Bert Beta' }).click()
  await actions.getByText('Snooze', { exact: true }).click()
  await actions.getByRole('button', { name: 'Tomorrow 9:00' }).click()
  await until(async () => (await conversation(bert)).status === 'snoozed', 'Bert snoozed')
  const at = new Date((await conversation(bert)).snoozed_until)
  const local = new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit' })
  assert.equal(local.format(at), '09:00')
  assert.ok(at.getTime() > Date.now() && at.getTime() < Date.now() + 48 * 3600_000, at.toISOString())
  await tab(page, 'snoozed').filter({ hasText: '2' }).waitFor()

  // the Snoozed view lists both; reopen Bert there
  await tab(page, 'snoozed').click()
  await until(async () => (await page.locator('.conversations li').count()) === 2, 'both snoozed listed')
  await actions.getByRole('button', { name: 'Reopen' }).click()
  await until(async () => (await conversation(bert)).status === 'open', 'Bert reopened')
  await tab(page, 'snoozed').filter({ hasText: '1' }).waitFor()
  await tab(page, 'all').click()
  await page.context().close()
})

test('de, phone 390 × 844: the views, a snooze choice and the assignee picker are usable', async () => {
  await rig.harness.database.query('UPDATE users SET language = $1 WHERE id = $2', ['de', ownerId])
  const cara = await inbound('+4915111000003', 'Cara Gamma', 'Hallo')
  const page = await rig.signedInPage(OWNER, { viewport: PHONE, locale: 'de-DE' })
  await page.goto(`${rig.base}/inbox`)
  await tab(page, 'all').filter({ hasText: 'Alle offenen' }).waitFor()
  await noSidewaysScroll(page, 'inbox list')
  await checks.accessibleShot(page, 'phone-list-de')
  await page.locator('.conversations a').filter({ hasText: 'Cara Gamma' }).click()
  const actions = page.getByTestId('conversation-actions')
  await actions.getByLabel('Zuständig').selectOption(ownerId)
  await until(async () => (await conversation(cara)).assignee_id === ownerId, 'Cara assigned')
  await actions.getByText('Zurückstellen', { exact: true }).click()
  await actions.getByRole('button', { name: 'In 1 Stunde' }).click()
  await actions.getByTestId('conversation-status').filter({ hasText: 'Zurückgestellt bis' }).waitFor()
  const snoozed = await conversation(cara)
  assert.equal(snoozed.status, 'snoozed')
  const ahead = new Date(snoozed.snoozed_until).getTime() - Date.now()
  assert.ok(ahead > 50 * 60_000 && ahead <= 60 * 60_000, String(ahead))
  await noSidewaysScroll(page, 'thread')
  await checks.accessibleShot(page, 'phone-thread-de')
  // back on the list: the Snoozed tab counts it
  await page.goto(`${rig.base}/inbox`)
  await tab(page, 'snoozed').filter({ hasText: 'Zurückgestellt' }).filter({ hasText: '2' }).waitFor()
  await noSidewaysScroll(page, 'inbox list after')
  await page.context().close()
})
