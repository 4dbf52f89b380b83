import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { sandboxAccount, signedInMember } from '../../../test/helpers/fixtures.ts'
import type { Harness, TestAccount } from '../../../test/helpers/harness.ts'
import { callTool, McpClients } from '../../../test/helpers/mcp-client.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { stepTextIssues } from './followups.rules.ts'

// A step's text is the content of a WhatsApp template: a changed text the template check refuses is the 400
// followup_template_invalid on every path that changes it (the REST API with a key, the web app's session, the tool,
// the web app's add-a-step), and neither the step nor its template is touched.

let harness: Harness
const mcpClients = new McpClients()
harnessPerFile({ mcp: mcpClients }, (created) => {
  harness = created
})

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
let counter = 0

interface Setup {
  account: TestAccount
  followupId: string
  step: Json
  session: { cookie: string; csrf: string }
  client: Awaited<ReturnType<McpClients['connect']>>
}

async function setup(): Promise<Setup> {
  const account = await sandboxAccount(harness)
  const tenant = { accountId: account.accountId, account: { language: 'de' } }
  const followup = (await harness.services.followups.create(tenant, {
    name: 'Willkommen',
    steps: [{ text: 'Hallo {{name}}, schön, dass du da bist.', delay: { amount: 2, unit: 'hours' } }],
  })) as Json
  const session = await signedInMember(harness, {
    accountId: account.accountId,
    email: `step-text-${process.pid}-${++counter}@example.org`,
    password: 'step text password',
    role: 'owner',
  })
  const client = await mcpClients.connect(account.key)
  return { account, followupId: followup.id, step: followup.steps[0], session, client }
}

type Path = 'v1' | 'session' | 'tool'

/** The step change through one path; the error envelope when it is refused, null when it went through. */
async function changeText(s: Setup, path: Path, text: string): Promise<{ status: number; error: Json | null }> {
  const url = `/v1/followups/${s.followupId}/steps/${s.step.id}`
  if (path === 'tool') {
    const args = { followup_id: s.followupId, step_id: s.step.id, text }
    const preview = await callTool(s.client, 'update_followup_step', args)
    if (preview.isError) return { status: 400, error: preview.data.error }
    const done = await callTool(s.client, 'update_followup_step', {
      ...args,
      confirm_token: preview.data.confirm_token,
    })
    return done.isError ? { status: 400, error: done.data.error } : { status: 200, error: null }
  }
  const response =
    path === 'v1'
      ? await s.account.request({ method: 'PATCH', url, payload: { text } })
      : await harness.app.inject({
          method: 'PATCH',
          url,
          headers: { cookie: s.session.cookie, 'x-csrf-token': s.session.csrf },
          payload: { text },
        })
  return { status: response.statusCode, error: response.statusCode === 200 ? null : response.json().error }
}

/** The step's text and its template's content and state, as stored. */
async function stored(s: Setup) {
  const followup = (await s.account.request({ method: 'GET', url: `/v1/followups/${s.followupId}` })).json().followup
  const step = followup.steps.find((x: Json) => x.id === s.step.id)
  const template = (await s.account.request({ method: 'GET', url: `/v1/templates/${step.template_id}` })).json()
    .template
  return {
    text: step.text,
    template_id: step.template_id,
    content: template.content,
    state: template.state,
    updated_at: template.updated_at,
  }
}

function assertRefused(outcome: { status: number; error: Json | null }, text: string) {
  assert.equal(outcome.status, 400, `${JSON.stringify(text)} went through`)
  assert.equal(outcome.error?.code, 'bad_request', JSON.stringify(outcome.error))
  assert.equal(outcome.error?.key, 'followup_template_invalid', JSON.stringify(outcome.error))
  assert.ok(Array.isArray(outcome.error?.issues) && outcome.error.issues.length > 0, JSON.stringify(outcome.error))
}

describe('a changed step text the template check refuses', () => {
  for (const path of ['v1', 'session', 'tool'] as const) {
    test(`${path}: {{name}} is 400 followup_template_invalid (variable_at_start, variable_at_end); nothing stored`, async () => {
      const s = await setup()
      const beforeChange = await stored(s)
      const outcome = await changeText(s, path, '{{name}}')
      assertRefused(outcome, '{{name}}')
      const codes = ((outcome.error?.issues ?? []) as Json[]).map((i) => i.code)
      assert.ok(codes.includes('variable_at_start') && codes.includes('variable_at_end'), codes.join())
      assert.deepEqual(await stored(s), beforeChange)
      // a text the check accepts still goes through on the same path
      const fine = await changeText(s, path, 'Hallo {{name}}, neu hier?')
      assert.equal(fine.status, 200, JSON.stringify(fine.error))
      assert.equal((await stored(s)).text, 'Hallo {{name}}, neu hier?')
    })
  }

  test('app: adding a step with a refused text stores neither a step nor a template', async () => {
    const s = await setup()
    const templatesBefore = (await s.account.request({ method: 'GET', url: '/v1/templates?limit=100' })).json()
    const response = await harness.app.inject({
      method: 'POST',
      url: `/app/followups/${s.followupId}/steps`,
      headers: { cookie: s.session.cookie, 'x-csrf-token': s.session.csrf },
      payload: { text: '{{name}}', delay: { amount: 1, unit: 'days' } },
    })
    assertRefused({ status: response.statusCode, error: response.json().error }, '{{name}}')
    const templatesAfter = (await s.account.request({ method: 'GET', url: '/v1/templates?limit=100' })).json()
    assert.deepEqual(templatesAfter, templatesBefore)
    const followup = (await s.account.request({ method: 'GET', url: `/v1/followups/${s.followupId}` })).json()
    assert.equal(followup.followup.steps.length, 1)
  })

  test('property: whatever the template check refuses, no step path stores', async () => {
    const s = await setup()
    const beforeChange = await stored(s)
    const piece = fc.constantFrom('{{name}}', '{{1}}', '{{ name }}', '{{', '}}', 'Hallo', ' ', '\n', '*', 'ä', '{{x}}')
    const refused = fc
      .array(fc.oneof(piece, fc.string({ maxLength: 6 })), { minLength: 1, maxLength: 8 })
      .map((parts) => parts.join(''))
      .filter((text) => text.trim() !== '' && text.length <= 1024 && stepTextIssues(text, 'de').length > 0)
    await fc.assert(
      fc.asyncProperty(refused, fc.constantFrom<Path>('v1', 'session', 'tool'), async (text, path) => {
        assertRefused(await changeText(s, path, text), text)
        assert.deepEqual(await stored(s), beforeChange)
      }),
      { numRuns: 40 },
    )
  })
})
