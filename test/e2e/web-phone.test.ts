import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { parsePhoneNumberFromString } from 'libphonenumber-js/min'
import type { Page } from 'playwright-core'
import { pageTrue } from '../helpers/browser.ts'
import { CONSOLE_PAGES, type ConsoleRig, startConsole } from '../helpers/console.ts'
import { setOptin } from '../helpers/fixtures.ts'
import type { TestAccount } from '../helpers/harness.ts'
import { assertAccessible, pageChecks } from '../helpers/pages.ts'

// The console on a phone (390 × 844) and on a desktop (1280 × 900), in a real headless Chromium against the
// in-process harness on loopback: the inbox as a chat app (a customer's message from the sandbox, the list naming
// the customer by their number, a tap into the thread, a reply, back; a new message and the unread count in the
// title without a reload; the template picker in the reply's place when the 24-hour window is closed), every page
// without sideways scrolling at 360 px (in German, the longer words), axe-core serious/critical 0 at both sizes in
// both languages, and the first steps of an empty account from its real state. Screenshots of every page at both
// sizes go to test-results/web-phone/ (HEROLD_TEST_OUTPUT overrides).

const checks = pageChecks('web-phone')
const PHONE = { width: 390, height: 844 }
const NARROW = { width: 360, height: 800 }
const DESKTOP = { width: 1280, height: 900 }
const SHOP_OWNER = { name: 'Bea Bäckerin', email: 'bea.phone@example.org', password: 'phone password 12' }
const NEW_OWNER = { name: 'Nora Neu', email: 'nora.phone@example.org', password: 'phone password 34' }
const CUSTOMER = '+4915123456789'
const LATE_CUSTOMER = '+4917612345678'

let rig: ConsoleRig
let shop: TestAccount
let empty: TestAccount
let shopUserId: string
/** the shop's detail pages, once the test has made their things */
const detailPages: string[] = []

before(async () => {
  rig = await startConsole()
  ;({ account: shop, ownerId: shopUserId } = await rig.account({
    name: 'Bäckerei Brezel',
    owner: SHOP_OWNER,
    sandbox: true,
  }))
  ;({ account: empty } = await rig.account({ name: 'Frisch Start', owner: NEW_OWNER }))
  console.log(`web-phone: screenshots in ${checks.folder}`)
})

after(() => rig?.close())

async function language(to: 'en' | 'de'): Promise<void> {
  await rig.harness.database.query(`UPDATE users SET language = $1 WHERE id = $2`, [to, shopUserId])
}

async function api(account: TestAccount, method: 'GET' | 'POST', url: string, payload?: unknown) {
  const answer = await account.request({ method, url, payload: payload as Record<string, unknown> })
  assert.ok(answer.statusCode < 300, `${method} ${url}: ${answer.statusCode} ${answer.body}`)
  return answer.json()
}

/** A customer's message through the sandbox, as if it came from WhatsApp. */
async function inbound(from: string, text: string) {
  return api(shop, 'POST', '/v1/sandbox/inbound', { from, text })
}

/** A signed-in page in its own browser context of the given size. */
function signedInPage(viewport: { width: number; height: number }, who = SHOP_OWNER): Promise<Page> {
  return rig.signedInPage(who, { viewport })
}

/** Opens a page by its address and waits until it has asked for what it asks for. */
async function open(page: Page, path: string): Promise<void> {
  await page.goto(`${rig.base}${path}`)
  await page.locator('.signed-in main').locator('h1:visible, h2:visible').first().waitFor()
  await page.waitForLoadState('networkidle')
}

/** Asks again every 200 ms until `done` (the test's own timeout ends a wait that never ends). */
async function until(done: () => Promise<boolean>): Promise<void> {
  while (!(await done())) await new Promise((resolve) => setTimeout(resolve, 200))
}

/** A phone number as the console writes it (libphonenumber's international format). */
const said = (phone: string) => parsePhoneNumberFromString(phone)!.formatInternational()
const saidPattern = (phone: string) => new RegExp(said(phone).replace('+', '\\+'))

/** `/` is the dashboard, `/inbox` the inbox, `/inbox/<id>` an inbox thread (`inbox-one`). */
const shotName = (path: string) => {
  const [list, id] = path.slice(1).split('/')
  return list === '' ? 'dashboard' : id ? `${list}-one` : list!
}

/** The page scrolls sideways when its content is wider than the window. */
async function sidewaysOverflow(page: Page): Promise<number> {
  return page.evaluate('document.scrollingElement.scrollWidth - window.innerWidth') as Promise<number>
}

describe('the console on a phone and on a desktop', () => {
  test('the inbox on a phone: list, tap, thread, reply, back; new messages and the unread count without a reload', async () => {
    // a customer whose 24-hour window closed yesterday (written 25 hours ago), then one who writes now
    const now = rig.harness.clock.now()
    rig.harness.clock.set(new Date(now.getTime() - 25 * 3600_000))
    await inbound(LATE_CUSTOMER, 'Haben Sie Dinkelbrot?')
    rig.harness.clock.set(now)
    await inbound(CUSTOMER, 'Hallo, haben Sie morgen frische Brezeln?')
    const contacts = (await api(shop, 'GET', '/v1/contacts')).contacts as Array<{ id: string; phone: string }>
    for (const contact of contacts) await setOptin(rig.harness, shop.accountId, contact.id)
    const customerId = contacts.find((c) => c.phone === CUSTOMER)!.id
    // an approved template for the closed window (the sandbox approves on submit)
    const template = await api(shop, 'POST', '/v1/templates', {
      name: 'Abholung',
      content: 'Ihre Bestellung {{nummer}} liegt bereit.',
      language: 'de',
    })
    await api(shop, 'POST', `/v1/templates/${template.template.id}/submit`)

    const page = await signedInPage(PHONE)
    await page.getByRole('button', { name: 'Menu' }).waitFor()
    await open(page, '/inbox')
    const row = page.getByRole('link', { name: saidPattern(CUSTOMER) })
    await row.getByText('Hallo, haben Sie morgen frische Brezeln?').waitFor()
    await row.getByText('1 unread').waitFor()
    const listed = (await page.locator('.conversations').textContent()) ?? ''
    for (const contact of contacts)
      assert.ok(!listed.includes(contact.id.slice(0, 8)), 'no conversation named by an id')
    assert.match(await page.title(), /^\(\d+\) Herold$/, 'the title shows the unread count')
    // the list fills the screen: no thread beside it
    assert.equal(await page.getByRole('list', { name: 'Thread' }).count(), 0)
    await checks.accessibleShot(page, 'phone inbox list', 'phone-inbox-list')

    await row.click()
    await page.waitForURL(/\/inbox\/[0-9a-f-]{36}$/)
    const thread = page.getByRole('list', { name: 'Thread' })
    await thread.getByText('Hallo, haben Sie morgen frische Brezeln?').waitFor()
    await page.getByRole('heading', { name: said(CUSTOMER), level: 2 }).waitFor()
    assert.equal(await page.getByRole('link', { name: /Hallo, haben Sie/ }).count(), 0, 'the list is gone')
    // the reply box sits at the bottom of the screen, in view
    const reply = page.getByLabel('Reply')
    const box = await reply.boundingBox()
    assert.ok(box && box.y + box.height <= PHONE.height, `the reply box is in view: ${JSON.stringify(box)}`)
    await reply.fill('Ja, ab 7 Uhr!')
    await page.getByRole('button', { name: 'Send', exact: true }).click()
    await thread.getByText('Ja, ab 7 Uhr!').waitFor()
    // reading the thread marked it read: the title counts only the other customer's message
    await pageTrue(page, `document.title === '(1) Herold'`)
    await checks.accessibleShot(page, 'phone inbox thread', 'phone-inbox-thread')

    // an internal note from the phone: the Note switch, its composer in view, the note in the thread set apart
    await page.getByRole('button', { name: 'Note', exact: true }).click()
    const note = page.getByRole('textbox', { name: 'Internal note' })
    const noteBox = await note.boundingBox()
    assert.ok(
      noteBox && noteBox.y + noteBox.height <= PHONE.height,
      `the note box is in view: ${JSON.stringify(noteBox)}`,
    )
    await note.fill('Brezeln für morgen zurückgelegt.')
    await page.getByRole('button', { name: 'Save note' }).click()
    await thread.locator('li.internal-note', { hasText: 'Brezeln für morgen zurückgelegt.' }).waitFor()
    await checks.accessibleShot(page, 'phone inbox note', 'phone-inbox-note')
    await page.getByRole('button', { name: 'Reply', exact: true }).click()

    // a new message appears without a reload
    await page.evaluate('window.stayed = true')
    await inbound(CUSTOMER, 'Und zwei Laugenstangen, bitte.')
    await thread.getByText('Und zwei Laugenstangen, bitte.').waitFor()
    // read where it appeared: the conversation has no unread message
    await until(async () => {
      const { conversations } = await api(shop, 'GET', '/v1/inbox/conversations')
      return (conversations as Array<{ contact: { id: string }; unread_count: number }>).some(
        (c) => c.contact.id === customerId && c.unread_count === 0,
      )
    })

    // back to the list; the next message counts as unread there and in the title, still without a reload
    await page.getByRole('link', { name: 'Back to the list' }).click()
    await page.waitForURL(/\/inbox$/)
    await inbound(CUSTOMER, 'Bis morgen!')
    await row.getByText('Bis morgen!').waitFor()
    await row.getByText('1 unread').waitFor()
    await pageTrue(page, `document.title === '(2) Herold'`)
    assert.equal(await page.evaluate('window.stayed'), true, 'no reload')

    // the customer who wrote 25 hours ago: the template picker with its variable takes the reply's place
    await page.getByRole('link', { name: saidPattern(LATE_CUSTOMER) }).click()
    await page.getByRole('list', { name: 'Thread' }).getByText('Haben Sie Dinkelbrot?').waitFor()
    await page
      .getByTestId('window')
      .getByText(/^The 24-hour window ended /)
      .waitFor()
    assert.equal(await page.getByLabel('Reply').count(), 0, 'no free text outside the window')
    await page.getByRole('combobox', { name: 'Approved template' }).selectOption({ label: 'Abholung (de)' })
    await page.getByLabel('Variable nummer').fill('17')
    await page.getByRole('button', { name: 'Send template' }).click()
    await page.getByText('The template is queued and goes out shortly.').waitFor()
    await checks.accessibleShot(page, 'phone inbox closed window', 'phone-inbox-template')
    detailPages.push(`/inbox/${page.url().split('/').at(-1)}`, `/contacts/${contacts[0]!.id}`)
    await page.context().close()
  })

  test('the navigation: a bottom bar and a drawer on a phone, a sidebar on a desktop, both by keyboard', async () => {
    const phone = await signedInPage(PHONE)
    const places = phone.getByRole('navigation', { name: 'Main places' })
    for (const name of ['Overview', 'Inbox', 'Contacts']) await places.getByRole('link', { name }).waitFor()
    // the full list is one tap away, in a drawer; by keyboard too (Enter opens, Escape closes)
    await places.getByRole('button', { name: 'More' }).focus()
    await phone.keyboard.press('Enter')
    const drawer = phone.getByRole('dialog', { name: 'Menu' })
    await drawer.getByRole('link', { name: 'Automations' }).waitFor()
    await assertAccessible(phone, 'the open drawer')
    await checks.shot(phone, 'phone-drawer')
    await phone.keyboard.press('Escape')
    await drawer.waitFor({ state: 'hidden' })
    await places.getByRole('button', { name: 'More' }).click()
    await drawer.getByRole('link', { name: 'Newsletters' }).click()
    await phone.getByRole('heading', { name: 'Newsletters', level: 1 }).waitFor()
    await drawer.waitFor({ state: 'hidden' })
    // every control of the frame is at least 44 px high
    const small = await phone.evaluate(
      `[...document.querySelectorAll('.topbar button, .bottombar a, .bottombar button')]
        .map((element) => element.getBoundingClientRect())
        .filter((rect) => rect.height < 44 || rect.width < 44).length`,
    )
    assert.equal(small, 0, 'touch targets of at least 44 px')
    await phone.context().close()

    const desktop = await signedInPage(DESKTOP)
    const sidebar = desktop.getByRole('navigation', { name: 'Main navigation' })
    await sidebar.getByRole('link', { name: 'Knowledge' }).waitFor()
    assert.equal(await desktop.getByRole('navigation', { name: 'Main places' }).count(), 0, 'no bottom bar')
    assert.equal(await desktop.getByRole('button', { name: 'Menu' }).count(), 0, 'no menu button')
    // the skip link is the first stop of the keyboard and leads to the page
    await desktop.keyboard.press('Tab')
    assert.equal(await desktop.evaluate('document.activeElement.textContent'), 'Skip to content')
    // the sidebar does not wrap: each link one line high
    const tall = await desktop.evaluate(
      `[...document.querySelectorAll('.sidebar .places a')].filter((a) => a.getBoundingClientRect().height > 48).length`,
    )
    assert.equal(tall, 0)
    await desktop.context().close()
  })

  test('every page: no sideways scrolling at 360 px, axe-clean at phone and desktop width, in English and German', async () => {
    const made = {
      newsletter: await api(shop, 'POST', '/v1/newsletters', { subject: 'Osterbrezeln', content: 'Hallo {{name}}!' }),
      automation: await api(shop, 'POST', '/v1/automations', {
        name: 'Stammkundschaft markieren',
        trigger: { type: 'manual' },
        steps: [{ type: 'add_tag', tag: 'stammkunde' }],
      }),
      followup: await rig.harness.services.followups.create(
        { accountId: shop.accountId, account: { language: 'de' } },
        { name: 'Nachfassen', steps: [{ text: 'Hallo {{name}}, wie war es?', delay: { amount: 1, unit: 'days' } }] },
      ),
      templates: await api(shop, 'GET', '/v1/templates'),
    }
    const paths = [
      ...CONSOLE_PAGES,
      ...detailPages,
      `/newsletters/${made.newsletter.newsletter.id}`,
      `/automations/${made.automation.id}`,
      `/followups/${made.followup.id}`,
      `/templates/${(made.templates.templates as Array<{ id: string }>)[0]!.id}`,
    ]
    const overflowing: Record<string, number> = {}
    for (const lang of ['en', 'de'] as const) {
      await language(lang)
      for (const [size, viewport] of [
        ['phone', PHONE],
        ['desktop', DESKTOP],
      ] as const) {
        const page = await signedInPage(viewport)
        for (const path of paths) {
          await open(page, path)
          await assertAccessible(page, `${lang} ${size} ${path}`)
          if (lang === 'en') await checks.shot(page, `${size}-${shotName(path)}`)
        }
        if (size === 'phone') {
          await page.setViewportSize(NARROW)
          for (const path of paths) {
            await open(page, path)
            const over = await sidewaysOverflow(page)
            if (over > 0) overflowing[`${lang} ${path}`] = over
          }
        }
        await page.context().close()
      }
    }
    assert.deepEqual(overflowing, {}, 'pages wider than 360 px (by how many pixels)')
    await language('en')

    // signed out: the sign-in page at both sizes
    for (const [size, viewport] of [
      ['phone', NARROW],
      ['desktop', DESKTOP],
    ] as const) {
      const context = await rig.browser.newContext({ locale: 'de-DE', viewport })
      const page = await context.newPage()
      await page.goto(`${rig.base}/sign-in`)
      await page.getByRole('heading', { name: 'Anmelden' }).waitFor()
      assert.equal(await sidewaysOverflow(page), 0)
      await checks.accessibleShot(page, `sign-in ${size}`, `${size}-sign-in`)
      await context.close()
    }
  })

  test('dark mode follows the system setting and stays axe-clean', async () => {
    const page = await rig.signedInPage(SHOP_OWNER, { viewport: PHONE, colorScheme: 'dark' })
    const root = await page.evaluate('getComputedStyle(document.documentElement).backgroundColor')
    assert.equal(root, 'rgb(20, 23, 28)', 'the dark background')
    for (const path of ['/', '/inbox', detailPages[0] ?? '/inbox', '/contacts', '/settings']) {
      await open(page, path)
      await checks.accessibleShot(page, `dark ${path}`, `dark-phone-${shotName(path)}`)
    }
    await page.context().close()
  })

  test('a new account: the dashboard lists the four first steps from its real state, empty lists say what fills them', async () => {
    const page = await signedInPage(DESKTOP, NEW_OWNER)
    const steps = page.getByTestId('first-steps')
    await steps.getByText('0 of 4 done').waitFor()
    for (const name of [
      'Connect your number',
      'Create the opt-in template',
      'Bring in your customer list',
      'Invite colleagues',
    ]) {
      await steps.getByRole('link', { name }).waitFor()
    }
    assert.equal(await page.getByRole('img').count(), 0, 'no empty charts')
    await page.getByText(/^Nothing to show yet/).waitFor()
    await checks.accessibleShot(page, 'first steps desktop', 'desktop-first-steps')

    // empty lists say what would fill them and link to it
    await steps.getByRole('link', { name: 'Bring in your customer list' }).click()
    await page.getByRole('heading', { name: 'Contacts', level: 1 }).waitFor()
    await page.getByText(/^No contacts yet/).waitFor()
    await open(page, '/inbox')
    await page.getByText(/^No conversations yet/).waitFor()
    await page.getByRole('link', { name: 'See the chat number in the settings' }).waitFor()

    // the steps follow the account: a contact, a connected number, a second member
    await api(empty, 'POST', '/v1/contacts', { name: 'Erste Kundin', phone: '+4915199999999' })
    await rig.harness.services.channels.connect(empty.accountId, { channel: 'chat', provider: 'sandbox' })
    await open(page, '/')
    await steps.getByText('2 of 4 done').waitFor()
    assert.equal(await steps.getByTestId('step-import_contacts').getAttribute('data-done'), 'true')
    assert.equal(await steps.getByTestId('step-connect_number').getAttribute('data-done'), 'true')
    assert.equal(await steps.getByTestId('step-invite_team').getAttribute('data-done'), 'false')
    await page.setViewportSize(PHONE)
    await checks.accessibleShot(page, 'first steps phone', 'phone-first-steps')
    await page.context().close()
  })
})
