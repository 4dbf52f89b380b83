import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import path from 'node:path'
import AxeBuilder from '@axe-core/playwright'
import type { Page } from 'playwright-core'
import { ROOT } from './process.ts'

// What every browser test does to a page: check it with axe-core, keep a screenshot for a reviewer, and call the
// API the way the page's own script would.

/** The folder a browser test leaves its screenshots in: test-results/NAME (HEROLD_TEST_OUTPUT overrides). */
export function screenshotFolder(name: string): string {
  const folder = path.resolve(process.env.HEROLD_TEST_OUTPUT ?? path.join(ROOT, 'test-results'), name)
  mkdirSync(folder, { recursive: true })
  return folder
}

/** A full-page screenshot saved as FOLDER/NAME.png. */
export async function screenshot(page: Page, folder: string, name: string): Promise<void> {
  await page.screenshot({ path: path.join(folder, `${name}.png`), fullPage: true })
}

/** A test file's page checks, its screenshots kept in test-results/FOLDER. */
export function pageChecks(folder: string) {
  const into = screenshotFolder(folder)
  const shot = (page: Page, name: string) => screenshot(page, into, name)
  return {
    /** the folder itself, for other files a reviewer should see */
    folder: into,
    /** a full-page screenshot saved as NAME.png */
    shot,
    /** axe-core on the page as it is (its failures reported as NAME), then its screenshot (SHOTNAME.png) */
    async accessibleShot(page: Page, name: string, shotName = name): Promise<void> {
      await assertAccessible(page, name)
      await shot(page, shotName)
    },
  }
}

const SIGN_IN_FORM = {
  en: { email: 'E-mail address', password: 'Password', button: 'Sign in' },
  de: { email: 'E-Mail-Adresse', password: 'Passwort', button: 'Anmelden' },
}

/** Signs in on BASE/sign-in as a member types it, in the language the page speaks; the caller waits for what follows. */
export async function signInThroughPage(
  page: Page,
  base: string,
  credentials: { email: string; password: string },
  language: keyof typeof SIGN_IN_FORM = 'en',
): Promise<void> {
  const form = SIGN_IN_FORM[language]
  await page.goto(`${base}/sign-in`)
  await page.getByLabel(form.email).fill(credentials.email)
  await page.getByLabel(form.password, { exact: true }).fill(credentials.password)
  await page.getByRole('button', { name: form.button }).click()
}

/** Fills the owner form of the setup link's page (opened by the caller) and sends it. */
export async function submitSetupForm(
  page: Page,
  owner: { name: string; email: string; password: string },
): Promise<void> {
  await page.getByLabel('Name').fill(owner.name)
  await page.getByLabel('E-mail address').fill(owner.email)
  await page.getByLabel('New password (at least 10 characters)').fill(owner.password)
  await page.getByRole('button', { name: 'Create owner' }).click()
}

/** axe-core on the page as it is: no serious or critical violation. */
export async function assertAccessible(page: Page, name: string): Promise<void> {
  const result = await new AxeBuilder({ page }).analyze()
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
  assert.deepEqual(
    bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`),
    [],
    `${name}: axe violations`,
  )
}

export type PageAnswer = {
  status: number
  body: { error?: { code: string; key: string } } & Record<string, unknown>
}

/** What a page's own script can do with the session: call the API, with the CSRF token when asked. */
export async function fetchFrom(
  page: Page,
  url: string,
  init: { method?: string; body?: unknown; csrf?: boolean; csv?: string } = {},
): Promise<PageAnswer> {
  return page.evaluate(
    async ({ url, init }) => {
      const headers: Record<string, string> = {
        'content-type': init.csv === undefined ? 'application/json' : 'text/csv',
      }
      if (init.csrf) {
        const session = (await (await fetch('/app/session')).json()) as { csrf_token: string }
        headers['x-csrf-token'] = session.csrf_token
      }
      const response = await fetch(url, {
        method: init.method ?? 'GET',
        headers,
        body: init.csv ?? (init.body === undefined ? undefined : JSON.stringify(init.body)),
      })
      const text = await response.text()
      let body = {}
      try {
        body = text ? JSON.parse(text) : {}
      } catch {
        body = { text }
      }
      return { status: response.status, body }
    },
    { url, init },
  )
}
