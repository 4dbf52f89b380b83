import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  approvedTemplate as approvedTemplateOf,
  createTemplate as createTemplateOf,
  drain,
  HOUR,
  harness,
  type Json,
  withAutomationsHarness,
} from '../../../test/helpers/automations.ts'
import { defineField, setFieldValues } from '../../../test/helpers/custom-fields.ts'
import { nextPhone, sandboxAccount, setOptin } from '../../../test/helpers/fixtures.ts'
import type { TestAccount } from '../../../test/helpers/harness.ts'
import { scheduleNewsletter } from '../../../test/helpers/newsletters.ts'
import type { CustomFieldValue } from '../contacts/index.ts'

// Custom fields in messages (issue 33): `{{key}}` of an account's field is filled from the contact in a template send,
// a newsletter, a follow-up step and an automation's send; a contact without a value (and no default) is refused
// (422) or skipped with reason field_missing naming the field; passing it as a variable is 422 invalid_variables.

// the automations tests' harness (jobs run only inside drain()), without outbound calls to this machine
withAutomationsHarness({})

let counter = 0
const KUNDENNUMMER = 'Hallo {{name}}, deine Kundennummer ist {{customer_no}}. Bis bald!'

/** A sandbox account with the text field customer_no (and a default when given). */
async function fieldAccount(defaultValue?: string) {
  const account = await sandboxAccount(harness, { messagesPerMonth: 1000, requestsPerMinute: 1000 })
  await defineField(harness, account.accountId, { key: 'customer_no', type: 'text', defaultValue })
  return account
}

/** A contact with a confirmed chat opt-in, its custom field values and language. */
async function contact(
  account: TestAccount,
  name: string,
  fields: Record<string, CustomFieldValue> = {},
  language?: string,
): Promise<string> {
  const response = await account.request({ method: 'POST', url: '/v1/contacts', payload: { name, phone: nextPhone() } })
  assert.equal(response.statusCode, 201, response.body)
  const id = response.json().contact.id as string
  await setFieldValues(harness, account.accountId, id, fields, language)
  await setOptin(harness, account.accountId, id)
  return id
}

/** Erika (customer_no K-1) and Max (K-2) have a value, Ole none. */
async function threeContacts(account: TestAccount) {
  const erika = await contact(account, 'Erika Muster', { customer_no: 'K-1' })
  const max = await contact(account, 'Max Muster', { customer_no: 'K-2' })
  return { erika, max, ole: await contact(account, 'Ole Ohne') }
}

const createTemplate = (account: TestAccount, content: string) => createTemplateOf(account, content, 'Kunde')

const approvedTemplate = (account: TestAccount, content = KUNDENNUMMER) => approvedTemplateOf(account, content, 'Kunde')

const sendTemplate = (account: TestAccount, contactId: string, templateId: string, variables?: Json) =>
  account.request({
    method: 'POST',
    url: '/v1/messages',
    payload: { contact_id: contactId, template: { id: templateId, ...(variables ? { variables } : {}) } },
  })

/** The texts sent to each contact, by contact id. */
async function sentTexts(account: TestAccount): Promise<Map<string, string[]>> {
  const response = await account.request({ method: 'GET', url: '/v1/messages?direction=outbound&limit=100' })
  assert.equal(response.statusCode, 200, response.body)
  const texts = new Map<string, string[]>()
  for (const m of response.json().messages as Json[])
    texts.set(m.contact_id, [...(texts.get(m.contact_id) ?? []), m.text])
  return texts
}

/** The send records of one origin (newsletter, followup, automation) by contact: status, reason and its detail. */
async function sendsByContact(account: TestAccount, origin: string) {
  const rows = await harness.database.query<{
    contact_id: string
    status: string
    reason: string | null
    reason_detail: string | null
  }>(`SELECT contact_id, status, reason, reason_detail FROM template_sends WHERE account_id = $1 AND origin = $2`, [
    account.accountId,
    origin,
  ])
  return new Map(
    rows.map((r) => [
      r.contact_id,
      {
        status: ['delivered', 'read'].includes(r.status) ? 'sent' : r.status,
        reason: r.reason,
        detail: r.reason_detail,
      },
    ]),
  )
}

const skippedForField = { status: 'skipped', reason: 'field_missing', detail: 'customer_no' }
const sent = { status: 'sent', reason: null, detail: null }

/** Erika and Max were sent their own customer numbers from `origin`; Ole, who has none, was skipped naming the field. */
async function assertTwoSentOneSkipped(
  account: TestAccount,
  origin: string,
  { erika, max, ole }: Record<string, string>,
) {
  const sends = await sendsByContact(account, origin)
  assert.deepEqual(sends.get(erika), sent)
  assert.deepEqual(sends.get(max), sent)
  assert.deepEqual(sends.get(ole), skippedForField)
  const texts = await sentTexts(account)
  assert.deepEqual(texts.get(erika), ['Hallo Erika, deine Kundennummer ist K-1. Bis bald!'])
  assert.deepEqual(texts.get(max), ['Hallo Max, deine Kundennummer ist K-2. Bis bald!'])
}

describe('a template send (POST /v1/messages) with a custom field', () => {
  test("{{customer_no}} is filled from the contact's value; a contact without one is a 422 naming it, nothing queued", async () => {
    const account = await fieldAccount()
    const templateId = await approvedTemplate(account)
    const erika = await contact(account, 'Erika Muster', { customer_no: 'K-1001' })
    const max = await contact(account, 'Max Muster')
    const accepted = await sendTemplate(account, erika, templateId)
    assert.equal(accepted.statusCode, 202, accepted.body)
    const refused = await sendTemplate(account, max, templateId)
    assert.equal(refused.statusCode, 422, refused.body)
    const error = refused.json().error
    assert.equal(error.code, 'invalid_variables')
    assert.match(error.message, /customer_no/)
    assert.deepEqual(error.variables, [{ name: 'customer_no', problem: 'no_value' }])
    await drain()
    const texts = await sentTexts(account)
    assert.deepEqual(texts.get(erika), ['Hallo Erika, deine Kundennummer ist K-1001. Bis bald!'])
    assert.equal(texts.get(max), undefined)
    const queued = await harness.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM template_sends WHERE account_id = $1 AND contact_id = $2',
      [account.accountId, max],
    )
    assert.equal(Number(queued[0].n), 0)
  })

  test("with a default, a contact without a value gets the default; the contact's own value wins", async () => {
    const account = await fieldAccount('noch keine')
    const templateId = await approvedTemplate(account)
    const erika = await contact(account, 'Erika Muster', { customer_no: 'K-7' })
    const max = await contact(account, 'Max Muster')
    assert.equal((await sendTemplate(account, erika, templateId)).statusCode, 202)
    assert.equal((await sendTemplate(account, max, templateId)).statusCode, 202)
    await drain()
    const texts = await sentTexts(account)
    assert.deepEqual(texts.get(erika), ['Hallo Erika, deine Kundennummer ist K-7. Bis bald!'])
    assert.deepEqual(texts.get(max), ['Hallo Max, deine Kundennummer ist noch keine. Bis bald!'])
  })

  test('passing a custom field as a variable is 422 invalid_variables naming it (from_contact), used or not', async () => {
    const account = await fieldAccount()
    await defineField(harness, account.accountId, { key: 'level', type: 'choice', options: ['Gold', 'Silber'] })
    const templateId = await approvedTemplate(account, 'Hallo {{name}}, Nr. {{customer_no}}, Code {{code}}. Danke!')
    const erika = await contact(account, 'Erika Muster', { customer_no: 'K-1' })
    for (const [variables, name] of [
      [{ code: 'A', customer_no: 'gefälscht' }, 'customer_no'],
      [{ code: 'A', level: 'Gold' }, 'level'],
    ] as const) {
      const response = await sendTemplate(account, erika, templateId, variables)
      assert.equal(response.statusCode, 422, response.body)
      const error = response.json().error
      assert.equal(error.code, 'invalid_variables')
      assert.match(error.message, new RegExp(name))
      assert.deepEqual(error.variables, [{ name, problem: 'from_contact' }])
    }
    const fine = await sendTemplate(account, erika, templateId, { code: 'A' })
    assert.equal(fine.statusCode, 202, fine.body)
    await drain()
    assert.deepEqual((await sentTexts(account)).get(erika), ['Hallo Erika, Nr. K-1, Code A. Danke!'])
  })

  test('a field defined after a send counts at once: the name stops being settable (the kept definitions are dropped)', async () => {
    const account = await sandboxAccount(harness, { messagesPerMonth: 1000, requestsPerMinute: 1000 })
    const templateId = await approvedTemplate(account)
    const erika = await contact(account, 'Erika Muster', { customer_no: 'K-5' })
    const before = await sendTemplate(account, erika, templateId, { customer_no: 'vom Aufrufer' })
    assert.equal(before.statusCode, 202, before.body)
    await defineField(harness, account.accountId, { key: 'customer_no', type: 'text' })
    const after = await sendTemplate(account, erika, templateId, { customer_no: 'vom Aufrufer' })
    assert.equal(after.statusCode, 422, after.body)
    assert.deepEqual(after.json().error.variables, [{ name: 'customer_no', problem: 'from_contact' }])
    assert.equal((await sendTemplate(account, erika, templateId)).statusCode, 202)
    await drain()
    // the first send was rendered at send time, when customer_no was already the contact's field
    assert.deepEqual((await sentTexts(account)).get(erika), [
      'Hallo Erika, deine Kundennummer ist K-5. Bis bald!',
      'Hallo Erika, deine Kundennummer ist K-5. Bis bald!',
    ])
  })

  test("number, date and boolean are written in the contact's language: de 1.234,5 24.12.2026 ja, en 1,234.5 December 24, 2026 yes", async () => {
    const account = await fieldAccount()
    await defineField(harness, account.accountId, { key: 'points', type: 'number' })
    await defineField(harness, account.accountId, { key: 'birthday', type: 'date' })
    await defineField(harness, account.accountId, { key: 'vip', type: 'boolean' })
    const templateId = await approvedTemplate(
      account,
      'Hallo {{name}}, Punkte {{points}}, Geburtstag {{birthday}}, VIP {{vip}}. Bis bald!',
    )
    const values = { points: 1234.5, birthday: '2026-12-24', vip: true }
    const erika = await contact(account, 'Erika Muster', values, 'de')
    const emma = await contact(account, 'Emma Smith', values, 'en')
    const ole = await contact(account, 'Ole Nein', { points: 3, birthday: '2027-01-02', vip: false }) // no language
    for (const id of [erika, emma, ole]) assert.equal((await sendTemplate(account, id, templateId)).statusCode, 202)
    await drain()
    const texts = await sentTexts(account)
    assert.deepEqual(texts.get(erika), ['Hallo Erika, Punkte 1.234,5, Geburtstag 24.12.2026, VIP ja. Bis bald!'])
    assert.deepEqual(texts.get(emma), ['Hallo Emma, Punkte 1,234.5, Geburtstag December 24, 2026, VIP yes. Bis bald!'])
    // without a language of its own the contact's values are written in the template's (de)
    assert.deepEqual(texts.get(ole), ['Hallo Ole, Punkte 3, Geburtstag 02.01.2027, VIP nein. Bis bald!'])
  })

  test("the template check knows the account's fields: {{customer_no}} comes from the contact, {{code}} needs a value", async () => {
    const account = await fieldAccount()
    const content = 'Hallo {{name}}, Nr. {{customer_no}}, Code {{code}}. Danke!'
    const created = await createTemplate(account, content)
    assert.deepEqual(created.variables, ['name', 'customer_no', 'code'])
    assert.deepEqual(created.settable_variables, ['code'])
    const got = await account.request({ method: 'GET', url: `/v1/templates/${created.id}` })
    assert.deepEqual(got.json().template.settable_variables, ['code'])
    const listed = await account.request({ method: 'GET', url: '/v1/templates' })
    const item = listed.json().templates.find((t: Json) => t.id === created.id)
    assert.deepEqual(item.settable_variables, ['code'])
    const patched = await account.request({
      method: 'PATCH',
      url: `/v1/templates/${created.id}`,
      payload: { content: 'Hallo {{name}}, Nr. {{customer_no}}, Termin {{termin}}. Danke!' },
    })
    assert.equal(patched.statusCode, 200, patched.body)
    assert.deepEqual(patched.json().template.settable_variables, ['termin'])
    // an account without the field: the same name is a variable the caller sets
    const other = await sandboxAccount(harness)
    const plain = await createTemplate(other, content)
    assert.deepEqual(plain.settable_variables, ['customer_no', 'code'])
  })

  test('the template preview fills custom fields from the chosen contact, and lists one it lacks', async () => {
    const account = await fieldAccount()
    const templateId = await approvedTemplate(account)
    const erika = await contact(account, 'Erika Muster', { customer_no: 'K-1001' })
    const max = await contact(account, 'Max Muster')
    const tenant = { accountId: account.accountId, account: { language: 'de' } }
    const filled = await harness.services.templates.preview(tenant, templateId, erika, {})
    assert.equal(filled.text, 'Hallo Erika, deine Kundennummer ist K-1001. Bis bald!')
    const lacking = await harness.services.templates.preview(tenant, templateId, max, {})
    assert.equal(lacking.text, null)
    assert.deepEqual(lacking.missing_variables, ['customer_no'])
    await assert.rejects(harness.services.templates.preview(tenant, templateId, erika, { customer_no: 'X' }), {
      code: 'invalid_variables',
    })
  })
})

describe('the chat opt-in confirmation with a custom field', () => {
  test('it is filled from the contact; a contact without a value gets none, and the request records why', async () => {
    const account = await fieldAccount()
    const created = await account.request({
      method: 'POST',
      url: '/v1/templates',
      payload: {
        name: `Anmeldung ${process.pid} ${++counter}`,
        purpose: 'optin_confirm',
        language: 'de',
        content: 'Hallo {{name}}, bitte bestätige deine Anmeldung zur Kundennummer {{customer_no}} bei uns.',
      },
    })
    assert.equal(created.statusCode, 201, created.body)
    const submitted = await account.request({
      method: 'POST',
      url: `/v1/templates/${created.json().template.id}/submit`,
    })
    assert.equal(submitted.json().template.state, 'approved', submitted.body)
    const startFrom = async (name: string) => {
      const phone = nextPhone()
      const inbound = await account.request({
        method: 'POST',
        url: '/v1/sandbox/inbound',
        payload: { from: phone, name, text: 'START' },
      })
      assert.equal(inbound.statusCode, 200, inbound.body)
      const rows = await harness.database.query<{ id: string }>(
        'SELECT id FROM contacts WHERE account_id = $1 AND phone = $2',
        [account.accountId, phone],
      )
      return rows[0].id
    }
    const erika = await startFrom('Erika Muster')
    await setFieldValues(harness, account.accountId, erika, { customer_no: 'K-9' })
    const ole = await startFrom('Ole Ohne')
    await drain()
    const texts = await sentTexts(account)
    assert.deepEqual(texts.get(erika), ['Hallo Erika, bitte bestätige deine Anmeldung zur Kundennummer K-9 bei uns.'])
    assert.equal(texts.get(ole), undefined)
    const [request] = await harness.database.query<{ state: string; reason: string }>(
      'SELECT state, reason FROM chat_optin_requests WHERE account_id = $1 AND contact_id = $2',
      [account.accountId, ole],
    )
    assert.equal(request.state, 'failed')
    assert.match(request.reason, /values the contact lacks: customer_no$/)
  })
})

describe('campaign sends with a custom field: the contact without a value is skipped (field_missing), the others go', () => {
  test('a newsletter to 3 contacts: two get their own values, one is skipped naming the field; status and recipients show it', async () => {
    const account = await fieldAccount()
    const { erika, max, ole } = await threeContacts(account)
    const created = await account.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'Angebote', content: KUNDENNUMMER },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = created.json().newsletter.id
    const preview = async (contactId: string) =>
      (await account.request({ method: 'GET', url: `/v1/newsletters/${id}/preview?contact_id=${contactId}` })).json()
    assert.match((await preview(erika)).text, /deine Kundennummer ist K-1\. Bis bald!/)
    assert.equal((await preview(ole)).text, null)
    assert.deepEqual((await preview(ole)).missing_variables, ['customer_no'])
    const at = new Date(harness.clock.now().getTime() + HOUR).toISOString()
    const scheduled = await scheduleNewsletter(account, id, at)
    assert.equal(scheduled.statusCode, 200, scheduled.body)
    await drain()
    harness.clock.advance(HOUR + 1000)
    await drain()
    const sends = await sendsByContact(account, 'newsletter')
    assert.deepEqual(sends.get(erika), sent)
    assert.deepEqual(sends.get(max), sent)
    assert.deepEqual(sends.get(ole), skippedForField)
    const texts = await sentTexts(account)
    assert.match(texts.get(erika)?.[0] ?? '', /Hallo Erika, deine Kundennummer ist K-1\. Bis bald!/)
    assert.match(texts.get(max)?.[0] ?? '', /Hallo Max, deine Kundennummer ist K-2\. Bis bald!/)
    assert.equal(texts.get(ole), undefined)
    const status = (await account.request({ method: 'GET', url: `/v1/newsletters/${id}/status` })).json()
    assert.equal(status.counts.skipped, 1)
    assert.deepEqual(status.skip_reasons, { field_missing: 1 })
    const recipients = await account.request({ method: 'GET', url: `/v1/newsletters/${id}/recipients?status=skipped` })
    assert.equal(recipients.statusCode, 200, recipients.body)
    const [skipped] = recipients.json().recipients
    assert.equal(skipped.contact_id, ole)
    assert.equal(skipped.reason, 'field_missing')
    assert.equal(skipped.reason_detail, 'customer_no')
  })

  test('a follow-up step: two contacts get their values, the one without is skipped naming the field', async () => {
    const account = await fieldAccount()
    const tenant = { accountId: account.accountId, account: { language: 'de' } }
    const sequence = (await harness.services.followups.create(tenant, {
      name: 'Willkommen',
      steps: [{ text: KUNDENNUMMER, delay: { amount: 2, unit: 'hours' } }],
    })) as Json
    const { erika, max, ole } = await threeContacts(account)
    const activated = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}`,
      payload: { status: 'active' },
    })
    assert.equal(activated.statusCode, 200, activated.body)
    harness.clock.advance(2 * HOUR + 1000)
    await drain()
    await assertTwoSentOneSkipped(account, 'followup', { erika, max, ole })
    const step = (await account.request({ method: 'GET', url: `/v1/followups/${sequence.id}` })).json().followup
      .steps[0]
    assert.equal(step.counts.sent, 2)
    assert.equal(step.counts.skipped, 1)
    // the step's template sends name the field of the skipped one
    const listed = await account.request({
      method: 'GET',
      url: `/v1/templates/${step.template_id}/sends?status=skipped`,
    })
    assert.equal(listed.statusCode, 200, listed.body)
    const [skipped] = listed.json().sends
    assert.deepEqual([skipped.contact_id, skipped.reason, skipped.reason_detail], [ole, 'field_missing', 'customer_no'])
  })

  test("an automation's send step: two contacts get their values, the one without is skipped naming the field", async () => {
    const account = await fieldAccount()
    const templateId = await approvedTemplate(account)
    const created = await account.request({
      method: 'POST',
      url: '/v1/automations',
      payload: {
        name: 'Danke',
        trigger: { type: 'manual' },
        steps: [{ type: 'send_template', template_id: templateId }],
      },
    })
    assert.equal(created.statusCode, 200, created.body)
    const automationId = created.json().id
    const activated = await account.request({ method: 'POST', url: `/v1/automations/${automationId}/activate` })
    assert.equal(activated.statusCode, 200, activated.body)
    const { erika, max, ole } = await threeContacts(account)
    for (const id of [erika, max, ole]) {
      const started = await account.request({
        method: 'POST',
        url: `/v1/automations/${automationId}/trigger`,
        payload: { contact_id: id },
      })
      assert.equal(started.statusCode, 202, started.body)
    }
    await drain()
    await assertTwoSentOneSkipped(account, 'automation', { erika, max, ole })
    // the run's send record says why
    const runs = (await account.request({ method: 'GET', url: `/v1/automations/${automationId}/runs` })).json().runs
    const oleRun = runs.find((r: Json) => r.contact_id === ole)
    const send = await account.request({ method: 'GET', url: `/v1/sends/${oleRun.steps[0].detail.send_id}` })
    assert.equal(send.statusCode, 200, send.body)
    assert.deepEqual(
      [send.json().status, send.json().reason, send.json().reason_detail],
      ['skipped', 'field_missing', 'customer_no'],
    )
  })

  test("an automation step cannot pass a custom field's value: 400 automation_invalid naming it", async () => {
    const account = await fieldAccount()
    const templateId = await approvedTemplate(account, 'Hallo {{name}}, Nr. {{customer_no}}, Code {{code}}. Danke!')
    const response = await account.request({
      method: 'POST',
      url: '/v1/automations',
      payload: {
        name: 'Danke',
        trigger: { type: 'manual' },
        steps: [{ type: 'send_template', template_id: templateId, variables: { code: 'A', customer_no: 'X' } }],
      },
    })
    assert.equal(response.statusCode, 400, response.body)
    const error = response.json().error
    assert.equal(error.key, 'automation_invalid')
    assert.deepEqual(error.problems, ['steps[0].variables.customer_no: comes from the contact and cannot be passed'])
  })
})
