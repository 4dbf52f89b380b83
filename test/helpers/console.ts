import type { Browser, BrowserContextOptions, Page } from 'playwright-core'
import { createMember } from '../../src/modules/people/index.ts'
import { launchBrowser } from './browser.ts'
import { sandboxAccount, servedHarness } from './fixtures.ts'
import { createTestAccount, type Harness, type TestAccount } from './harness.ts'
import { signInThroughPage } from './pages.ts'

// What a test of the console in a real browser stands on: the in-process harness listening on loopback (so the test
// can move its clock and run due jobs while the browser watches), accounts with an owner who signs in, and a browser
// whose pages are signed in as a member types it. Tests against a server process (`npm start`) sign in with
// signInThroughPage themselves.

/** Every list page of the console, in the navigation's order: what a test opens to see each page once. */
export const CONSOLE_PAGES = [
  '/',
  '/inbox',
  '/contacts',
  '/newsletters',
  '/followups',
  '/automations',
  '/templates',
  '/media',
  '/knowledge',
  '/settings',
  '/team',
  '/webhooks',
  '/keys',
  '/account',
] as const

export interface Member {
  name: string
  email: string
  password: string
}

export interface ConsoleRig {
  harness: Harness
  /** the server's address, `http://127.0.0.1:PORT` */
  base: string
  browser: Browser
  /**
   * An account (with the sandbox chat number connected when `sandbox`) and its owner, who reads the console in
   * `language`. `ownerId` is the owner's user id.
   */
  account(options: {
    name: string
    owner: Member
    sandbox?: boolean
    language?: 'en' | 'de'
    plan?: { messagesPerMonth?: number }
  }): Promise<{ account: TestAccount; ownerId: string }>
  /** A page in a browser context of its own (its own cookies), signed in as `member`, the signed-in frame shown. */
  signedInPage(member: Member, context?: BrowserContextOptions): Promise<Page>
  /** the browser, then the harness */
  close(): Promise<void>
}

/** The harness served on loopback (options as servedHarness takes them) and a launched browser. */
export async function startConsole(options: Parameters<typeof servedHarness>[0] = {}): Promise<ConsoleRig> {
  const { harness, base } = await servedHarness(options)
  const browser = await launchBrowser()
  return {
    harness,
    base,
    browser,
    async account({ name, owner, sandbox = false, language = 'en', plan = { messagesPerMonth: 1000 } }) {
      const account = sandbox ? await sandboxAccount(harness, plan, name) : await createTestAccount(harness, { name })
      const user = await createMember(harness.database.orm, { accountId: account.accountId, role: 'owner', ...owner })
      await harness.database.query('UPDATE users SET language = $1 WHERE id = $2', [language, user.id])
      return { account, ownerId: user.id }
    },
    async signedInPage(member, context = {}) {
      const locale = context.locale ?? 'en-US'
      const page = await (await browser.newContext({ ...context, locale })).newPage()
      await signInThroughPage(page, base, member, locale.startsWith('de') ? 'de' : 'en')
      await page.locator('.signed-in main h1').first().waitFor()
      return page
    },
    async close() {
      await browser.close()
      await harness.close()
    },
  }
}
