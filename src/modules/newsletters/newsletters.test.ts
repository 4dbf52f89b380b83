import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createTestAccount, type Harness } from '../../../test/helpers/harness.ts'
import { HOUR, type Json, newsletterHelpers } from '../../../test/helpers/newsletters.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { pauseSending, resumeSending } from '../../platform/auth/accounts.service.ts'
import { jobRunnerFor } from '../../platform/jobs/runner.ts'
import { moduleJobs } from '../../services.ts'
import { templatesModule } from '../templates/index.ts'
import { newslettersModule } from './index.ts'

let harness: Harness

// jobs run only inside drain(), so a test sees each state between steps
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

const { deps, drain, sandboxAccount, contact, draft, inHours, schedule, status } = newsletterHelpers(() => harness)

describe('newsletters: the resource', () => {
  test('POST creates a draft (201) that is never sent; name defaults to the subject; GET, list newest first', async () => {
    const account = await sandboxAccount()
    const first = await draft(account)
    harness.clock.advance(1000)
    assert.equal(first.status, 'draft')
    assert.equal(first.name, 'Frühlingsangebote')
    assert.equal(first.channel, 'chat')
    assert.equal(first.scheduled_at, null)
    assert.equal(first.cta, null)
    assert.equal(first.segment, null)
    const second = await draft(account, { name: 'Zweiter', channel: 'chat' })
    const got = await account.request({ method: 'GET', url: `/v1/newsletters/${first.id}` })
    assert.equal(got.statusCode, 200)
    assert.equal(got.json().newsletter.id, first.id)
    const list = (await account.request({ method: 'GET', url: '/v1/newsletters?limit=1' })).json()
    assert.deepEqual(
      list.newsletters.map((n: Json) => n.id),
      [second.id],
    )
    assert.equal(list.has_more, true)
    assert.equal(list.next_offset, 1)
    await drain()
    assert.equal((await status(account, first.id)).recipients, 0, 'creation sends nothing')
  })

  test('field rules: subject and content required, limits, channel only chat: 400 and nothing stored', async () => {
    const account = await sandboxAccount()
    for (const payload of [
      { content: 'x' },
      { subject: 'x' },
      { subject: 'x'.repeat(201), content: 'x' },
      { subject: 'x', content: 'x'.repeat(20_001) },
      { subject: 'x', content: 'x', name: 'n'.repeat(201) },
      { subject: 'x', content: 'x', channel: 'email' },
    ]) {
      const response = await account.request({ method: 'POST', url: '/v1/newsletters', payload })
      assert.equal(response.statusCode, 400, JSON.stringify(payload))
      assert.equal(response.json().error.code, 'bad_request')
    }
    const list = (await account.request({ method: 'GET', url: '/v1/newsletters' })).json()
    assert.equal(list.newsletters.length, 0)
    const long = await account.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 's'.repeat(200), content: 'c'.repeat(20_000) },
    })
    assert.equal(long.statusCode, 201, 'the limits themselves are allowed')
  })

  test('PATCH cta and segment: at least one; a segment with unknown tags is a 400 naming them; recipients_estimate follows', async () => {
    const account = await sandboxAccount()
    await contact(account, 'confirmed', ['stamm'])
    await contact(account, 'confirmed', ['stamm', 'vip'])
    await contact(account, 'confirmed', [])
    await contact(account, 'pending', ['stamm'])
    const newsletter = await draft(account)
    assert.equal(newsletter.recipients_estimate, 3, 'null segment: every confirmed contact')
    const empty = await account.request({ method: 'PATCH', url: `/v1/newsletters/${newsletter.id}`, payload: {} })
    assert.equal(empty.statusCode, 400)
    const unknown = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { segment: { tags_any: ['stamm', 'gibtsnicht', 'auchnicht'] } },
    })
    assert.equal(unknown.statusCode, 400)
    assert.deepEqual(unknown.json().error.tags, ['gibtsnicht', 'auchnicht'])
    assert.match(unknown.json().error.message, /gibtsnicht, auchnicht/)
    const cases: Array<[Json, number]> = [
      [{ tags_any: ['stamm'] }, 2],
      [{ tags_all: ['stamm', 'vip'] }, 1],
      [{ tags_any: ['stamm'], tags_exclude: ['vip'] }, 1],
      [{ tags_exclude: ['stamm'] }, 1],
    ]
    for (const [segment, expected] of cases) {
      const patched = await account.request({
        method: 'PATCH',
        url: `/v1/newsletters/${newsletter.id}`,
        payload: { segment },
      })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.deepEqual(patched.json().newsletter.segment, segment)
      assert.equal(patched.json().newsletter.recipients_estimate, expected, JSON.stringify(segment))
    }
    const cta = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { cta: { text: 'Zum Shop', url: 'https://shop.example/fruehling' }, segment: null },
    })
    assert.equal(cta.statusCode, 200)
    assert.deepEqual(cta.json().newsletter.cta, { text: 'Zum Shop', url: 'https://shop.example/fruehling' })
    assert.equal(cta.json().newsletter.segment, null)
    const tooLong = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { cta: { text: 't'.repeat(201), url: 'https://shop.example' } },
    })
    assert.equal(tooLong.statusCode, 400)
    const removed = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { cta: null },
    })
    assert.equal(removed.json().newsletter.cta, null)
  })

  test('cta.url: 2000 characters are accepted, 2001 are refused with 400 bad_request and nothing changes', async () => {
    const account = await sandboxAccount()
    const newsletter = await draft(account)
    const base = 'https://shop.example/'
    const longest = { text: 'Zum Shop', url: base + 'a'.repeat(2000 - base.length) }
    assert.equal(longest.url.length, 2000)
    const accepted = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { cta: longest },
    })
    assert.equal(accepted.statusCode, 200, accepted.body)
    assert.deepEqual(accepted.json().newsletter.cta, longest)
    const refused = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { cta: { text: 'Zum Shop', url: `${longest.url}b` } },
    })
    assert.equal(refused.statusCode, 400, refused.body)
    assert.equal(refused.json().error.code, 'bad_request')
    assert.equal(typeof refused.json().error.key, 'string')
    assert.match(refused.json().error.message, /url/)
    const after = await account.request({ method: 'GET', url: `/v1/newsletters/${newsletter.id}` })
    assert.deepEqual(after.json().newsletter.cta, longest, 'the 2000-character address is kept')
  })

  test("another account's newsletter is a 404 on every route; scopes: write grants neither schedule nor delete", async () => {
    const owner = await sandboxAccount()
    const other = await sandboxAccount()
    const newsletter = await draft(owner)
    for (const [method, url, payload] of [
      ['GET', `/v1/newsletters/${newsletter.id}`],
      ['GET', `/v1/newsletters/${newsletter.id}/status`],
      ['PATCH', `/v1/newsletters/${newsletter.id}`, { cta: null }],
      ['DELETE', `/v1/newsletters/${newsletter.id}`],
      ['POST', `/v1/newsletters/${newsletter.id}/schedule`, { scheduled_at: inHours(2) }],
      ['POST', `/v1/newsletters/${newsletter.id}/cancel`],
      ['GET', '/v1/newsletters/not-a-uuid'],
    ] as Array<[string, string, Json?]>) {
      const response = await other.request({ method: method as 'GET', url, ...(payload ? { payload } : {}) })
      assert.equal(response.statusCode, 404, `${method} ${url}`)
      assert.equal(response.json().error.code, 'not_found')
    }
    const writer = await createTestAccount(harness, { scopes: ['newsletters:read', 'newsletters:write'] })
    const own = (
      await writer.request({ method: 'POST', url: '/v1/newsletters', payload: { subject: 's', content: 'c' } })
    ).json().newsletter
    for (const [method, url, payload] of [
      ['POST', `/v1/newsletters/${own.id}/schedule`, { scheduled_at: inHours(2) }],
      ['POST', `/v1/newsletters/${own.id}/cancel`],
      ['DELETE', `/v1/newsletters/${own.id}`],
    ] as Array<[string, string, Json?]>) {
      const response = await writer.request({ method: method as 'GET', url, ...(payload ? { payload } : {}) })
      assert.equal(response.statusCode, 403, `${method} ${url}`)
      assert.equal(response.json().error.key, 'apikey_scope_fehlt')
    }
  })
})

describe('newsletters: scheduling', () => {
  test('time rules: past or more than a year ahead 422, malformed or zoneless 400; draft → scheduled → rescheduled → cancel → draft', async () => {
    const account = await sandboxAccount()
    const newsletter = await draft(account)
    // now itself is not in the future; a year and a millisecond is more than a year ahead
    const yearAhead = new Date(harness.clock.now())
    yearAhead.setUTCFullYear(yearAhead.getUTCFullYear() + 1)
    const justPastAYear = new Date(yearAhead.getTime() + 1).toISOString()
    for (const bad of [inHours(-1), inHours(0), justPastAYear, inHours(24 * 367)]) {
      const response = await schedule(account, newsletter.id, bad)
      assert.equal(response.statusCode, 422, bad)
      assert.equal(response.json().error.code, 'scheduled_at_invalid')
    }
    for (const bad of ['morgen', '2030-01-01T09:00:00', '2030-13-01T09:00:00Z']) {
      const response = await schedule(account, newsletter.id, bad)
      assert.equal(response.statusCode, 400, bad)
    }
    const boundary = await draft(account)
    const atAYear = await schedule(account, boundary.id, yearAhead.toISOString())
    assert.equal(atAYear.statusCode, 200, `exactly a year ahead is at most a year ahead: ${atAYear.body}`)
    assert.equal(
      (await account.request({ method: 'GET', url: `/v1/newsletters/${newsletter.id}` })).json().newsletter.status,
      'draft',
    )
    const at = inHours(3)
    const scheduled = await schedule(account, newsletter.id, at, 'plan-1')
    assert.equal(scheduled.statusCode, 200, scheduled.body)
    const view = scheduled.json().newsletter
    assert.equal(view.status, 'scheduled')
    assert.equal(view.scheduled_at, at)
    assert.ok(view.template_id, 'a marketing template carries it')
    assert.equal(view.template_status, 'approved', 'the sandbox approves at once')
    const replay = await schedule(account, newsletter.id, at, 'plan-1')
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    const template = (await account.request({ method: 'GET', url: `/v1/templates/${view.template_id}` })).json()
      .template
    assert.equal(template.purpose, 'marketing')
    assert.match(template.content, /^\*Frühlingsangebote\*\n\nHallo \{\{name\}\}/)
    const later = inHours(5)
    const rescheduled = await schedule(account, newsletter.id, later)
    assert.equal(rescheduled.statusCode, 200)
    assert.equal(rescheduled.json().newsletter.scheduled_at, later)
    assert.equal(rescheduled.json().newsletter.template_id, view.template_id, 'the same template')
    const cancelled = await account.request({ method: 'POST', url: `/v1/newsletters/${newsletter.id}/cancel` })
    assert.equal(cancelled.statusCode, 200)
    assert.equal(cancelled.json().newsletter.status, 'draft')
    assert.equal(cancelled.json().newsletter.scheduled_at, null)
    const again = await account.request({ method: 'POST', url: `/v1/newsletters/${newsletter.id}/cancel` })
    assert.equal(again.statusCode, 400, 'only a scheduled newsletter can be cancelled')
    // the cancelled schedule's start never runs
    harness.clock.advance(6 * HOUR)
    await drain()
    assert.equal((await status(account, newsletter.id)).status, 'draft')
  })

  test('a text the template check refuses (over 1024 characters) is a 400 on schedule and stays a draft', async () => {
    const account = await sandboxAccount()
    const newsletter = await draft(account, { content: 'Lang '.repeat(300) })
    const response = await schedule(account, newsletter.id, inHours(2))
    assert.equal(response.statusCode, 400, response.body)
    assert.equal(response.json().error.key, 'newsletter_template_invalid')
    const after = (await account.request({ method: 'GET', url: `/v1/newsletters/${newsletter.id}` })).json().newsletter
    assert.equal(after.status, 'draft')
    assert.equal(after.template_id, null)
  })

  test('DELETE of a draft or scheduled newsletter removes it and its start; never "send now"', async () => {
    const account = await sandboxAccount()
    await contact(account, 'confirmed')
    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    const deleted = await account.request({ method: 'DELETE', url: `/v1/newsletters/${newsletter.id}` })
    assert.equal(deleted.statusCode, 200)
    assert.deepEqual(deleted.json(), { id: newsletter.id, deleted: true })
    assert.equal((await account.request({ method: 'GET', url: `/v1/newsletters/${newsletter.id}` })).statusCode, 404)
    harness.clock.advance(2 * HOUR)
    await drain()
    const sends = await harness.database.query('SELECT id FROM template_sends WHERE account_id = $1', [
      account.accountId,
    ])
    assert.equal(sends.length, 0)
    for (const url of [`/v1/newsletters/${newsletter.id}/send`, '/v1/newsletters/send']) {
      assert.equal((await account.request({ method: 'POST', url, payload: {} })).statusCode, 404)
    }
  })
})

describe('newsletters: sending', () => {
  test('at its time it goes to confirmed contacts of the segment only, through the send pipeline, and ends sent', async () => {
    const account = await sandboxAccount()
    const erika = await contact(account, 'confirmed', ['stamm'], 'Erika Muster')
    const max = await contact(account, 'confirmed', ['stamm'], 'Max Muster')
    await contact(account, 'none', ['stamm'])
    await contact(account, 'pending', ['stamm'])
    await contact(account, 'opted_out', ['stamm'])
    await contact(account, 'confirmed', ['andere'])
    const newsletter = await draft(account)
    await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { segment: { tags_any: ['stamm'] }, cta: { text: 'Zum Shop', url: 'https://shop.example/' } },
    })
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    await drain()
    assert.equal((await status(account, newsletter.id)).recipients, 0, 'nothing before its time')
    harness.clock.advance(HOUR + 1000)
    await drain()
    const sending = await status(account, newsletter.id)
    assert.equal(sending.status, 'sending')
    assert.equal(sending.recipients, 2)
    const sent = await harness.database.query<{ contact_id: string; status: string }>(
      `SELECT contact_id, status FROM template_sends WHERE account_id = $1 AND origin = 'newsletter' AND origin_id = $2`,
      [account.accountId, newsletter.id],
    )
    assert.deepEqual(sent.map((s) => s.contact_id).sort(), [erika, max].sort())
    assert.ok(
      sent.every((s) => ['sent', 'delivered', 'read'].includes(s.status)),
      JSON.stringify(sent),
    )
    const messages = (await account.request({ method: 'GET', url: '/v1/messages?direction=outbound&limit=100' })).json()
    const texts: string[] = messages.messages.map((m: Json) => String(m.text))
    assert.equal(texts.length, 2, `nobody else got it: ${JSON.stringify(messages.messages)}`)
    assert.ok(
      texts.some((t) => t.includes('Hallo Erika, unsere Tulpen sind da.')),
      JSON.stringify(texts),
    )
    assert.ok(
      texts.some((t) => t.includes('Hallo Max, unsere Tulpen sind da.')),
      JSON.stringify(texts),
    )
    harness.clock.advance(60_000)
    await drain()
    const done = await status(account, newsletter.id)
    assert.equal(done.status, 'sent')
    assert.equal(done.phase, 'done')
    assert.equal(done.lage, 'done')
    assert.equal(done.counts.queued, 0)
    assert.equal(done.counts.wartet, 0)
    assert.equal(done.counts.sent + done.counts.delivered + done.counts.read, 2)
    // a sent newsletter is locked
    const patch = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { cta: null },
    })
    assert.equal(patch.statusCode, 400)
    assert.equal(patch.json().error.key, 'newsletter_locked')
    const del = await account.request({ method: 'DELETE', url: `/v1/newsletters/${newsletter.id}` })
    assert.equal(del.statusCode, 400)
    const resched = await schedule(account, newsletter.id, inHours(2))
    assert.equal(resched.statusCode, 409)
  })

  test('a scheduled newsletter whose button or header image changes gets a new template, submitted, and goes out with it', async () => {
    const account = await sandboxAccount()
    await contact(account, 'confirmed')
    const newsletter = await draft(account)
    await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { cta: { text: 'Zum Shop', url: 'https://shop.example/' } },
    })
    const scheduled = await schedule(account, newsletter.id, inHours(1))
    assert.equal(scheduled.statusCode, 200, scheduled.body)
    const first = scheduled.json().newsletter.template_id as string
    assert.ok(first)
    await drain()
    const patched = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${newsletter.id}`,
      payload: { cta: { text: 'Jetzt ansehen', url: 'https://shop.example/tulpen' } },
    })
    assert.equal(patched.statusCode, 200, patched.body)
    const after = patched.json().newsletter
    assert.equal(after.status, 'scheduled')
    assert.ok(after.template_id && after.template_id !== first, 'a new template for the new button')
    const old = await account.request({ method: 'GET', url: `/v1/templates/${first}` })
    assert.equal(old.statusCode, 404, 'the old template is gone')
    const made = await account.request({ method: 'GET', url: `/v1/templates/${after.template_id}` })
    assert.equal(made.statusCode, 200, made.body)
    assert.equal(made.json().template.buttons[0].text, 'Jetzt ansehen')
    assert.notEqual(made.json().template.provider_status, 'draft', 'submitted for approval')
    // a draft's button changes without a template: it gets one when scheduled
    const other = await draft(account)
    const draftPatch = await account.request({
      method: 'PATCH',
      url: `/v1/newsletters/${other.id}`,
      payload: { cta: { text: 'Mehr', url: 'https://shop.example/' } },
    })
    assert.equal(draftPatch.json().newsletter.template_id, null)
    harness.clock.advance(HOUR + 1000)
    await drain()
    harness.clock.advance(60_000)
    await drain()
    const done = await status(account, newsletter.id)
    assert.equal(done.status, 'sent', JSON.stringify(done))
    assert.equal(done.counts.sent + done.counts.delivered + done.counts.read, 1)
    const sends = await harness.database.query<{ template_id: string }>(
      `SELECT template_id FROM template_sends WHERE account_id = $1 AND origin = 'newsletter' AND origin_id = $2`,
      [account.accountId, newsletter.id],
    )
    assert.deepEqual(
      sends.map((s) => s.template_id),
      [after.template_id],
    )
  })

  test('while sending is paused it waits and says why; resumed, it goes out', async () => {
    const account = await sandboxAccount()
    await contact(account, 'confirmed')
    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    await pauseSending(harness.database.orm, account.accountId)
    harness.clock.advance(HOUR + 1000)
    await drain()
    const waiting = await status(account, newsletter.id)
    assert.equal(waiting.status, 'scheduled')
    assert.equal(waiting.phase, 'waiting_for_sending')
    assert.equal(waiting.stop_reason, 'subscription_locked')
    assert.equal(waiting.abbruch_grund, 'subscription_locked')
    assert.equal(waiting.resumable, true)
    assert.ok(waiting.resumes_at)
    assert.equal(waiting.recipients, 0)
    await resumeSending(harness.database.orm, account.accountId)
    harness.clock.advance(2 * 60_000)
    await drain()
    harness.clock.advance(60_000)
    await drain()
    const done = await status(account, newsletter.id)
    assert.equal(done.status, 'sent')
    assert.equal(done.recipients, 1)
  })

  test('paused after its fan-out, its sends wait (not skipped) and say why; resumed, they go out', async () => {
    const account = await sandboxAccount()
    for (let i = 0; i < 3; i++) await contact(account, 'confirmed')
    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    harness.clock.advance(HOUR + 1000)
    // only the template review and the newsletter's own jobs: the fan-out writes the sends, none of them runs yet
    const fanout = jobRunnerFor(deps(), moduleJobs([templatesModule, newslettersModule], harness.services))
    const stopFanout = await fanout.start()
    await fanout.runner.drain()
    await stopFanout()
    assert.equal((await status(account, newsletter.id)).counts.queued, 3)
    await pauseSending(harness.database.orm, account.accountId)
    await drain()
    harness.clock.advance(60_000)
    await drain()
    const waiting = await status(account, newsletter.id)
    assert.equal(waiting.status, 'sending')
    assert.equal(waiting.phase, 'waiting_for_sending')
    assert.equal(waiting.stop_reason, 'subscription_locked')
    assert.equal(waiting.can_resume, true)
    assert.ok(waiting.resumes_at)
    assert.equal(waiting.counts.queued, 3)
    assert.equal(waiting.counts.skipped, 0)
    await resumeSending(harness.database.orm, account.accountId)
    harness.clock.advance(60_000)
    await drain()
    harness.clock.advance(60_000)
    await drain()
    const done = await status(account, newsletter.id)
    assert.equal(done.status, 'sent')
    assert.equal(done.phase, 'done')
    assert.equal(done.stop_reason, null)
    assert.equal(done.counts.read, 3, 'the sandbox delivers and reads at once')
    assert.equal(done.counts.skipped, 0)
  })

  test("the number's daily limit: it pauses at the limit and resumes by itself when the 24-hour window allows", async () => {
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 1000 } })
    await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox', dailyLimit: 2 })
    for (let i = 0; i < 3; i++) await contact(account, 'confirmed')
    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    harness.clock.advance(HOUR + 1000)
    const firstSends = harness.clock.now().getTime()
    await drain()
    harness.clock.advance(60_000)
    await drain()
    const paused = await status(account, newsletter.id)
    assert.equal(paused.status, 'sending')
    assert.equal(paused.phase, 'waiting_for_sending')
    assert.equal(paused.stop_reason, 'daily_limit_reached')
    assert.equal(paused.daily_limit, 2)
    assert.equal(paused.tageslimit, 2)
    assert.equal(paused.counts.queued, 1)
    assert.equal(paused.counts.read + paused.counts.delivered + paused.counts.sent, 2)
    const resumesAt = Date.parse(paused.resumes_at)
    assert.ok(
      resumesAt >= firstSends + 24 * HOUR && resumesAt <= firstSends + 24 * HOUR + 5 * 60_000,
      paused.resumes_at,
    )
    // an hour before the window has room: still waiting
    harness.clock.advance(22 * HOUR)
    await drain()
    assert.equal((await status(account, newsletter.id)).counts.queued, 1)
    harness.clock.advance(2 * HOUR)
    await drain()
    harness.clock.advance(60_000)
    await drain()
    const done = await status(account, newsletter.id)
    assert.equal(done.status, 'sent')
    assert.equal(done.counts.skipped + done.counts.failed, 0)
    assert.deepEqual(await harness.services.channels.dailyWindow(account.accountId), {
      limit: 2,
      used: 1,
      resumesAt: null,
    })
  })

  test("the sandbox refuses a template to a new customer beyond the number's daily limit (131048), as WhatsApp does", async () => {
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 1000 } })
    const channels = harness.services.channels
    await channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox', dailyLimit: 1 })
    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    await drain()
    const [{ template_id: templateId }] = await harness.database.query<{ template_id: string }>(
      'SELECT template_id FROM newsletters WHERE id = $1',
      [newsletter.id],
    )
    const [{ provider_name: name, language }] = await harness.database.query<{
      provider_name: string
      language: string
    }>('SELECT provider_name, language FROM templates WHERE id = $1', [templateId])
    const send = async (contactId: string, to: string) =>
      channels.sendTemplate(account.accountId, {
        contactId,
        to,
        name,
        language,
        parameters: ['Erika'],
        text: 'Hallo Erika',
      })
    const first = await contact(account, 'confirmed')
    const second = await contact(account, 'confirmed')
    const phoneOf = async (id: string) =>
      (await harness.database.query<{ phone: string }>('SELECT phone FROM contacts WHERE id = $1', [id]))[0].phone
    assert.equal((await send(first, await phoneOf(first))).ok, true)
    assert.equal((await send(first, await phoneOf(first))).ok, true, 'the same customer again: no new conversation')
    const refused = await send(second, await phoneOf(second))
    assert.equal(refused.ok, false)
    assert.equal(!refused.ok && refused.error.providerCode, '131048')
    harness.clock.advance(24 * HOUR + 1000)
    assert.equal((await send(second, await phoneOf(second))).ok, true)
  })

  test('the monthly quota: the rest are skipped with reason limit_reached and counted', async () => {
    const account = await sandboxAccount({ messagesPerMonth: 2 })
    for (let i = 0; i < 4; i++) await contact(account, 'confirmed')
    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    harness.clock.advance(HOUR + 1000)
    await drain()
    harness.clock.advance(60_000)
    await drain()
    const done = await status(account, newsletter.id)
    assert.equal(done.status, 'sent')
    assert.equal(done.recipients, 4)
    assert.equal(done.counts.skipped, 2)
    assert.equal(done.counts.uebersprungen, 2)
    assert.deepEqual(done.skip_reasons, { limit_reached: 2 })
  })
})
