import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import * as auto from '../../../test/helpers/automations.ts'
import type { TestAccount } from '../../../test/helpers/harness.ts'
import { pauseSending, resumeSending } from '../../platform/auth/accounts.service.ts'
import { sandboxOutboxOf } from '../channels/index.ts'

// Automations started from outside: the trigger route, pausing and deleting, webhook addresses and calendar feeds,
// and the step that enrolls a contact in a follow-up sequence.

auto.withAutomationsHarness()
let counter = 0

describe('trigger route, pause and deletion', () => {
  test('409 while not active; Idempotency-Key replays the first run; another account’s contact is 404', async () => {
    const account = await auto.sandboxAccount()
    const created = await auto.create(account, { trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] })
    const id = created.json().id
    const contactId = await auto.createContact(account)
    const post = (headers: Record<string, string> = {}, contact = contactId) =>
      account.request({
        method: 'POST',
        url: `/v1/automations/${id}/trigger`,
        payload: { contact_id: contact },
        headers,
      })
    const draft = await post()
    assert.equal(draft.statusCode, 409)
    assert.equal(auto.errorOf(draft).code, 'automation_not_active')
    await account.request({ method: 'POST', url: `/v1/automations/${id}/activate` })
    const first = await post({ 'idempotency-key': 'trigger-1' })
    const again = await post({ 'idempotency-key': 'trigger-1' })
    assert.equal(first.statusCode, 202)
    assert.equal(again.headers['idempotent-replayed'], 'true')
    assert.equal(again.json().run_id, first.json().run_id)
    assert.equal((await auto.runsOf(account, id)).length, 1)
    const stranger = await auto.createContact(await auto.sandboxAccount())
    assert.equal((await post({}, stranger)).statusCode, 404)
    const run = await account.request({ method: 'GET', url: `/v1/automations/${id}/runs/${first.json().run_id}` })
    assert.equal(run.statusCode, 200)
    assert.equal(run.json().state, 'running')
  })

  test('pausing holds runs before their next step; activating again lets them go on', async () => {
    const account = await auto.sandboxAccount()
    const automation = await auto.active(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'add_tag', tag: 'weiter' }],
    })
    const contactId = await auto.createContact(account)
    await auto.trigger(account, automation.id, contactId)
    await account.request({ method: 'POST', url: `/v1/automations/${automation.id}/pause` })
    await auto.drain()
    let [run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.deepEqual(await auto.tagsOf(account, contactId), [])
    await account.request({ method: 'POST', url: `/v1/automations/${automation.id}/activate` })
    await auto.drain()
    ;[run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.deepEqual(await auto.tagsOf(account, contactId), ['weiter'])
  })

  test('paused sending holds a send step; it goes once sending is resumed', async () => {
    const account = await auto.sandboxAccount()
    const template = await auto.approvedTemplate(account)
    const automation = await auto.active(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'send_template', template_id: template }],
    })
    const contactId = await auto.confirmedContact(account)
    await pauseSending(auto.harness.database.orm, account.accountId)
    await auto.trigger(account, automation.id, contactId)
    await auto.drain()
    let [run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.equal((await sandboxOutboxOf(auto.harness.database.orm, account.accountId, 'chat')).length, 0)
    await resumeSending(auto.harness.database.orm, account.accountId)
    auto.harness.clock.advance(10 * 60_000)
    await auto.drain()
    ;[run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.equal((await sandboxOutboxOf(auto.harness.database.orm, account.accountId, 'chat')).length, 1)
  })

  test('deleting a contact removes its runs (counted); a template in use cannot be deleted', async () => {
    const account = await auto.sandboxAccount()
    const template = await auto.approvedTemplate(account)
    const automation = await auto.active(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'wait', duration: { hours: 1 } },
        { type: 'send_template', template_id: template },
      ],
    })
    const contactId = await auto.createContact(account)
    await auto.trigger(account, automation.id, contactId)
    await auto.drain()
    const removed = await account.request({ method: 'DELETE', url: `/v1/contacts/${contactId}` })
    assert.equal(removed.statusCode, 200, removed.body)
    assert.equal(removed.json().removed.automation_runs, 1)
    assert.deepEqual(await auto.runsOf(account, automation.id), [])
    auto.harness.clock.advance(2 * auto.HOUR)
    await auto.drain()
    assert.equal((await sandboxOutboxOf(auto.harness.database.orm, account.accountId, 'chat')).length, 0)
    const refused = await account.request({ method: 'DELETE', url: `/v1/templates/${template}` })
    assert.equal(refused.statusCode, 409)
    assert.equal(auto.errorOf(refused).code, 'template_in_use')
    assert.match(auto.errorOf(refused).used_by[0], /automation "Willkommen"/)
  })
})

describe('webhook addresses of automations', () => {
  test('a POST with the secret finds or creates the contact and starts a run; the address shows its counts', async () => {
    const account = await auto.sandboxAccount()
    const automation = await auto.active(account, {
      trigger: { type: 'webhook' },
      steps: [{ type: 'add_tag', tag: 'shop-kauf' }],
    })
    assert.match(automation.webhook_url, /^http:\/\/herold\.test\/public\/automation-hooks\/[0-9a-f-]{36}\/[\w-]{32}$/)
    const path = new URL(automation.webhook_url).pathname
    let [address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
      .automation_webhooks
    assert.equal(address.kind, 'webhook')
    assert.equal(address.state, 'waiting_for_first_event')
    assert.equal(address.zustand, 'wartet_auf_verbindung')
    assert.equal(address.url, automation.webhook_url)

    const email = `kauf-${++counter}@example.com`
    const posted = await auto.harness.app.inject({
      method: 'POST',
      url: path,
      payload: { email, name: 'Kai Käufer', order: 17 },
    })
    assert.equal(posted.statusCode, 202, posted.body)
    await auto.drain()
    const [run] = await auto.runsOf(account, automation.id)
    assert.equal(run.id, posted.json().run_id)
    assert.equal(run.state, 'completed')
    const contact = await account.request({ method: 'GET', url: `/v1/contacts/${posted.json().contact_id}` })
    assert.equal(contact.json().contact.email, email)
    assert.equal(contact.json().contact.optin_email, 'none')
    assert.deepEqual(contact.json().contact.tags, ['shop-kauf'])
    ;[address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json().automation_webhooks
    assert.equal(address.state, 'running')
    assert.equal(address.zustand, 'laeuft')
    assert.equal(address.event_count, 1)
    assert.equal(address.anzahl_ereignisse, 1)
    assert.equal(address.art, 'webhook')
    assert.ok(address.first_event_at)
  })

  test('a wrong secret is 404 and stores nothing; no address is 422 with last_error; JSON only; size-limited', async () => {
    const account = await auto.sandboxAccount()
    const automation = await auto.active(account, {
      trigger: { type: 'webhook' },
      steps: [{ type: 'add_tag', tag: 'x' }],
    })
    const path = new URL(automation.webhook_url).pathname
    const wrong = await auto.harness.app.inject({
      method: 'POST',
      url: `${path.slice(0, -4)}AAAA`,
      payload: { email: 'a@b.de' },
    })
    assert.equal(wrong.statusCode, 404)
    assert.equal(auto.errorOf(wrong).code, 'not_found')
    const unknown = await auto.harness.app.inject({
      method: 'POST',
      url: '/public/automation-hooks/00000000-0000-4000-8000-000000000000/secret',
      payload: { email: 'a@b.de' },
    })
    assert.equal(unknown.statusCode, 404)
    const noAddress = await auto.harness.app.inject({ method: 'POST', url: path, payload: { order: 1 } })
    assert.equal(noAddress.statusCode, 422)
    assert.equal(auto.errorOf(noAddress).key, 'contact_address_missing')
    const form = await auto.harness.app.inject({
      method: 'POST',
      url: path,
      payload: 'email=a@b.de',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    assert.equal(form.statusCode, 415)
    const huge = await auto.harness.app.inject({
      method: 'POST',
      url: path,
      payload: { email: 'a@b.de', pad: 'x'.repeat(70_000) },
    })
    assert.equal(huge.statusCode, 413)
    assert.deepEqual(await auto.runsOf(account, automation.id), [])
    const [address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
      .automation_webhooks
    assert.match(address.last_error, /email or a phone/)
    assert.equal(address.letzter_fehler, address.last_error)
    assert.equal(address.event_count, 0)
  })

  test('a paused automation’s address is not_connected and refuses with 422; internal triggers are listed as internal', async () => {
    const account = await auto.sandboxAccount()
    const hook = await auto.active(account, { trigger: { type: 'webhook' }, steps: [{ type: 'add_tag', tag: 'x' }] })
    await account.request({ method: 'POST', url: `/v1/automations/${hook.id}/pause` })
    await auto.create(account, {
      name: 'Intern',
      trigger: { type: 'contact_created' },
      steps: [{ type: 'add_tag', tag: 'y' }],
    })
    const refused = await auto.harness.app.inject({
      method: 'POST',
      url: new URL(hook.webhook_url).pathname,
      payload: { email: 'z@b.de' },
    })
    assert.equal(refused.statusCode, 422)
    const addresses = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
      .automation_webhooks
    const byKind = new Map(addresses.map((a: auto.Json) => [a.kind, a]))
    assert.equal((byKind.get('webhook') as auto.Json).state, 'not_connected')
    assert.equal((byKind.get('webhook') as auto.Json).zustand, 'nicht_verbunden')
    assert.equal((byKind.get('internal') as auto.Json).state, 'internal')
    assert.equal((byKind.get('internal') as auto.Json).art, 'intern')
    assert.equal((byKind.get('internal') as auto.Json).url, null)
  })

  test('a calendar feed starts a run before each event with an attendee (offset), and a reschedule moves it', async () => {
    let feedText = ''
    const feed = http.createServer((_request, response) => {
      response.setHeader('content-type', 'text/calendar')
      response.end(feedText)
    })
    await new Promise<void>((resolve) => feed.listen(0, '127.0.0.1', resolve))
    try {
      const start = new Date(auto.harness.clock.now().getTime() + 3 * 24 * auto.HOUR)
      const stamp = (d: Date) =>
        d
          .toISOString()
          .replace(/[-:]/g, '')
          .replace(/\.\d{3}/, '')
      const email = `termin-${++counter}@example.com`
      const calendar = (at: Date) =>
        [
          'BEGIN:VCALENDAR',
          'VERSION:2.0',
          'PRODID:-//Praxis//DE',
          'BEGIN:VEVENT',
          'UID:t-1@praxis',
          `DTSTART:${stamp(at)}`,
          'SUMMARY:Kontrolltermin',
          `ATTENDEE;CN=Tina Termin:mailto:${email}`,
          'END:VEVENT',
          'END:VCALENDAR',
          '',
        ].join('\r\n')
      feedText = calendar(start)
      const account = await auto.sandboxAccount()
      const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/praxis.ics`
      const automation = await auto.active(account, {
        trigger: { type: 'calendar', feed_url: url, offset_minutes: 24 * 60, poll_minutes: 60 },
        steps: [{ type: 'add_tag', tag: 'erinnert' }],
      })
      await auto.drain()
      let [address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
        .automation_webhooks
      assert.equal(address.kind, 'calendar')
      assert.equal(address.art, 'kalender')
      assert.equal(address.state, 'running')
      assert.equal(address.event_count, 1)
      assert.deepEqual(await auto.runsOf(account, automation.id), [])

      // rescheduled a day later: the first start is dropped, the new one is a day later
      feedText = calendar(new Date(start.getTime() + 24 * auto.HOUR))
      auto.harness.clock.advance(auto.HOUR + 1000)
      await auto.drain()
      auto.harness.clock.advance(2 * 24 * auto.HOUR - auto.HOUR)
      await auto.drain()
      assert.deepEqual(await auto.runsOf(account, automation.id), [])
      auto.harness.clock.advance(24 * auto.HOUR)
      await auto.drain()
      const runs = await auto.runsOf(account, automation.id)
      assert.equal(runs.length, 1)
      assert.equal(runs[0].source, 'calendar')
      assert.equal(runs[0].state, 'completed')
      const contact = await account.request({ method: 'GET', url: `/v1/contacts/${runs[0].contact_id}` })
      assert.equal(contact.json().contact.email, email)
      assert.deepEqual(contact.json().contact.tags, ['erinnert'])
      ;[address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json().automation_webhooks
      assert.equal(address.last_error, null)

      feedText = 'not a calendar'
      auto.harness.clock.advance(2 * auto.HOUR)
      await auto.drain()
      ;[address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json().automation_webhooks
      assert.match(address.last_error, /not valid iCalendar/)
    } finally {
      await new Promise((resolve) => feed.close(resolve))
    }
  })
})

describe('automations: the enroll_followup step', () => {
  async function sequence(account: TestAccount, name: string, trigger = { type: 'tag_added' as const, tag: 'nie' }) {
    return auto.harness.services.followups.create(
      { accountId: account.accountId, account: { language: 'de' } },
      {
        name,
        trigger,
        steps: [{ text: 'Hallo {{name}}, hier ist dein erster Tipp.', delay: { amount: 2, unit: 'hours' } }],
      },
    )
  }

  test('a follow-up sequence that does not exist in the account is a 400 automation_invalid on create and update', async () => {
    const account = await auto.sandboxAccount()
    const other = await auto.sandboxAccount()
    const foreign = await sequence(other, 'Fremd')
    for (const followup_id of [foreign.id, '00000000-0000-4000-8000-000000000000']) {
      const response = await auto.create(account, {
        trigger: { type: 'manual' },
        steps: [{ type: 'enroll_followup', followup_id }],
      })
      assert.equal(response.statusCode, 400, response.body)
      assert.equal(auto.errorOf(response).code, 'bad_request')
      assert.equal(auto.errorOf(response).key, 'automation_invalid')
      assert.match(auto.errorOf(response).message, /follow-up sequence/)
    }
    const malformed = await auto.create(account, { trigger: { type: 'manual' }, steps: [{ type: 'enroll_followup' }] })
    assert.equal(malformed.statusCode, 400)
    const own = await sequence(account, 'Eigen')
    const created = await auto.create(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'enroll_followup', followup_id: own.id }],
    })
    assert.equal(created.statusCode, 200, created.body)
    assert.deepEqual(created.json().steps, [{ type: 'enroll_followup', followup_id: own.id }])
    const changed = await account.request({
      method: 'PATCH',
      url: `/v1/automations/${created.json().id}`,
      payload: { steps: [{ type: 'enroll_followup', followup_id: foreign.id }] },
    })
    assert.equal(changed.statusCode, 400)
    assert.equal(auto.errorOf(changed).key, 'automation_invalid')
  })

  test('a run enrolls the contact: its step goes out on time; not active or already enrolled is skipped with the reason', async () => {
    const account = await auto.sandboxAccount()
    const target = await sequence(account, 'Ziel')
    const drafted = await sequence(account, 'Entwurf')
    const activated = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${target.id}`,
      payload: { status: 'active' },
    })
    assert.equal(activated.statusCode, 200, activated.body)
    const automation = await auto.active(account, {
      trigger: { type: 'contact_created' },
      steps: [
        { type: 'enroll_followup', followup_id: target.id },
        { type: 'enroll_followup', followup_id: drafted.id },
        { type: 'enroll_followup', followup_id: target.id },
      ],
    })
    await auto.confirmedContact(account)
    await auto.drain()
    const [run] = await auto.runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.deepEqual(
      run.steps.map((s: auto.Json) => [s.type, s.result, s.reason]),
      [
        ['enroll_followup', 'done', null],
        ['enroll_followup', 'skipped', 'sequence_not_active'],
        ['enroll_followup', 'skipped', 'already_enrolled'],
      ],
    )
    const view = (await account.request({ method: 'GET', url: `/v1/followups/${target.id}` })).json().followup
    assert.deepEqual(view.enrollments, { active: 1, completed: 0, stopped: 0 })
    auto.harness.clock.advance(2 * auto.HOUR + 1000)
    await auto.drain()
    const sent = (await account.request({ method: 'GET', url: `/v1/followups/${target.id}` })).json().followup
    assert.equal(sent.steps[0].counts.sent, 1)
    assert.deepEqual(sent.enrollments, { active: 0, completed: 1, stopped: 0 })
    const outbox = await sandboxOutboxOf(auto.harness.database.orm, account.accountId, 'chat')
    assert.equal(outbox.length, 1)
  })
})
