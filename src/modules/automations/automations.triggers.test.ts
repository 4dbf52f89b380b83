import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import {
  active,
  approvedTemplate,
  confirm,
  create,
  createContact,
  drain,
  errorOf,
  HOUR,
  harness,
  type Json,
  runsOf,
  sandboxAccount,
  tagsOf,
  withAutomationsHarness,
} from '../../../test/helpers/automations.ts'
import type { TestAccount } from '../../../test/helpers/harness.ts'
import { pauseSending, resumeSending } from '../../platform/auth/accounts.service.ts'
import { sandboxOutboxOf } from '../channels/index.ts'

// Automations started from outside: the trigger route, pausing and deleting, webhook addresses and calendar feeds,
// and the step that enrolls a contact in a follow-up sequence.

withAutomationsHarness()
let counter = 0

describe('trigger route, pause and deletion', () => {
  test('409 while not active; Idempotency-Key replays the first run; another account’s contact is 404', async () => {
    const account = await sandboxAccount()
    const created = await create(account, { trigger: { type: 'manual' }, steps: [{ type: 'add_tag', tag: 'a' }] })
    const id = created.json().id
    const contactId = await createContact(account)
    const trigger = (headers: Record<string, string> = {}, contact = contactId) =>
      account.request({
        method: 'POST',
        url: `/v1/automations/${id}/trigger`,
        payload: { contact_id: contact },
        headers,
      })
    const draft = await trigger()
    assert.equal(draft.statusCode, 409)
    assert.equal(errorOf(draft).code, 'automation_not_active')
    await account.request({ method: 'POST', url: `/v1/automations/${id}/activate` })
    const first = await trigger({ 'idempotency-key': 'trigger-1' })
    const again = await trigger({ 'idempotency-key': 'trigger-1' })
    assert.equal(first.statusCode, 202)
    assert.equal(again.headers['idempotent-replayed'], 'true')
    assert.equal(again.json().run_id, first.json().run_id)
    assert.equal((await runsOf(account, id)).length, 1)
    const stranger = await createContact(await sandboxAccount())
    assert.equal((await trigger({}, stranger)).statusCode, 404)
    const run = await account.request({ method: 'GET', url: `/v1/automations/${id}/runs/${first.json().run_id}` })
    assert.equal(run.statusCode, 200)
    assert.equal(run.json().state, 'running')
  })

  test('pausing holds runs before their next step; activating again lets them go on', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'add_tag', tag: 'weiter' }],
    })
    const contactId = await createContact(account)
    await account.request({
      method: 'POST',
      url: `/v1/automations/${automation.id}/trigger`,
      payload: { contact_id: contactId },
    })
    await account.request({ method: 'POST', url: `/v1/automations/${automation.id}/pause` })
    await drain()
    let [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.deepEqual(await tagsOf(account, contactId), [])
    await account.request({ method: 'POST', url: `/v1/automations/${automation.id}/activate` })
    await drain()
    ;[run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.deepEqual(await tagsOf(account, contactId), ['weiter'])
  })

  test('paused sending holds a send step; it goes once sending is resumed', async () => {
    const account = await sandboxAccount()
    const template = await approvedTemplate(account)
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [{ type: 'send_template', template_id: template }],
    })
    const contactId = await createContact(account)
    await confirm(account, contactId)
    await pauseSending(harness.database.orm, account.accountId)
    await account.request({
      method: 'POST',
      url: `/v1/automations/${automation.id}/trigger`,
      payload: { contact_id: contactId },
    })
    await drain()
    let [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'waiting')
    assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).length, 0)
    await resumeSending(harness.database.orm, account.accountId)
    harness.clock.advance(10 * 60_000)
    await drain()
    ;[run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).length, 1)
  })

  test('deleting a contact removes its runs (counted); a template in use cannot be deleted', async () => {
    const account = await sandboxAccount()
    const template = await approvedTemplate(account)
    const automation = await active(account, {
      trigger: { type: 'manual' },
      steps: [
        { type: 'wait', duration: { hours: 1 } },
        { type: 'send_template', template_id: template },
      ],
    })
    const contactId = await createContact(account)
    await account.request({
      method: 'POST',
      url: `/v1/automations/${automation.id}/trigger`,
      payload: { contact_id: contactId },
    })
    await drain()
    const removed = await account.request({ method: 'DELETE', url: `/v1/contacts/${contactId}` })
    assert.equal(removed.statusCode, 200, removed.body)
    assert.equal(removed.json().removed.automation_runs, 1)
    assert.deepEqual(await runsOf(account, automation.id), [])
    harness.clock.advance(2 * HOUR)
    await drain()
    assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).length, 0)
    const refused = await account.request({ method: 'DELETE', url: `/v1/templates/${template}` })
    assert.equal(refused.statusCode, 409)
    assert.equal(errorOf(refused).code, 'template_in_use')
    assert.match(errorOf(refused).used_by[0], /automation "Willkommen"/)
  })
})

describe('webhook addresses of automations', () => {
  test('a POST with the secret finds or creates the contact and starts a run; the address shows its counts', async () => {
    const account = await sandboxAccount()
    const automation = await active(account, {
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
    const posted = await harness.app.inject({
      method: 'POST',
      url: path,
      payload: { email, name: 'Kai Käufer', order: 17 },
    })
    assert.equal(posted.statusCode, 202, posted.body)
    await drain()
    const [run] = await runsOf(account, automation.id)
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
    const account = await sandboxAccount()
    const automation = await active(account, { trigger: { type: 'webhook' }, steps: [{ type: 'add_tag', tag: 'x' }] })
    const path = new URL(automation.webhook_url).pathname
    const wrong = await harness.app.inject({
      method: 'POST',
      url: `${path.slice(0, -4)}AAAA`,
      payload: { email: 'a@b.de' },
    })
    assert.equal(wrong.statusCode, 404)
    assert.equal(errorOf(wrong).code, 'not_found')
    const unknown = await harness.app.inject({
      method: 'POST',
      url: '/public/automation-hooks/00000000-0000-4000-8000-000000000000/secret',
      payload: { email: 'a@b.de' },
    })
    assert.equal(unknown.statusCode, 404)
    const noAddress = await harness.app.inject({ method: 'POST', url: path, payload: { order: 1 } })
    assert.equal(noAddress.statusCode, 422)
    assert.equal(errorOf(noAddress).key, 'contact_address_missing')
    const form = await harness.app.inject({
      method: 'POST',
      url: path,
      payload: 'email=a@b.de',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    })
    assert.equal(form.statusCode, 415)
    const huge = await harness.app.inject({
      method: 'POST',
      url: path,
      payload: { email: 'a@b.de', pad: 'x'.repeat(70_000) },
    })
    assert.equal(huge.statusCode, 413)
    assert.deepEqual(await runsOf(account, automation.id), [])
    const [address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
      .automation_webhooks
    assert.match(address.last_error, /email or a phone/)
    assert.equal(address.letzter_fehler, address.last_error)
    assert.equal(address.event_count, 0)
  })

  test('a paused automation’s address is not_connected and refuses with 422; internal triggers are listed as internal', async () => {
    const account = await sandboxAccount()
    const hook = await active(account, { trigger: { type: 'webhook' }, steps: [{ type: 'add_tag', tag: 'x' }] })
    await account.request({ method: 'POST', url: `/v1/automations/${hook.id}/pause` })
    await create(account, {
      name: 'Intern',
      trigger: { type: 'contact_created' },
      steps: [{ type: 'add_tag', tag: 'y' }],
    })
    const refused = await harness.app.inject({
      method: 'POST',
      url: new URL(hook.webhook_url).pathname,
      payload: { email: 'z@b.de' },
    })
    assert.equal(refused.statusCode, 422)
    const addresses = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
      .automation_webhooks
    const byKind = new Map(addresses.map((a: Json) => [a.kind, a]))
    assert.equal((byKind.get('webhook') as Json).state, 'not_connected')
    assert.equal((byKind.get('webhook') as Json).zustand, 'nicht_verbunden')
    assert.equal((byKind.get('internal') as Json).state, 'internal')
    assert.equal((byKind.get('internal') as Json).art, 'intern')
    assert.equal((byKind.get('internal') as Json).url, null)
  })

  test('a calendar feed starts a run before each event with an attendee (offset), and a reschedule moves it', async () => {
    let feedText = ''
    const feed = http.createServer((_request, response) => {
      response.setHeader('content-type', 'text/calendar')
      response.end(feedText)
    })
    await new Promise<void>((resolve) => feed.listen(0, '127.0.0.1', resolve))
    try {
      const start = new Date(harness.clock.now().getTime() + 3 * 24 * HOUR)
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
      const account = await sandboxAccount()
      const url = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/praxis.ics`
      const automation = await active(account, {
        trigger: { type: 'calendar', feed_url: url, offset_minutes: 24 * 60, poll_minutes: 60 },
        steps: [{ type: 'add_tag', tag: 'erinnert' }],
      })
      await drain()
      let [address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json()
        .automation_webhooks
      assert.equal(address.kind, 'calendar')
      assert.equal(address.art, 'kalender')
      assert.equal(address.state, 'running')
      assert.equal(address.event_count, 1)
      assert.deepEqual(await runsOf(account, automation.id), [])

      // rescheduled a day later: the first start is dropped, the new one is a day later
      feedText = calendar(new Date(start.getTime() + 24 * HOUR))
      harness.clock.advance(HOUR + 1000)
      await drain()
      harness.clock.advance(2 * 24 * HOUR - HOUR)
      await drain()
      assert.deepEqual(await runsOf(account, automation.id), [])
      harness.clock.advance(24 * HOUR)
      await drain()
      const runs = await runsOf(account, automation.id)
      assert.equal(runs.length, 1)
      assert.equal(runs[0].source, 'calendar')
      assert.equal(runs[0].state, 'completed')
      const contact = await account.request({ method: 'GET', url: `/v1/contacts/${runs[0].contact_id}` })
      assert.equal(contact.json().contact.email, email)
      assert.deepEqual(contact.json().contact.tags, ['erinnert'])
      ;[address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json().automation_webhooks
      assert.equal(address.last_error, null)

      feedText = 'not a calendar'
      harness.clock.advance(2 * HOUR)
      await drain()
      ;[address] = (await account.request({ method: 'GET', url: '/v1/automation-webhooks' })).json().automation_webhooks
      assert.match(address.last_error, /not valid iCalendar/)
    } finally {
      await new Promise((resolve) => feed.close(resolve))
    }
  })
})

describe('automations: the enroll_followup step', () => {
  async function sequence(account: TestAccount, name: string, trigger = { type: 'tag_added' as const, tag: 'nie' }) {
    return harness.services.followups.create(
      { accountId: account.accountId, account: { language: 'de' } },
      {
        name,
        trigger,
        steps: [{ text: 'Hallo {{name}}, hier ist dein erster Tipp.', delay: { amount: 2, unit: 'hours' } }],
      },
    )
  }

  test('a follow-up sequence that does not exist in the account is a 400 automation_invalid on create and update', async () => {
    const account = await sandboxAccount()
    const other = await sandboxAccount()
    const foreign = await sequence(other, 'Fremd')
    for (const followup_id of [foreign.id, '00000000-0000-4000-8000-000000000000']) {
      const response = await create(account, {
        trigger: { type: 'manual' },
        steps: [{ type: 'enroll_followup', followup_id }],
      })
      assert.equal(response.statusCode, 400, response.body)
      assert.equal(errorOf(response).code, 'bad_request')
      assert.equal(errorOf(response).key, 'automation_invalid')
      assert.match(errorOf(response).message, /follow-up sequence/)
    }
    const malformed = await create(account, { trigger: { type: 'manual' }, steps: [{ type: 'enroll_followup' }] })
    assert.equal(malformed.statusCode, 400)
    const own = await sequence(account, 'Eigen')
    const created = await create(account, {
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
    assert.equal(errorOf(changed).key, 'automation_invalid')
  })

  test('a run enrolls the contact: its step goes out on time; not active or already enrolled is skipped with the reason', async () => {
    const account = await sandboxAccount()
    const target = await sequence(account, 'Ziel')
    const drafted = await sequence(account, 'Entwurf')
    const activated = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${target.id}`,
      payload: { status: 'active' },
    })
    assert.equal(activated.statusCode, 200, activated.body)
    const automation = await active(account, {
      trigger: { type: 'contact_created' },
      steps: [
        { type: 'enroll_followup', followup_id: target.id },
        { type: 'enroll_followup', followup_id: drafted.id },
        { type: 'enroll_followup', followup_id: target.id },
      ],
    })
    const contactId = await createContact(account)
    await confirm(account, contactId)
    await drain()
    const [run] = await runsOf(account, automation.id)
    assert.equal(run.state, 'completed')
    assert.deepEqual(
      run.steps.map((s: Json) => [s.type, s.result, s.reason]),
      [
        ['enroll_followup', 'done', null],
        ['enroll_followup', 'skipped', 'sequence_not_active'],
        ['enroll_followup', 'skipped', 'already_enrolled'],
      ],
    )
    const view = (await account.request({ method: 'GET', url: `/v1/followups/${target.id}` })).json().followup
    assert.deepEqual(view.enrollments, { active: 1, completed: 0, stopped: 0 })
    harness.clock.advance(2 * HOUR + 1000)
    await drain()
    const sent = (await account.request({ method: 'GET', url: `/v1/followups/${target.id}` })).json().followup
    assert.equal(sent.steps[0].counts.sent, 1)
    assert.deepEqual(sent.enrollments, { active: 0, completed: 1, stopped: 0 })
    const outbox = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.equal(outbox.length, 1)
  })
})
