import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { phoneSequence } from '../../../test/helpers/fixtures.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { scheduleNewsletter } from '../../../test/helpers/newsletters.ts'
import { sandboxOutboxOf } from '../channels/index.ts'
import { recordOptinChange } from '../contacts/index.ts'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
const HOUR = 3600_000
const nextPhone = phoneSequence('+4915')

/** A harness whose public address is https (WhatsApp URL buttons need one), or the given one. */
function suite(publicUrl: string) {
  const state = { harness: undefined as unknown as Harness }
  before(async () => {
    state.harness = await createHarness({ workers: true, config: { publicUrl } })
    await state.harness.jobs!.stop()
  })
  after(() => state.harness.close())
  const h = () => state.harness

  async function drain() {
    await h().jobs!.start()
    await h().jobs!.drain()
    await h().jobs!.stop()
  }

  async function account() {
    const created = await createTestAccount(h(), { plan: { messagesPerMonth: 1000 } })
    await h().services.channels.connect(created.accountId, { channel: 'chat', provider: 'sandbox' })
    return created
  }

  async function confirmed(owner: TestAccount, name: string): Promise<string> {
    const response = await owner.request({ method: 'POST', url: '/v1/contacts', payload: { name, phone: nextPhone() } })
    assert.equal(response.statusCode, 201, response.body)
    const id = response.json().contact.id as string
    await h().database.orm.transaction((tx) =>
      recordOptinChange(tx, h().clock, {
        accountId: owner.accountId,
        contactId: id,
        channel: 'chat',
        to: 'confirmed',
        source: 'test',
      }),
    )
    return id
  }

  /** A newsletter with a CTA, scheduled in an hour and sent (the sandbox approves its template at once). */
  async function sentNewsletter(owner: TestAccount, content = 'Hallo {{name}}, unsere Tulpen sind da.') {
    const created = await owner.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'Frühling', content },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = created.json().newsletter.id as string
    const patched = await owner.request({
      method: 'PATCH',
      url: `/v1/newsletters/${id}`,
      payload: { cta: { text: 'Zum Shop', url: 'https://shop.example/fruehling?x=1' } },
    })
    assert.equal(patched.statusCode, 200, patched.body)
    const at = new Date(h().clock.now().getTime() + HOUR).toISOString()
    const scheduled = await scheduleNewsletter(owner, id, at)
    assert.equal(scheduled.statusCode, 200, scheduled.body)
    h().clock.advance(HOUR + 1000)
    await drain()
    h().clock.advance(60_000)
    await drain()
    return { id, scheduled: scheduled.json().newsletter as Json }
  }

  const status = async (owner: TestAccount, id: string): Promise<Json> => {
    const response = await owner.request({ method: 'GET', url: `/v1/newsletters/${id}/status` })
    assert.equal(response.statusCode, 200, response.body)
    return response.json()
  }

  return { h, drain, account, confirmed, sentNewsletter, status }
}

describe('newsletter CTA: a tracked short link per recipient (https public address)', () => {
  const s = suite('https://herold.example')

  test("each recipient's button opens their own short link: 302 to the CTA address, clicks counted per newsletter and contact", async () => {
    const owner = await s.account()
    const erika = await s.confirmed(owner, 'Erika Muster')
    const max = await s.confirmed(owner, 'Max Muster')
    const { id, scheduled } = await s.sentNewsletter(owner)
    assert.equal(scheduled.cta_tracking, 'tracked')
    assert.match(scheduled.cta_tracking_note, /short link/)

    // the template at the provider carries the button with the short-link address and its variable
    const template = await owner.request({ method: 'GET', url: `/v1/templates/${scheduled.template_id}` })
    assert.equal(template.statusCode, 200, template.body)
    const [button] = template.json().template.buttons as Json[]
    assert.deepEqual(button, { type: 'URL', text: 'Zum Shop', url: 'https://herold.example/public/t/c/{{1}}' })

    const done = await s.status(owner, id)
    assert.equal(done.status, 'sent')
    assert.equal(done.cta_tracking, 'tracked')
    assert.equal(done.cta_clicks, 0)
    assert.equal(done.cta_clicked_contacts, 0)

    // what each recipient got: the button's variable is their own link id
    const outbox = await sandboxOutboxOf(s.h().database.orm, owner.accountId, 'chat')
    assert.equal(outbox.length, 2)
    const linkOf = new Map<string, string>()
    for (const message of outbox) {
      const payload = message.payload as Json
      assert.equal(payload.button_parameters.length, 1, JSON.stringify(payload))
      assert.equal(payload.button_parameters[0].index, 0)
      const suffix = String(payload.button_parameters[0].text)
      assert.match(suffix, /^[A-Za-z0-9_-]{16}$/)
      linkOf.set(String(message.recipient), button.url.replace('{{1}}', suffix))
      assert.match(String(payload.text), /Hallo (Erika|Max), unsere Tulpen sind da\./)
    }
    assert.equal(new Set(linkOf.values()).size, 2, 'every recipient has their own link')

    const contacts = (await owner.request({ method: 'GET', url: '/v1/contacts?limit=100' })).json().contacts as Json[]
    const phoneOf = (contactId: string) => String(contacts.find((c) => c.id === contactId)?.phone)
    const follow = async (link: string) => {
      const path = new URL(link).pathname
      const response = await s.h().app.inject({ method: 'GET', url: path })
      assert.equal(response.statusCode, 302, response.body)
      assert.equal(response.headers.location, 'https://shop.example/fruehling?x=1')
    }
    // Erika clicks twice, Max once
    await follow(linkOf.get(phoneOf(erika)) as string)
    await follow(linkOf.get(phoneOf(erika)) as string)
    await follow(linkOf.get(phoneOf(max)) as string)
    const counted = await s.status(owner, id)
    assert.equal(counted.cta_clicks, 3)
    assert.equal(counted.cta_clicked_contacts, 2)

    const clicks = await s.h().database.query<{ contact_id: string; n: number }>(
      `SELECT k.contact_id, count(*)::int AS n FROM link_clicks k JOIN tracked_links l
         ON l.account_id = k.account_id AND l.id = k.link_id
       WHERE l.account_id = $1 AND l.newsletter_id = $2 GROUP BY k.contact_id`,
      [owner.accountId, id],
    )
    assert.deepEqual(Object.fromEntries(clicks.map((c) => [c.contact_id, Number(c.n)])), { [erika]: 2, [max]: 1 })
    // the recipients with their send status, and the clicks one by one (GET /recipients, GET /clicks)
    const recipients = await owner.request({ method: 'GET', url: `/v1/newsletters/${id}/recipients?limit=1` })
    assert.equal(recipients.statusCode, 200, recipients.body)
    assert.equal(recipients.json().recipients.length, 1)
    assert.equal(recipients.json().has_more, true)
    const all = (await owner.request({ method: 'GET', url: `/v1/newsletters/${id}/recipients` })).json()
    assert.deepEqual(all.recipients.map((r: Json) => r.contact_id).sort(), [erika, max].sort())
    assert.ok(
      all.recipients.every((r: Json) => ['sent', 'delivered', 'read'].includes(r.status) && r.sent_at),
      JSON.stringify(all),
    )
    const failed = (
      await owner.request({ method: 'GET', url: `/v1/newsletters/${id}/recipients?status=failed` })
    ).json()
    assert.deepEqual(failed.recipients, [])
    const bad = await owner.request({ method: 'GET', url: `/v1/newsletters/${id}/recipients?status=lost` })
    assert.equal(bad.statusCode, 400)
    const listed = (await owner.request({ method: 'GET', url: `/v1/newsletters/${id}/clicks` })).json()
    assert.equal(listed.clicks.length, 3)
    assert.equal(listed.clicks.filter((c: Json) => c.contact_id === erika).length, 2)
    assert.ok(listed.clicks.every((c: Json) => c.url === 'https://shop.example/fruehling?x=1'))
    const statistics = (await owner.request({ method: 'GET', url: `/v1/newsletters/${id}/statistics` })).json()
    assert.equal(statistics.sends.total, 2)
    assert.equal(statistics.sends.sent, 2)
    assert.equal(statistics.clicks, 3)
    assert.equal(statistics.clicked_contacts, 2)
    assert.equal(statistics.click_rate, statistics.sends.delivered === 0 ? null : 2 / statistics.sends.delivered)
    // an unknown link is a 404, and another account sees nothing of this newsletter
    const unknown = await s.h().app.inject({ method: 'GET', url: '/public/t/c/AAAAAAAAAAAAAAAA' })
    assert.equal(unknown.statusCode, 404)
    const other = await s.account()
    const foreign = await other.request({ method: 'GET', url: `/v1/newsletters/${id}/status` })
    assert.equal(foreign.statusCode, 404)
    for (const path of ['recipients', 'clicks', 'statistics']) {
      const hidden = await other.request({ method: 'GET', url: `/v1/newsletters/${id}/${path}` })
      assert.equal(hidden.statusCode, 404, path)
    }
  })

  test('numbered variables in the text would share the button variable: the plain CTA address, and the newsletter says why', async () => {
    const owner = await s.account()
    await s.confirmed(owner, 'Erika Muster')
    const { id, scheduled } = await s.sentNewsletter(owner, 'Hallo {{1}}, unsere Tulpen sind da.')
    assert.equal(scheduled.cta_tracking, 'content_numbered_variables')
    assert.match(scheduled.cta_tracking_note, /not counted/)
    const template = await owner.request({ method: 'GET', url: `/v1/templates/${scheduled.template_id}` })
    assert.equal(template.json().template.buttons[0].url, 'https://shop.example/fruehling?x=1')
    const done = await s.status(owner, id)
    assert.equal(done.cta_tracking, 'content_numbered_variables')
    assert.equal(done.cta_clicks, 0)
  })
})

describe('newsletter CTA with a public address that is not https', () => {
  const s = suite('http://herold.test')

  test('the button opens the CTA address directly; scheduling says in words that clicks are not counted', async () => {
    const owner = await s.account()
    await s.confirmed(owner, 'Erika Muster')
    const { id, scheduled } = await s.sentNewsletter(owner)
    assert.equal(scheduled.cta_tracking, 'public_url_not_https')
    assert.match(scheduled.cta_tracking_note, /need an https address/)
    const [message] = await sandboxOutboxOf(s.h().database.orm, owner.accountId, 'chat')
    assert.equal((message.payload as Json).button_parameters, undefined)
    const template = await owner.request({ method: 'GET', url: `/v1/templates/${scheduled.template_id}` })
    assert.equal(template.json().template.buttons[0].url, 'https://shop.example/fruehling?x=1')
    const done = await s.status(owner, id)
    assert.equal(done.status, 'sent')
    assert.equal(done.cta_tracking, 'public_url_not_https')
    assert.equal(done.cta_clicks, 0)
    const links = await s
      .h()
      .database.query<{ n: number }>('SELECT count(*)::int AS n FROM tracked_links WHERE account_id = $1', [
        owner.accountId,
      ])
    assert.equal(Number(links[0].n), 0)
  })
})
