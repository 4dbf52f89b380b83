import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Page } from 'playwright-core'
import { type ConsoleRig, startConsole } from '../helpers/console.ts'

// The phone's bottom navigation in a real headless Chromium: every label stays whole, on one line, at the phone
// widths the console supports (320, 360 and 390 px), in both languages and with an unread count beside "Posteingang".
// A word broken inside ("Posteingan / g") shows as a label whose text spans two lines.

const OWNER = { name: 'Bea Bäckerin', email: 'bea.nav@example.org', password: 'phone password 56' }
const WIDTHS = [320, 360, 390]

let rig: ConsoleRig
let ownerId: string
before(async () => {
  rig = await startConsole()
  const made = await rig.account({ name: 'Bäckerei Brezel', owner: OWNER, sandbox: true, language: 'de' })
  ownerId = made.ownerId
  // an unread conversation: the count stands beside the inbox's label
  const inbound = await made.account.request({
    method: 'POST',
    url: '/v1/sandbox/inbound',
    payload: { from: '+4915123456789', text: 'Habt ihr morgen Brezeln?' },
  })
  assert.ok(inbound.statusCode < 300, inbound.body)
})
after(() => rig?.close())

interface Label {
  text: string
  lines: number
  overflows: boolean
  wraps: string
}

/**
 * Each bar label's text (its own text nodes, without the unread count's badge), the lines its text runs over (the
 * distinct tops of its text's boxes), and whether it is wider than its place. Run in the page (the DOM is the page's).
 */
const MEASURE = `[...document.querySelectorAll('.bottombar > a, .bottombar > button')].map((element) => {
  const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT)
  const tops = new Set()
  let text = ''
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest('.badge') || !node.textContent.trim()) continue
    text += node.textContent
    const range = document.createRange()
    range.selectNodeContents(node)
    for (const rect of range.getClientRects()) if (rect.width > 0) tops.add(Math.round(rect.top))
  }
  const style = getComputedStyle(element)
  return {
    text: text.trim(),
    lines: tops.size,
    overflows: element.scrollWidth > element.clientWidth,
    wraps: style.overflowWrap + ' ' + style.wordBreak,
  }
})`

const labels = (page: Page) => page.evaluate(MEASURE) as Promise<Label[]>

for (const language of ['de', 'en'] as const) {
  test(`${language}: every label of the phone's bottom bar is whole, on one line, at ${WIDTHS.join(', ')} px`, async () => {
    await rig.harness.database.query('UPDATE users SET language = $1 WHERE id = $2', [language, ownerId])
    const page = await rig.signedInPage(OWNER, { viewport: { width: 390, height: 844 } })
    try {
      for (const width of WIDTHS) {
        await page.setViewportSize({ width, height: 800 })
        await page.locator('.bottombar').waitFor()
        const found = await labels(page)
        assert.equal(found.length, 4, JSON.stringify(found))
        if (language === 'de') assert.ok(found.some((label) => label.text === 'Posteingang'))
        assert.equal(await page.locator('.bottombar .badge').textContent(), '1')
        for (const label of found) {
          assert.ok(label.text.length > 0)
          assert.equal(label.lines, 1, `${width} px: "${label.text}" runs over ${label.lines} lines (${label.wraps})`)
          assert.equal(label.overflows, false, `${width} px: "${label.text}" is wider than its place`)
        }
      }
    } finally {
      await page.context().close()
    }
  })
}
