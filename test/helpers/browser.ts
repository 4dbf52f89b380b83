import { existsSync } from 'node:fs'
import { type Browser, chromium, type Page } from 'playwright-core'

// The one place tests get a browser. `npm install && npm test` must pass on a machine with only Node and npm, so
// the last resort is the Chromium binary shipped inside the npm package @sparticuz/chromium.

const SYSTEM_BROWSERS = [
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
  '/usr/bin/google-chrome',
  '/usr/bin/google-chrome-stable',
]

// Without these, a headless Chromium on a closed network keeps trying (and failing) to reach Google's services.
const QUIET_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export interface ResolvedBrowser {
  executablePath: string
  args: string[]
  /** where it came from: `HEROLD_CHROMIUM`, `system` or `npm` */
  source: 'HEROLD_CHROMIUM' | 'system' | 'npm'
}

/** HEROLD_CHROMIUM when set, else a system Chromium or Chrome when present, else the one from npm. */
export async function resolveBrowser(): Promise<ResolvedBrowser> {
  const fromEnv = process.env.HEROLD_CHROMIUM
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`HEROLD_CHROMIUM points to ${fromEnv}, which does not exist`)
    return { executablePath: fromEnv, args: QUIET_ARGS, source: 'HEROLD_CHROMIUM' }
  }
  const system = SYSTEM_BROWSERS.find((candidate) => existsSync(candidate))
  if (system) return { executablePath: system, args: QUIET_ARGS, source: 'system' }
  return packagedBrowser()
}

/** The Chromium shipped inside the npm package @sparticuz/chromium (unpacked into the temp directory once). */
export async function packagedBrowser(): Promise<ResolvedBrowser> {
  const { default: packaged } = await import('@sparticuz/chromium')
  const executablePath = await packaged.executablePath()
  // its flags are made for AWS Lambda; --single-process there means closing a page closes the whole browser
  const args = [...new Set([...packaged.args.filter((arg) => arg !== '--single-process'), ...QUIET_ARGS])]
  return { executablePath, args, source: 'npm' }
}

let resolved: Promise<ResolvedBrowser> | undefined

/** Launches a headless browser (playwright-core gives it a fresh temporary profile). */
export async function launchBrowser(from?: ResolvedBrowser): Promise<Browser> {
  resolved ??= resolveBrowser()
  const { executablePath, args } = from ?? (await resolved)
  return chromium.launch({ executablePath, args })
}

/** A page in a fresh context (its own cookies) whose browser asks for `locale`; `page.context()` closes it. */
export async function openPage(browser: Browser, locale = 'en-US'): Promise<Page> {
  return (await browser.newContext({ locale })).newPage()
}

/** A launched browser with one page open, as a test file's before() starts it. */
export async function browserWithPage(locale = 'en-US'): Promise<{ browser: Browser; page: Page }> {
  const browser = await launchBrowser()
  return { browser, page: await openPage(browser, locale) }
}

/**
 * Waits until `expression` is true in the page, asking from outside it (as page.evaluate does) every 50 ms, for up to
 * 30 s as Playwright's waitForFunction would. waitForFunction with a string polls by evaluating it inside the page,
 * which the console's CSP (no 'unsafe-eval') refuses whenever the first look finds it still false.
 */
export async function pageTrue(page: Page, expression: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs
  while (!(await page.evaluate(expression))) {
    if (Date.now() > until) throw new Error(`still false after ${timeoutMs} ms: ${expression}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
