import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Page, Response } from 'playwright-core'
import { createMember } from '../../src/modules/people/index.ts'
import { type ConsoleRig, startConsole } from '../helpers/console.ts'
import type { TestAccount } from '../helpers/harness.ts'

// The inbox updates by itself (issue 48), in a real headless Chromium against the in-process harness on loopback: two
// members of one account have the inbox open on two pages; a customer's message posted to the sandbox appears on both
// without a reload (well before the old 5 s poll), one member's assignment and status change reach the other's page
// (its inbox is fetched again at once, showing them), and a member of another account, with the inbox open too, hears
// none of it. While the stream is up the pages do not poll. One member's internal note mentioning the other appears in
// the other's open thread and raises their mentions count, without a reload; the other account's page sees nothing.

const OWNER = { name: 'Lena Laden', email: 'lena.live@example.org', password: 'live password 12' }
const COLLEAGUE = { name: 'Kai Kollege', email: 'kai.live@example.org', password: 'live password 34' }
const STRANGER = { name: 'Olga Other', email: 'olga.live@example.org', password: 'live password 56' }
/** a live change shows within this (on a busy machine: refetching the list takes most of it) */
const LIVE_MS = 4500

let rig: ConsoleRig
let shop: TestAccount
let colleagueId: string

before(async () => {
  rig = await startConsole()
  ;({ account: shop } = await rig.account({ name: 'Laden Live', owner: OWNER, sandbox: true }))
  await rig.account({ name: 'Anderer Laden', owner: STRANGER, sandbox: true })
  const colleague = await createMember(rig.harness.database.orm, {
    accountId: shop.accountId,
    role: 'member',
    ...COLLEAGUE,
  })
  colleagueId = colleague.id
})

after(() => rig?.close())

/** A signed-in page with the inbox open and its live stream up. */
async function inboxPage(member: typeof OWNER, path = '/inbox'): Promise<Page> {
  const page = await rig.signedInPage(member, { viewport: { width: 1280, height: 900 } })
  const stream = page.waitForResponse((r) => r.url().endsWith('/app/events'))
  await page.goto(`${rig.base}${path}`)
  assert.equal((await stream).status(), 200)
  await page.locator('.signed-in main h1').first().waitFor()
  await page.waitForLoadState('networkidle')
  return page
}

/** GET answers of `pathname` (default the inbox, GET /app/conversations) a page receives from now on. */
function inboxFetches(page: Page, pathname = '/app/conversations'): Response[] {
  const seen: Response[] = []
  page.on('response', (response) => {
    const url = new URL(response.url())
    if (url.pathname === pathname && response.request().method() === 'GET') seen.push(response)
  })
  return seen
}

/** A change by the signed-in member of `page`, through the app's API with the session's CSRF token. */
async function asMember(page: Page, method: 'PUT' | 'POST', path: string, body: unknown = {}): Promise<number> {
  return page.evaluate(
    async ({ method, path, body }) => {
      const session = (await (await fetch('/app/session')).json()) as { csrf_token: string }
      const response = await fetch(path, {
        method,
        headers: { 'content-type': 'application/json', 'x-csrf-token': session.csrf_token },
        body: JSON.stringify(body),
      })
      return response.status
    },
    { method, path, body },
  )
}

async function until(done: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

test('two members see a customer’s message, an assignment and a status change live; another account sees none', async () => {
  const owner = await inboxPage(OWNER)
  const colleague = await inboxPage(COLLEAGUE)
  const stranger = await inboxPage(STRANGER)
  const strangerFetches = inboxFetches(stranger)
  const colleagueFetches = inboxFetches(colleague)
  const ownerFetches = inboxFetches(owner)

  // a customer writes: both open inboxes show it without a reload
  const answer = await shop.request({
    method: 'POST',
    url: '/v1/sandbox/inbound',
    payload: { from: '+4915199900001', name: 'Clara Kundin', text: 'Habt ihr heute Brezeln?' },
  })
  assert.equal(answer.statusCode, 200, answer.body)
  const posted = Date.now()
  for (const page of [owner, colleague]) {
    await page.getByText('Habt ihr heute Brezeln?').first().waitFor({ timeout: LIVE_MS })
  }
  const shown = Date.now() - posted
  console.log(`web-live: the message on both pages ${shown} ms after the webhook’s 200`)
  const [conversation] = await rig.harness.database.query<{ id: string }>(
    'SELECT id FROM conversations WHERE account_id = $1',
    [shop.accountId],
  )

  // the owner assigns it to the colleague, then closes it: the colleague's page fetches its inbox again at once
  const before = colleagueFetches.length
  assert.equal(
    await asMember(owner, 'PUT', `/app/conversations/${conversation.id}/assignee`, { member_id: colleagueId }),
    200,
  )
  await until(
    async () => {
      for (const response of colleagueFetches.slice(before)) {
        const body = await response.json()
        if (body.conversations.some((c: { assignee_id: string | null }) => c.assignee_id === colleagueId)) return true
      }
      return false
    },
    LIVE_MS,
    'the assignment on the colleague’s page',
  )
  const afterAssignment = colleagueFetches.length
  assert.equal(await asMember(owner, 'POST', `/app/conversations/${conversation.id}/close`), 200)
  await until(
    async () => {
      for (const response of colleagueFetches.slice(afterAssignment)) {
        const body = await response.json()
        if (body.conversations.some((c: { status: string }) => c.status === 'closed')) return true
      }
      return false
    },
    LIVE_MS,
    'the closed conversation on the colleague’s page',
  )

  // the stranger's inbox heard nothing: not fetched again, the message nowhere on it
  await new Promise((resolve) => setTimeout(resolve, 1000))
  assert.equal(strangerFetches.length, 0, 'the other account’s page fetched its inbox again')
  assert.equal(await stranger.getByText('Habt ihr heute Brezeln?').count(), 0)
  // and nobody polled: every fetch of the two members' pages followed an event (three changes, a few fetches each)
  assert.ok(ownerFetches.length <= 6, `the owner's page fetched its inbox ${ownerFetches.length} times`)
})

test('a note mentioning a colleague appears on the colleague’s page and raises their mentions count; another account sees none', async () => {
  const answer = await shop.request({
    method: 'POST',
    url: '/v1/sandbox/inbound',
    payload: { from: '+4915199900002', name: 'Nina Notiz', text: 'Kann ich morgen abholen?' },
  })
  assert.equal(answer.statusCode, 200, answer.body)
  const [conversation] = await rig.harness.database.query<{ id: string }>(
    "SELECT conversation_id AS id FROM messages WHERE account_id = $1 AND text = 'Kann ich morgen abholen?'",
    [shop.accountId],
  )
  const owner = await inboxPage(OWNER, `/inbox/${conversation.id}`)
  const colleague = await inboxPage(COLLEAGUE, `/inbox/${conversation.id}`)
  const stranger = await inboxPage(STRANGER)
  const strangerMentions = inboxFetches(stranger, '/app/mentions')
  await colleague.getByText('Kann ich morgen abholen?').first().waitFor()
  assert.equal(await colleague.getByTestId('mentions-unread').count(), 0, 'no mention yet')

  // the owner switches the composer to Note and mentions the colleague through the @ suggestions
  await owner.getByRole('button', { name: 'Note', exact: true }).click()
  const note = owner.getByRole('textbox', { name: 'Internal note' })
  await note.pressSequentially('Bitte @Ka')
  await owner
    .getByRole('list', { name: 'Team members' })
    .getByRole('button', { name: /Kai Kollege/ })
    .click()
  await note.pressSequentially('übernimm du, Abholung um 9.')
  assert.equal(await note.inputValue(), 'Bitte @Kai Kollege übernimm du, Abholung um 9.')
  const saved = owner.waitForResponse((r) => r.url().endsWith(`/app/conversations/${conversation.id}/notes`))
  await owner.getByRole('button', { name: 'Save note' }).click()
  assert.equal((await saved).status(), 201)
  const posted = Date.now()

  // on the colleague's open thread (in German, their app's language): the note, set apart from the messages, with its author; their count went up
  const shown = colleague.locator('.thread li.internal-note', { hasText: 'Abholung um 9.' })
  await shown.waitFor({ timeout: LIVE_MS })
  assert.match(
    (await shown.textContent()) ?? '',
    /Interne Notiz · von Lena Laden/,
    'the colleague reads German (no language set)',
  )
  await colleague.getByTestId('mentions-unread').waitFor({ timeout: LIVE_MS })
  assert.equal(await colleague.getByTestId('mentions-unread').textContent(), '1 neu')
  console.log(`web-live: the note and the mention on the colleague’s page ${Date.now() - posted} ms after the save`)
  // the owner mentioned nobody of theirs: no count on the owner's page
  assert.equal(await owner.getByTestId('mentions-unread').count(), 0)

  // the colleague opens their mentions: the excerpt links to the conversation, and opening it marks it read
  await colleague.locator('details.mentions summary').click()
  const read = colleague.waitForResponse((r) => r.url().endsWith('/app/mentions/read'))
  await colleague.locator('.mention-list a', { hasText: 'Abholung um 9.' }).click()
  assert.equal((await read).status(), 200)
  await until(async () => (await colleague.getByTestId('mentions-unread').count()) === 0, LIVE_MS, 'the mention read')

  // the other account's page: no note, no mention, not even a refetch of its mentions
  await new Promise((resolve) => setTimeout(resolve, 1000))
  assert.equal(strangerMentions.length, 0, 'the other account’s page fetched its mentions again')
  assert.equal(await stranger.getByText('Abholung um 9.').count(), 0)
  assert.equal(await stranger.getByTestId('mentions-unread').count(), 0)
})
