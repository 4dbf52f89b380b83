import { createMember } from './src/modules/people/index.ts'
import { launchBrowser } from './test/helpers/browser.ts'
import { sandboxAccount, servedHarness } from './test/helpers/fixtures.ts'
import { signInThroughPage } from './test/helpers/pages.ts'
const { harness, base } = await servedHarness()
const shop = await sandboxAccount(harness, { messagesPerMonth: 1000 }, 'B')
const who = { name: 'Bea', email: 'bea.dbg@example.org', password: 'phone password 12' }
const u = await createMember(harness.database.orm, { accountId: shop.accountId, role: 'owner', ...who })
await harness.database.query(`UPDATE users SET language = 'en' WHERE id = $1`, [u.id])
await shop.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from: '+4915123456789', text: 'Hallo' } })
const browser = await launchBrowser()
const page = await (await browser.newContext({ viewport: { width: 390, height: 844 } })).newPage()
page.on('console', (m) => console.log('console', m.text()))
page.on('response', (r) => { if (r.status() >= 400) console.log(r.status(), r.url()) })
await signInThroughPage(page, base, who)
await page.waitForTimeout(2000)
await page.goto(`${base}/inbox`)
await page.waitForTimeout(3000)
await page.screenshot({ path: '/tmp/phone-inbox.png', fullPage: true })
await page.setViewportSize({ width: 1280, height: 900 })
await page.waitForTimeout(500)
await page.screenshot({ path: '/tmp/desk-inbox.png', fullPage: true })
console.log(await page.title())
await browser.close(); await harness.close()
