import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { CONSOLE_PAGES, type ConsoleRig, startConsole } from '../helpers/console.ts'
import type { TestAccount } from '../helpers/harness.ts'

// Every page of the console opened by the owner of a fresh account: no request the page makes by itself is refused
// (a page that asks for something the server refuses shows an error nobody caused) and the browser logs no error.

const OWNER = { name: 'Lena Leer', email: 'lena.pages@example.org', password: 'pages password 12' }

let rig: ConsoleRig
let account: TestAccount
let page: Page
/** every refused response and every browser error since the last look */
let problems: string[] = []

before(async () => {
  rig = await startConsole()
  ;({ account } = await rig.account({ name: 'Frisch GmbH', owner: OWNER, language: 'de' }))
  page = await rig.signedInPage(OWNER, { locale: 'de-DE' })
  page.on('response', (response) => {
    if (response.status() >= 400) {
      problems.push(`${response.status()} ${response.request().method()} ${new URL(response.url()).pathname}`)
    }
  })
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`)
  })
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
})

after(() => rig?.close())

/** Opens a page as a member would (typed address) and waits until it has asked for everything it asks for. */
async function open(path: string): Promise<string[]> {
  problems = []
  await page.goto(`${rig.base}${path}`)
  await page.locator('main, h1').first().waitFor()
  await page.waitForLoadState('networkidle')
  // a debounced check starts a moment after the first render: let it run and finish
  await page.waitForTimeout(1500)
  await page.waitForLoadState('networkidle')
  return problems
}

describe('every console page loads without a refused request or a browser error', () => {
  test('the pages of a fresh account with nothing in it', async () => {
    const found: Record<string, string[]> = {}
    for (const path of CONSOLE_PAGES) {
      const seen = await open(path)
      if (seen.length > 0) found[path] = seen
    }
    assert.deepEqual(found, {})
  })

  test('the pages of each kind of thing, once there is one of each', async () => {
    await rig.harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    const api = async (method: 'POST', url: string, payload: unknown) => {
      const answer = await account.request({ method, url, payload: payload as Record<string, unknown> })
      assert.ok(answer.statusCode < 300, `${url}: ${answer.body}`)
      return answer.json()
    }
    const contact = await api('POST', '/v1/contacts', { name: 'Karl Kunde', phone: '+4917612345678' })
    const template = await api('POST', '/v1/templates', {
      name: 'Gruss',
      content: 'Hallo {{name}}, schön dass du da bist.',
    })
    const newsletter = await api('POST', '/v1/newsletters', {
      subject: 'Sommer',
      content: 'Hallo {{name}}, es ist Sommer.',
    })
    const automation = await api('POST', '/v1/automations', {
      name: 'Markieren',
      trigger: { type: 'manual' },
      steps: [{ type: 'add_tag', tag: 'markiert' }],
    })
    const followup = await rig.harness.services.followups.create(
      { accountId: account.accountId, account: { language: 'de' } },
      {
        name: 'Nachfassen',
        steps: [{ text: 'Hallo {{name}}, wie gefällt es dir?', delay: { amount: 1, unit: 'days' } }],
      },
    )
    const paths = [
      ...CONSOLE_PAGES,
      `/contacts/${contact.contact.id}`,
      `/templates/${template.template.id}`,
      `/newsletters/${newsletter.newsletter.id}`,
      `/automations/${automation.id}`,
      `/followups/${followup.id}`,
    ]
    const found: Record<string, string[]> = {}
    for (const path of paths) {
      const seen = await open(path)
      if (seen.length > 0) found[path] = seen
    }
    assert.deepEqual(found, {})
  })
})
