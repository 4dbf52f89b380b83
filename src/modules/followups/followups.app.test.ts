import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { type Json, signedInMember, unique } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import type { Role } from '../../platform/auth/people.tables.ts'

// The web app's own follow-up and knowledge routes under /app: a session (cookie and CSRF token), the member's role
// mapped to scopes, the spec's error envelope for bad input, another account's ids 404.

let harness: Harness
harnessPerFile((created) => {
  harness = created
})

interface Member {
  account: TestAccount
  cookie: string
  request(method: string, url: string, body?: unknown): Promise<{ status: number; body: Json }>
}

async function member(role: Role, account?: TestAccount): Promise<Member> {
  const owned = account ?? (await createTestAccount(harness))
  const email = `campaign-${unique()}@example.org`
  const { cookie, csrf } = await signedInMember(harness, {
    accountId: owned.accountId,
    email,
    password: 'campaign password',
    role,
  })
  return {
    account: owned,
    cookie,
    async request(method, url, body) {
      const response = await harness.app.inject({
        method: method as 'GET',
        url,
        headers: { cookie, ...(method === 'GET' ? {} : { 'x-csrf-token': csrf }) },
        ...(body === undefined ? {} : { payload: body as Json }),
      })
      return { status: response.statusCode, body: response.body ? response.json() : {} }
    },
  }
}

const sequence = {
  name: 'Willkommen',
  steps: [
    { text: 'Hallo {{name}}, schön, dass du da bist.', delay: { amount: 2, unit: 'hours' } },
    { text: 'Hallo {{name}}, kennst du unsere Angebote?', delay: { amount: 3, unit: 'days' }, send_time: '09:30' },
  ],
}

describe('POST /app/followups, /app/followups/{id}/steps, /app/followups/check', () => {
  test('a member creates a draft sequence with its steps; the steps get templates, submitted with a number', async () => {
    const m = await member('member')
    await harness.services.channels.connect(m.account.accountId, { channel: 'chat', provider: 'sandbox' })
    const created = await m.request('POST', '/app/followups', sequence)
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const f = created.body.followup
    assert.equal(f.status, 'draft')
    assert.deepEqual(f.trigger, { type: 'optin_confirmed' })
    assert.deepEqual(
      f.steps.map((s: Json) => [s.position, s.delay.amount, s.delay.unit, s.send_time]),
      [
        [1, 2, 'hours', null],
        [2, 3, 'days', '09:30'],
      ],
    )
    assert.ok(f.steps.every((s: Json) => typeof s.template_id === 'string' && s.approval !== 'not_submitted'))
    // the REST API shows it like any other
    const got = await m.account.request({ method: 'GET', url: `/v1/followups/${f.id}` })
    assert.equal(got.statusCode, 200)
    assert.equal(got.json().followup.steps.length, 2)

    const added = await m.request('POST', `/app/followups/${f.id}/steps`, {
      text: 'Danke, {{name}}, für deine Treue.',
      delay: { amount: 1, unit: 'days' },
    })
    assert.equal(added.status, 201, JSON.stringify(added.body))
    assert.deepEqual(
      added.body.followup.steps.map((s: Json) => s.position),
      [1, 2, 3],
    )
    assert.equal(added.body.followup.steps[2].text, 'Danke, {{name}}, für deine Treue.')
  })

  test('a text the template check refuses is a 400 followup_template_invalid and nothing is stored', async () => {
    const m = await member('owner')
    const before = (await m.account.request({ method: 'GET', url: '/v1/followups' })).json().followups.length
    const refused = await m.request('POST', '/app/followups', {
      name: 'Kaputt',
      steps: [{ text: 'Willkommen, {{name}}', delay: { amount: 1, unit: 'hours' } }],
    })
    assert.equal(refused.status, 400, JSON.stringify(refused.body))
    assert.equal(refused.body.error.code, 'bad_request')
    assert.equal(refused.body.error.key, 'followup_template_invalid')
    const after = (await m.account.request({ method: 'GET', url: '/v1/followups' })).json().followups.length
    assert.equal(after, before)

    const check = await m.request('POST', '/app/followups/check', { text: 'Willkommen, {{name}}' })
    assert.equal(check.status, 200)
    assert.ok(check.body.issues.length > 0, 'the check names the variable at the edge')
    assert.ok(check.body.issues.every((i: Json) => typeof i.code === 'string' && typeof i.message === 'string'))
    const clean = await m.request('POST', '/app/followups/check', { text: 'Hallo {{name}}, willkommen!' })
    assert.deepEqual(clean.body, { issues: [] })
  })

  test('bad input is the spec envelope; 21 steps are refused; another account’s sequence is 404', async () => {
    const m = await member('admin')
    for (const body of [
      {},
      { name: 'x', steps: [] },
      { name: 'x', steps: [{ text: 'Hallo du', delay: { amount: -1, unit: 'hours' } }] },
      { name: 'x', steps: [{ text: 'Hallo du', delay: { amount: 1, unit: 'weeks' } }] },
      { name: 'x', steps: [{ text: 'Hallo du', delay: { amount: 1, unit: 'hours' }, send_time: '25:00' }] },
      { name: 'x', trigger: { type: 'tag_added' }, steps: [{ text: 'Hallo du', delay: { amount: 1, unit: 'hours' } }] },
    ]) {
      const response = await m.request('POST', '/app/followups', body)
      assert.equal(response.status, 400, JSON.stringify(body))
      assert.equal(response.body.error.code, 'bad_request')
    }
    const created = await m.request('POST', '/app/followups', {
      name: 'Lang',
      steps: Array.from({ length: 20 }, (_, i) => ({
        text: `Schritt ${i + 1} für dich`,
        delay: { amount: 1, unit: 'days' },
      })),
    })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const tooMany = await m.request('POST', `/app/followups/${created.body.followup.id}/steps`, {
      text: 'Noch einer für dich',
      delay: { amount: 1, unit: 'days' },
    })
    assert.equal(tooMany.status, 400)
    assert.equal(tooMany.body.error.code, 'bad_request')

    const other = await member('owner')
    const foreign = await other.request('POST', `/app/followups/${created.body.followup.id}/steps`, {
      text: 'Hallo du',
      delay: { amount: 1, unit: 'days' },
    })
    assert.equal(foreign.status, 404)
    assert.equal(foreign.body.error.code, 'not_found')
    const notUuid = await other.request('POST', '/app/followups/not-a-uuid/steps', {
      text: 'Hallo du',
      delay: { amount: 1, unit: 'days' },
    })
    assert.equal(notUuid.status, 404)
  })

  test('a viewer is refused (403), without a session 401, without the CSRF token 403; nothing is stored', async () => {
    const owner = await member('owner')
    const viewer = await member('viewer', owner.account)
    for (const [url, body] of [
      ['/app/followups', sequence],
      ['/app/followups/check', { text: 'Hallo {{name}}, du!' }],
    ] as const) {
      const refused = await viewer.request('POST', url, body)
      assert.equal(refused.status, 403, url)
      assert.equal(refused.body.error.code, 'forbidden')
    }
    const anonymous = await harness.app.inject({ method: 'POST', url: '/app/followups', payload: sequence })
    assert.equal(anonymous.statusCode, 401)
    const noToken = await harness.app.inject({
      method: 'POST',
      url: '/app/followups',
      payload: sequence,
      headers: { cookie: owner.cookie },
    })
    assert.equal(noToken.statusCode, 403)
    assert.equal(noToken.json().error.code, 'csrf_invalid')
    const listed = await owner.account.request({ method: 'GET', url: '/v1/followups' })
    assert.equal(listed.json().followups.length, 0)
  })
})

describe('GET /app/knowledge/documents/{id}/passages', () => {
  test("a document's passages in order with heading and page; paginated; another account's document 404", async () => {
    const m = await member('member')
    const markdown =
      '# Versand\n\nWir versenden innerhalb von zwei Tagen.\n\n# Rückgabe\n\nRücksendungen sind 30 Tage lang kostenlos.\n'
    const stored = await m.account.request({
      method: 'POST',
      url: '/v1/knowledge/documents',
      payload: { data_base64: Buffer.from(markdown).toString('base64'), filename: 'faq.md', mime: 'text/markdown' },
    })
    assert.equal(stored.statusCode, 201, stored.body)
    const id = stored.json().document.id as string
    const passages = await m.request('GET', `/app/knowledge/documents/${id}/passages`)
    assert.equal(passages.status, 200, JSON.stringify(passages.body))
    assert.deepEqual(
      passages.body.passages.map((p: Json) => [p.position, p.heading, p.page]),
      [
        [1, 'Versand', null],
        [2, 'Rückgabe', null],
      ],
    )
    assert.match(passages.body.passages[1].text, /30 Tage/)
    const first = await m.request('GET', `/app/knowledge/documents/${id}/passages?limit=1`)
    assert.equal(first.body.passages.length, 1)
    assert.equal(first.body.has_more, true)
    const bad = await m.request('GET', `/app/knowledge/documents/${id}/passages?limit=0`)
    assert.equal(bad.status, 400)

    const other = await member('owner')
    const foreign = await other.request('GET', `/app/knowledge/documents/${id}/passages`)
    assert.equal(foreign.status, 404)
    assert.equal(foreign.body.error.code, 'not_found')
    const viewer = await member('viewer', m.account)
    assert.equal((await viewer.request('GET', `/app/knowledge/documents/${id}/passages`)).status, 403)
  })
})
