import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import type { Scope } from '../../platform/auth/scopes.ts'
import { type TemplateUsageCheck, templatesService } from './index.ts'

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
type Json = Record<string, any>

/** What the probe module answers when asked for a template's uses (a follow-up step, an automation). */
let templateUses: TemplateUsageCheck = async () => []

let harness: Harness
harnessPerFile(
  {
    extraModules: [
      { name: 'probe', reactions: { templateUsage: (tx, accountId, id) => templateUses(tx, accountId, id) } },
    ],
  },
  (created) => {
    harness = created
  },
)

const chat = { name: 'Order shipped', content: 'Hallo {{1}}, deine Bestellung {{2}} ist unterwegs.' }

async function createTemplate(account: TestAccount, payload: Json = chat): Promise<Json> {
  const response = await account.request({ method: 'POST', url: '/v1/templates', payload })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().template
}

const getTemplate = async (account: TestAccount, id: string): Promise<Json> =>
  (await account.request({ method: 'GET', url: `/v1/templates/${id}` })).json().template

const patch = (account: TestAccount, id: string, payload: Json) =>
  account.request({ method: 'PATCH', url: `/v1/templates/${id}`, payload })

/** The provider's decision as the provider layer will record it. */
const service = () => templatesService({ db: harness.database.orm, clock: harness.clock, hooks: { usageChecks: [] } })
async function approve(account: TestAccount, id: string, status = 'approved', rejectionReason?: string) {
  await service().applyProviderStatus(account.accountId, id, {
    status,
    rejectionReason,
    providerTemplateId: `wa-${id}`,
    submitted: true,
  })
}

describe('POST /v1/templates', () => {
  test('creates a draft in the account language, nothing sent to the provider', async () => {
    const account = await createTestAccount(harness)
    const response = await account.request({ method: 'POST', url: '/v1/templates', payload: chat })
    assert.equal(response.statusCode, 201)
    const { ok, template } = response.json()
    assert.equal(ok, true)
    assert.equal(template.state, 'draft')
    assert.equal(template.provider_status, null)
    assert.equal(template.channel, 'chat')
    assert.equal(template.purpose, 'marketing')
    assert.equal(template.provider_category, 'MARKETING')
    assert.equal(template.language, 'de')
    assert.equal(template.provider_name, 'order_shipped')
    assert.deepEqual(template.variables, ['1', '2'])
    assert.deepEqual(template.settable_variables, ['2'])
    assert.equal(template.sendable, false)
    assert.equal(template.submittable, true)
    assert.deepEqual(template.issues, [])
    assert.equal(template.rejection_reason_text, null)
    assert.match(template.created_at, /Z$/)
    assert.deepEqual(await getTemplate(account, template.id), template)
  })

  test('keeps every given field', async () => {
    const account = await createTestAccount(harness)
    const template = await createTemplate(account, {
      name: 'Sale',
      content: 'Hi {{name}}, use {{code}} today.',
      purpose: 'utility',
      language: 'en_US',
      buttons: [
        { type: 'URL', text: 'Shop', url: 'https://shop.example/{{code}}' },
        { type: 'QUICK_REPLY', text: 'Stop' },
      ],
      header_media: { url: 'https://cdn.example/sale.png' },
    })
    assert.equal(template.language, 'en_US')
    assert.equal(template.purpose, 'utility')
    assert.equal(template.provider_category, 'UTILITY')
    assert.deepEqual(template.buttons, [
      { type: 'URL', text: 'Shop', url: 'https://shop.example/{{code}}' },
      { type: 'QUICK_REPLY', text: 'Stop' },
    ])
    assert.deepEqual(template.header_media, { url: 'https://cdn.example/sale.png' })
    assert.deepEqual(template.settable_variables, ['code'])
  })

  test('an email template needs a subject, and a chat template takes none', async () => {
    const account = await createTestAccount(harness)
    const email = await createTemplate(account, {
      name: 'Mail',
      content: 'Hi {{name}}',
      channel: 'email',
      subject: 'Hello',
    })
    assert.equal(email.subject, 'Hello')
    assert.equal(email.provider_category, null)
    assert.equal(email.submittable, false)
    assert.deepEqual(
      email.issues.map((i: Json) => i.code),
      ['email_not_submitted'],
    )
    for (const [payload, field] of [
      [{ name: 'Mail', content: 'Hi', channel: 'email' }, 'subject'],
      [{ ...chat, subject: 'Hello' }, 'subject'],
      [
        { name: 'Mail', content: 'Hi', channel: 'email', subject: 'S', buttons: [{ type: 'QUICK_REPLY', text: 'Ja' }] },
        'buttons',
      ],
    ] as const) {
      const response = await account.request({ method: 'POST', url: '/v1/templates', payload })
      assert.equal(response.statusCode, 400)
      assert.equal(response.json().error.code, 'bad_request')
      assert.match(response.json().error.message, new RegExp(`^${field}`))
    }
  })

  test('400 names the invalid field', async () => {
    const account = await createTestAccount(harness)
    const cases: Array<[Json, RegExp]> = [
      [{ content: 'Hi' }, /name/],
      [{ name: 'x' }, /content/],
      [{ name: 'x'.repeat(121), content: 'Hi' }, /name/],
      [{ name: 'x', content: 'x'.repeat(20001) }, /content/],
      [{ ...chat, channel: 'sms' }, /channel/],
      [{ ...chat, purpose: 'promo' }, /purpose/],
      [{ ...chat, language: 'German' }, /language/],
      [{ ...chat, buttons: [{ type: 'QUICK_REPLY', text: 'x'.repeat(26) }] }, /buttons\/0\/text/],
      [{ ...chat, buttons: [{ type: 'CALL', text: 'Call' }] }, /buttons\/0\/type/],
      [{ ...chat, buttons: [{ type: 'QUICK_REPLY', text: 'Ja', url: 'https://a.example/' }] }, /buttons\/0\/url/],
      [{ ...chat, buttons: [{ type: 'URL', text: 'Shop' }] }, /buttons\/0\/url/],
    ]
    for (const [payload, field] of cases) {
      const response = await account.request({ method: 'POST', url: '/v1/templates', payload })
      assert.equal(response.statusCode, 400, JSON.stringify(payload))
      assert.equal(response.json().error.code, 'bad_request')
      assert.match(response.json().error.message, field)
    }
    const list = (await account.request({ method: 'GET', url: '/v1/templates' })).json()
    assert.equal(list.templates.length, 0)
  })

  test('an opt-in confirmation template with a custom button is rejected; it shows its fixed confirm button', async () => {
    const account = await createTestAccount(harness)
    const response = await account.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { ...chat, purpose: 'optin_confirm', buttons: [{ type: 'QUICK_REPLY', text: 'Klar!' }] },
    })
    assert.equal(response.statusCode, 400)
    assert.match(response.json().error.message, /^buttons/)
    const template = await createTemplate(account, { ...chat, purpose: 'optin_confirm' })
    assert.deepEqual(template.confirm_button, { type: 'QUICK_REPLY', text: 'Ja, bestätigen' })
    assert.equal(template.provider_category, 'UTILITY')
  })

  test('a draft that breaks provider rules is stored, not submittable, with English issues', async () => {
    const account = await createTestAccount(harness)
    const template = await createTemplate(account, {
      name: 'Bad',
      content: '{{1}}{{3}} hello',
      buttons: [{ type: 'URL', text: 'Go', url: 'http://insecure.example/' }],
    })
    assert.equal(template.submittable, false)
    assert.deepEqual(
      template.issues.map((i: Json) => i.code),
      ['variables_not_sequential', 'variable_at_start', 'variables_adjacent', 'button_url_invalid'],
    )
    assert.equal(template.issues[3].field, 'buttons/0/url')
  })

  test('the same Idempotency-Key replays the first response without creating again', async () => {
    const account = await createTestAccount(harness)
    const request = {
      method: 'POST' as const,
      url: '/v1/templates',
      payload: chat,
      headers: { 'idempotency-key': 'tpl-1' },
    }
    const first = await account.request(request)
    const second = await account.request(request)
    assert.equal(second.statusCode, 201)
    assert.equal(second.headers['idempotent-replayed'], 'true')
    assert.equal(second.json().template.id, first.json().template.id)
    assert.equal((await account.request({ method: 'GET', url: '/v1/templates' })).json().templates.length, 1)
  })

  test('two templates with the same provider name and language: each reports name_taken', async () => {
    const account = await createTestAccount(harness)
    const a = await createTemplate(account, { ...chat, name: 'Order Shipped' })
    const b = await createTemplate(account, { ...chat, name: 'order-shipped' })
    assert.deepEqual(
      (await getTemplate(account, a.id)).issues.map((i: Json) => i.code),
      ['name_taken'],
    )
    assert.deepEqual(
      b.issues.map((i: Json) => i.code),
      ['name_taken'],
    )
    const other = await createTemplate(account, { ...chat, name: 'Order Shipped', language: 'en' })
    assert.deepEqual(other.issues, [])
  })
})

describe('GET /v1/templates', () => {
  test('lists newest first with sendable, variables, settable_variables, language, state and provider_status', async () => {
    const account = await createTestAccount(harness)
    const older = await createTemplate(account, { ...chat, name: 'First' })
    harness.clock.advance(1000)
    const newer = await createTemplate(account, { name: 'Second', content: 'Hi {{name}}, code {{code}} ok.' })
    await approve(account, older.id)
    const body = (await account.request({ method: 'GET', url: '/v1/templates' })).json()
    assert.deepEqual(
      body.templates.map((t: Json) => t.id),
      [newer.id, older.id],
    )
    const [second, first] = body.templates
    assert.equal(first.sendable, true)
    assert.equal(first.state, 'approved')
    assert.equal(first.provider_status, 'approved')
    assert.equal(second.sendable, false)
    assert.deepEqual(second.variables, ['name', 'code'])
    assert.deepEqual(second.settable_variables, ['code'])
    assert.equal(second.language, 'de')
    assert.equal('issues' in second, false)
    assert.deepEqual([body.limit, body.offset, body.has_more, body.next_offset], [100, 0, false, null])
  })

  test('sendable is false for approved opt-in confirmation, email and system templates', async () => {
    const account = await createTestAccount(harness)
    const tenant = { accountId: account.accountId, account: { language: 'de' } }
    const optin = await createTemplate(account, { ...chat, name: 'Optin', purpose: 'optin_confirm' })
    harness.clock.advance(1000)
    const system = await service().create(tenant, { ...chat, name: 'System' }, { system: true })
    for (const id of [optin.id, system.id]) await approve(account, id)
    const list = (await account.request({ method: 'GET', url: '/v1/templates' })).json().templates
    assert.deepEqual(
      list.map((t: Json) => [t.name, t.provider_status, t.sendable, t.system]),
      [
        ['System', 'approved', false, true],
        ['Optin', 'approved', false, false],
      ],
    )
  })

  test('pages with limit and offset and filters by channel, state and sendable', async () => {
    const account = await createTestAccount(harness)
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      ids.push((await createTemplate(account, { ...chat, name: `T${i}` })).id)
      harness.clock.advance(1000)
    }
    await createTemplate(account, { name: 'Mail', content: 'Hi', channel: 'email', subject: 'S' })
    await approve(account, ids[0])
    const page = (await account.request({ method: 'GET', url: '/v1/templates?channel=chat&limit=2' })).json()
    assert.deepEqual(
      page.templates.map((t: Json) => t.id),
      [ids[2], ids[1]],
    )
    assert.deepEqual([page.has_more, page.next_offset], [true, 2])
    const rest = (await account.request({ method: 'GET', url: '/v1/templates?channel=chat&limit=2&offset=2' })).json()
    assert.deepEqual(
      rest.templates.map((t: Json) => t.id),
      [ids[0]],
    )
    const sendable = (await account.request({ method: 'GET', url: '/v1/templates?sendable=true' })).json()
    assert.deepEqual(
      sendable.templates.map((t: Json) => t.id),
      [ids[0]],
    )
    const drafts = (await account.request({ method: 'GET', url: '/v1/templates?state=draft' })).json()
    assert.equal(drafts.templates.length, 3)
    const bad = await account.request({ method: 'GET', url: '/v1/templates?limit=201' })
    assert.equal(bad.statusCode, 400)
  })
})

describe('GET /v1/templates/{id}', () => {
  test('a rejected template shows the reason as English text and is not submittable until changed', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    await approve(account, created.id, 'rejected', 'PROMOTIONAL')
    const template = await getTemplate(account, created.id)
    assert.equal(template.state, 'rejected')
    assert.equal(template.rejection_reason, 'PROMOTIONAL')
    assert.equal(template.rejection_reason_text, 'The template is promotional but was submitted as utility')
    assert.equal(template.submittable, false)
    assert.deepEqual(
      template.issues.map((i: Json) => i.code),
      ['rejected_unchanged'],
    )
  })

  test('a pending or approved template is not submittable: it is already at the provider', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    await approve(account, created.id, 'pending')
    assert.deepEqual(
      (await getTemplate(account, created.id)).issues.map((i: Json) => i.code),
      ['already_pending'],
    )
    await approve(account, created.id, 'approved')
    const template = await getTemplate(account, created.id)
    assert.deepEqual(
      template.issues.map((i: Json) => i.code),
      ['already_approved'],
    )
    assert.equal(template.provider_template_id, `wa-${created.id}`)
    assert.match(template.submitted_at, /Z$/)
  })
})

describe('PATCH /v1/templates/{id}', () => {
  test('only given fields change', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account, { ...chat, buttons: [{ type: 'QUICK_REPLY', text: 'Ja' }] })
    const response = await patch(account, created.id, { content: 'Hallo {{1}}, Bestellung {{2}} kommt heute.' })
    assert.equal(response.statusCode, 200)
    const { ok, template } = response.json()
    assert.equal(ok, true)
    assert.equal(template.content, 'Hallo {{1}}, Bestellung {{2}} kommt heute.')
    assert.equal(template.name, created.name)
    assert.deepEqual(template.buttons, created.buttons)
    assert.equal(template.language, created.language)
  })

  for (const [what, change] of [
    ['text', { content: 'Hallo {{1}}, Paket {{2}} ist da.' }],
    ['button', { buttons: [{ type: 'QUICK_REPLY', text: 'Danke' }] }],
    ['language', { language: 'en' }],
    ['name', { name: 'Parcel shipped' }],
    ['header image', { header_media: { url: 'https://cdn.example/p.jpg' } }],
  ] as const) {
    test(`a ${what} change of a chat template resets provider_status to null: it must be submitted again`, async () => {
      const account = await createTestAccount(harness)
      const created = await createTemplate(account)
      await approve(account, created.id)
      const response = await patch(account, created.id, change)
      assert.equal(response.statusCode, 200)
      const body = response.json()
      assert.equal(body.provider_status_reset, true)
      assert.equal(body.template.provider_status, null)
      assert.equal(body.template.state, 'draft')
      assert.equal(body.template.sendable, false)
      assert.equal(body.template.submittable, true)
      assert.equal((await getTemplate(account, created.id)).provider_status, null)
    })
  }

  test('a patch that changes nothing keeps the provider status', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    await approve(account, created.id)
    const body = (await patch(account, created.id, { name: chat.name, content: chat.content })).json()
    assert.equal(body.provider_status_reset, false)
    assert.equal(body.template.provider_status, 'approved')
    assert.equal(body.template.sendable, true)
  })

  test('header_media null removes the image', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account, { ...chat, header_media: { url: 'https://cdn.example/a.png' } })
    const body = (await patch(account, created.id, { header_media: null })).json()
    assert.equal(body.template.header_media, null)
    assert.equal((await getTemplate(account, created.id)).header_media, null)
  })

  test('a rejected template becomes submittable again once changed', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    await approve(account, created.id, 'rejected', 'INVALID_FORMAT')
    const body = (await patch(account, created.id, { content: 'Hallo {{1}}, Paket {{2}} ist da.' })).json()
    assert.equal(body.template.rejection_reason, null)
    assert.equal(body.template.rejection_reason_text, null)
    assert.equal(body.template.submittable, true)
  })

  test('an email template changes its subject; a chat template refuses one', async () => {
    const account = await createTestAccount(harness)
    const email = await createTemplate(account, { name: 'Mail', content: 'Hi', channel: 'email', subject: 'Old' })
    assert.equal((await patch(account, email.id, { subject: 'New' })).json().template.subject, 'New')
    const created = await createTemplate(account)
    const response = await patch(account, created.id, { subject: 'Hello' })
    assert.equal(response.statusCode, 400)
    assert.match(response.json().error.message, /^subject/)
  })

  test('400 for invalid fields, nothing changed', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    const response = await patch(account, created.id, { buttons: [{ type: 'URL', text: 'x' }] })
    assert.equal(response.statusCode, 400)
    assert.match(response.json().error.message, /buttons\/0\/url/)
    assert.deepEqual(await getTemplate(account, created.id), created)
  })
})

describe('DELETE /v1/templates/{id}', () => {
  test('deletes the template', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    const response = await account.request({ method: 'DELETE', url: `/v1/templates/${created.id}` })
    assert.equal(response.statusCode, 200)
    assert.deepEqual(response.json(), {
      ok: true,
      deleted: true,
      removed_at_provider: false,
      notice: null,
      hinweis: null,
    })
    assert.equal((await account.request({ method: 'GET', url: `/v1/templates/${created.id}` })).statusCode, 404)
  })

  test('409 while a follow-up step or automation still uses the template', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    templateUses = async (_tx, accountId, templateId) =>
      accountId === account.accountId && templateId === created.id ? ['follow-up "Welcome" step 2'] : []
    try {
      const response = await account.request({ method: 'DELETE', url: `/v1/templates/${created.id}` })
      assert.equal(response.statusCode, 409)
      assert.equal(response.json().error.code, 'template_in_use')
      assert.deepEqual(response.json().error.used_by, ['follow-up "Welcome" step 2'])
      assert.equal((await account.request({ method: 'GET', url: `/v1/templates/${created.id}` })).statusCode, 200)
    } finally {
      templateUses = async () => []
    }
  })

  test('a template known to the provider is removed there too', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    await approve(account, created.id)
    const removed: Json[] = []
    const { channels } = harness.services
    const deleteTemplate = channels.deleteTemplate
    // the chat provider as the channels module reaches it
    channels.deleteTemplate = async (accountId, template) => {
      const { name: providerName, language, providerTemplateId } = template
      removed.push({ accountId, providerName, language, providerTemplateId })
    }
    try {
      const response = await account.request({ method: 'DELETE', url: `/v1/templates/${created.id}` })
      assert.equal(response.statusCode, 200)
      assert.equal(response.json().removed_at_provider, true)
      assert.deepEqual(removed, [
        {
          accountId: account.accountId,
          providerName: 'order_shipped',
          language: 'de',
          providerTemplateId: `wa-${created.id}`,
        },
      ])
    } finally {
      channels.deleteTemplate = deleteTemplate
    }
  })

  test('when the removal at the provider fails, the local delete happens anyway with the reason in notice', async () => {
    const account = await createTestAccount(harness)
    const created = await createTemplate(account)
    await approve(account, created.id)
    const { channels } = harness.services
    const deleteTemplate = channels.deleteTemplate
    channels.deleteTemplate = async () => {
      throw new Error('provider unreachable')
    }
    try {
      const response = await account.request({ method: 'DELETE', url: `/v1/templates/${created.id}` })
      assert.equal(response.statusCode, 200)
      const body = response.json()
      assert.equal(body.removed_at_provider, false)
      assert.match(body.notice, /provider unreachable/)
      assert.equal(body.hinweis, body.notice)
      assert.equal((await account.request({ method: 'GET', url: `/v1/templates/${created.id}` })).statusCode, 404)
    } finally {
      channels.deleteTemplate = deleteTemplate
    }
  })

  test('system templates cannot be changed or deleted through the API', async () => {
    const account = await createTestAccount(harness)
    const system = await service().create({ accountId: account.accountId, account: { language: 'de' } }, chat, {
      system: true,
    })
    for (const request of [
      { method: 'DELETE' as const, url: `/v1/templates/${system.id}` },
      { method: 'PATCH' as const, url: `/v1/templates/${system.id}`, payload: { name: 'Mine' } },
    ]) {
      const response = await account.request(request)
      assert.equal(response.statusCode, 400)
      assert.equal(response.json().error.key, 'system_template')
    }
  })
})

describe('every template route', () => {
  const routes = (
    id: string,
  ): Array<{ method: 'GET' | 'POST' | 'PATCH' | 'DELETE'; url: string; payload?: Json; scope: Scope }> => [
    { method: 'GET', url: '/v1/templates', scope: 'templates:read' },
    { method: 'POST', url: '/v1/templates', payload: chat, scope: 'templates:write' },
    { method: 'GET', url: `/v1/templates/${id}`, scope: 'templates:read' },
    { method: 'PATCH', url: `/v1/templates/${id}`, payload: { name: 'New' }, scope: 'templates:write' },
    { method: 'DELETE', url: `/v1/templates/${id}`, scope: 'templates:delete' },
  ]

  test('needs its scope: 403 forbidden with key apikey_scope_fehlt; templates:write is not enough to delete', async () => {
    const owner = await createTestAccount(harness)
    const created = await createTemplate(owner)
    for (const route of routes(created.id)) {
      const others = (['templates:read', 'templates:write', 'templates:submit', 'templates:delete'] as Scope[]).filter(
        (s) => s !== route.scope,
      )
      const account = await createTestAccount(harness, { scopes: others })
      const response = await account.request(route)
      assert.equal(response.statusCode, 403, `${route.method} ${route.url}`)
      assert.equal(response.json().error.code, 'forbidden')
      assert.equal(response.json().error.key, 'apikey_scope_fehlt')
    }
  })

  test("another account's template is 404 everywhere, and stays unchanged", async () => {
    const owner = await createTestAccount(harness)
    const created = await createTemplate(owner)
    const stranger = await createTestAccount(harness)
    for (const route of routes(created.id).filter((r) => r.url.includes(created.id))) {
      const response = await stranger.request(route)
      assert.equal(response.statusCode, 404, `${route.method}`)
      assert.equal(response.json().error.code, 'not_found')
    }
    assert.deepEqual(await getTemplate(owner, created.id), created)
    const missing = await owner.request({ method: 'GET', url: `/v1/templates/${randomUUID()}` })
    assert.equal(missing.statusCode, 404)
  })

  test('401 without a key', async () => {
    const response = await harness.app.inject({ method: 'GET', url: '/v1/templates' })
    assert.equal(response.statusCode, 401)
    assert.equal(response.json().error.code, 'unauthorized')
  })
})
