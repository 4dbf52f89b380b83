import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { nextPhone, setOptin } from '../../../test/helpers/fixtures.ts'
import { createKey, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'

let harness: Harness

harnessPerFile((created) => {
  harness = created
})

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
const HOUR = 3600_000

async function contact(account: TestAccount): Promise<{ id: string; phone: string }> {
  const phone = nextPhone()
  const response = await account.request({ method: 'POST', url: '/v1/contacts', payload: { name: 'Erika', phone } })
  assert.equal(response.statusCode, 201, response.body)
  return { id: response.json().contact.id, phone }
}

async function optin(account: TestAccount, contactId: string, to: 'confirmed' | 'opted_out', channel = 'chat') {
  await setOptin(harness, account.accountId, contactId, to, channel as 'chat' | 'email')
}

async function inbound(account: TestAccount, phone: string, text = 'Hallo') {
  const response = await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from: phone, text } })
  assert.equal(response.statusCode, 200, response.body)
}

async function stats(account: TestAccount, range?: string): Promise<Json> {
  const response = await account.request({ method: 'GET', url: `/v1/stats${range ? `?range=${range}` : ''}` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().stats
}

const dayOf = (s: Json, date: string) => s.days.find((d: Json) => d.date === date)

/** A template send row moved through statuses as the send worker does (its own tests cover the worker). */
async function templateSend(account: TestAccount, contactId: string, origin: string, statuses: string[]) {
  const id = randomUUID()
  const at = harness.clock.now().toISOString()
  await harness.database.query(
    `INSERT INTO template_sends (account_id, id, contact_id, template_id, status, origin, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 'queued', $5, $6, $6)`,
    [account.accountId, id, contactId, randomUUID(), origin, at],
  )
  for (const status of statuses) {
    await harness.database.query(
      'UPDATE template_sends SET status = $3, updated_at = $4 WHERE account_id = $1 AND id = $2',
      [account.accountId, id, status, harness.clock.now().toISOString()],
    )
  }
}

async function click(account: TestAccount, contactId: string, times: number) {
  const linkId = randomUUID().slice(0, 12)
  const at = harness.clock.now().toISOString()
  await harness.database.query(
    'INSERT INTO tracked_links (account_id, id, contact_id, url, created_at) VALUES ($1, $2, $3, $4, $5)',
    [account.accountId, linkId, contactId, 'https://example.com/', at],
  )
  await harness.database.query(
    `INSERT INTO link_clicks (account_id, link_id, contact_id, clicked_at)
     SELECT $1, $2, $3, $4 FROM generate_series(1, $5::int)`,
    [account.accountId, linkId, contactId, at, times],
  )
}

describe('GET /stats', () => {
  test('counts per day in the account timezone from known data, the same before and after the rollup', async () => {
    // 22:30 UTC on 10 March is 23:30 in Berlin; one hour later it is 11 March there, still 10 March in UTC
    harness.clock.set('2026-03-10T22:30:00Z')
    const account = await createTestAccount(harness)
    await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    const other = await createTestAccount(harness)

    const anna = await contact(account)
    const ben = await contact(account)
    await inbound(account, anna.phone)
    await optin(account, anna.id, 'confirmed')
    const sent = await account.request({
      method: 'POST',
      url: '/v1/messages',
      payload: { contact_id: anna.id, text: 'Danke!' },
    })
    assert.equal(sent.statusCode, 201, sent.body)
    await templateSend(account, anna.id, 'api', ['sending', 'sent', 'delivered'])
    await templateSend(account, anna.id, 'newsletter', ['skipped'])

    harness.clock.advance(HOUR) // 11 March in Berlin
    const carla = await contact(account)
    await inbound(account, ben.phone)
    await inbound(account, ben.phone, 'Noch eine Frage')
    await optin(account, ben.id, 'confirmed')
    await optin(account, ben.id, 'opted_out')
    await optin(account, carla.id, 'confirmed', 'email')
    await click(account, anna.id, 3)
    await templateSend(account, ben.id, 'newsletter', ['sending', 'failed'])
    await harness.database.query(
      `INSERT INTO messages (account_id, id, conversation_id, contact_id, channel, direction, type, text, ai, created_at)
       VALUES ($1, $2, $3, $4, 'chat', 'outbound', 'text', 'KI-Antwort', true, $5)`,
      [account.accountId, randomUUID(), randomUUID(), anna.id, harness.clock.now().toISOString()],
    )
    const deleted = await account.request({ method: 'DELETE', url: `/v1/contacts/${carla.id}` })
    assert.equal(deleted.statusCode, 200, deleted.body)

    const before = await stats(account, '7d')
    assert.equal(before.range, '7d')
    assert.equal(before.timezone, 'Europe/Berlin')
    assert.equal(before.from, '2026-03-05')
    assert.equal(before.to, '2026-03-11')
    assert.deepEqual(
      before.days.map((d: Json) => d.date),
      ['2026-03-05', '2026-03-06', '2026-03-07', '2026-03-08', '2026-03-09', '2026-03-10', '2026-03-11'],
    )
    const tenth = dayOf(before, '2026-03-10')
    assert.equal(tenth.contacts_new, 2)
    assert.equal(tenth.messages_in, 1)
    assert.equal(tenth.messages_out, 1)
    assert.deepEqual(tenth.optins_confirmed, { chat: 1, email: 0 })
    assert.deepEqual(tenth.opt_outs, { chat: 0, email: 0 })
    assert.deepEqual(tenth.template_sends, { queued: 1, sent: 1, delivered: 1, read: 0, failed: 0, skipped: 0 })
    assert.deepEqual(tenth.newsletter_sends, { queued: 1, sent: 0, delivered: 0, read: 0, failed: 0, skipped: 1 })
    assert.equal(tenth.ai_replies, 0)

    const eleventh = dayOf(before, '2026-03-11')
    assert.equal(eleventh.contacts_new, 1)
    assert.equal(eleventh.messages_in, 2)
    assert.equal(eleventh.messages_out, 1)
    assert.equal(eleventh.ai_replies, 1)
    assert.deepEqual(eleventh.optins_confirmed, { chat: 1, email: 1 })
    assert.deepEqual(eleventh.opt_outs, { chat: 1, email: 0 })
    assert.equal(eleventh.link_clicks, 3)
    assert.deepEqual(eleventh.newsletter_sends, { queued: 1, sent: 0, delivered: 0, read: 0, failed: 1, skipped: 0 })
    for (const date of ['2026-03-05', '2026-03-09']) assert.equal(dayOf(before, date).messages_in, 0)

    // carla was deleted: two contacts now, anna confirmed, ben opted out; her email opt-in left with her
    assert.deepEqual(before.contacts, {
      total: 2,
      new_in_range: 3,
      optin_chat: { none: 0, pending: 0, confirmed: 1, opted_out: 1 },
      optin_email: { none: 2, pending: 0, confirmed: 0, opted_out: 0 },
    })
    assert.equal(before.totals.messages_in, 3)
    assert.equal(before.totals.messages_out, 2)
    assert.equal(before.totals.link_clicks, 3)
    assert.deepEqual(before.totals.optins_confirmed, { chat: 2, email: 1 })

    const moved = await harness.services.stats.rollupAll()
    assert.ok(moved > 0)
    assert.deepEqual(await stats(account, '7d'), before)
    const [{ pending }] = await harness.database.query<{ pending: number }>(
      'SELECT count(*)::int AS pending FROM stats_deltas WHERE account_id = $1',
      [account.accountId],
    )
    assert.equal(pending, 0)

    // another account sees none of it
    const empty = await stats(other, '7d')
    assert.equal(empty.contacts.total, 0)
    assert.equal(empty.totals.messages_in, 0)

    // a week later the 10th is out of a 7-day range, still in 30 days
    harness.clock.advance(7 * 24 * HOUR)
    const later = await stats(account, '7d')
    assert.equal(later.from, '2026-03-12')
    assert.equal(later.totals.messages_in, 0)
    assert.equal(later.contacts.total, 2)
    assert.equal((await stats(account, '30d')).totals.messages_in, 3)
  })

  test('days follow the account timezone: the same moment is another day in New York', async () => {
    harness.clock.set('2026-03-11T03:00:00Z') // 11 March in Berlin, 10 March 23:00 in New York
    const account = await createTestAccount(harness)
    await harness.database.query("UPDATE accounts SET timezone = 'America/New_York' WHERE id = $1", [account.accountId])
    await contact(account)
    const s = await stats(account, '7d')
    assert.equal(s.to, '2026-03-10')
    assert.equal(dayOf(s, '2026-03-10').contacts_new, 1)
  })

  test('range defaults to 30 days; another range is a 400; the scope stats:read is needed', async () => {
    const account = await createTestAccount(harness)
    const s = await stats(account)
    assert.equal(s.range, '30d')
    assert.equal(s.days.length, 30)
    assert.equal((await stats(account, '90d')).days.length, 90)
    for (const range of ['1d', '365d', '']) {
      const bad = await account.request({ method: 'GET', url: `/v1/stats?range=${range}` })
      assert.equal(bad.statusCode, 400, bad.body)
      assert.equal(bad.json().error.code, 'bad_request')
    }
    const key = await createKey(harness, account.accountId, ['contacts:read'])
    const denied = await harness.app.inject({
      method: 'GET',
      url: '/v1/stats',
      headers: { authorization: `Bearer ${key}` },
    })
    assert.equal(denied.statusCode, 403)
    assert.equal(denied.json().error.key, 'apikey_scope_fehlt')
  })

  test('automation runs are counted on the day they start', async () => {
    harness.clock.set('2026-05-02T10:00:00Z')
    const account = await createTestAccount(harness)
    await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    const created = await account.request({
      method: 'POST',
      url: '/v1/automations',
      payload: {
        name: 'Markieren',
        trigger: { type: 'tag_added', tag: 'vip' },
        steps: [{ type: 'add_tag', tag: 'x' }],
      },
    })
    assert.equal(created.statusCode, 200, created.body)
    const activated = await account.request({ method: 'POST', url: `/v1/automations/${created.json().id}/activate` })
    assert.equal(activated.statusCode, 200, activated.body)
    for (let i = 0; i < 2; i++) {
      const c = await contact(account)
      const tagged = await account.request({
        method: 'POST',
        url: `/v1/contacts/${c.id}/tags`,
        payload: { tag: 'vip' },
      })
      assert.equal(tagged.statusCode, 200, tagged.body)
    }
    const s = await stats(account, '7d')
    assert.equal(dayOf(s, '2026-05-02').automation_runs, 2)
    assert.equal(s.totals.followup_runs, 0)
  })

  test('follow-up runs (a contact enrolled in a sequence) are counted on the day they start', async () => {
    harness.clock.set('2026-05-03T10:00:00Z')
    const account = await createTestAccount(harness)
    await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    const sequence = (await harness.services.followups.create(
      { accountId: account.accountId, account: { language: 'de' } },
      {
        name: 'Nach dem Kauf',
        trigger: { type: 'tag_added', tag: 'sommerfest' },
        steps: [{ text: 'Hallo {{name}}, wie gefällt dir dein Einkauf bei uns?', delay: { amount: 1, unit: 'days' } }],
      },
    )) as { id: string }
    const activated = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}`,
      payload: { status: 'active' },
    })
    assert.equal(activated.statusCode, 200, activated.body)
    for (let i = 0; i < 3; i++) {
      const c = await contact(account)
      await setOptin(harness, account.accountId, c.id)
      const tagged = await account.request({
        method: 'POST',
        url: `/v1/contacts/${c.id}/tags`,
        payload: { tag: 'sommerfest' },
      })
      assert.equal(tagged.statusCode, 200, tagged.body)
    }
    const s = await stats(account, '7d')
    assert.equal(dayOf(s, '2026-05-03').followup_runs, 3)
    assert.equal(s.totals.followup_runs, 3)
  })
})
