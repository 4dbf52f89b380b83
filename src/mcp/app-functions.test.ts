import assert from 'node:assert/strict'
import { test } from 'node:test'
import { setOptin } from '../../test/helpers/fixtures.ts'
import { createKey, type Harness } from '../../test/helpers/harness.ts'
import { type Json, toolConfirmed, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { mcpHarnessPerFile } from '../../test/helpers/mcp-file.ts'

// The tools for the web app's own functions (/app): consent history, CSV import, the template and follow-up checks,
// adding a follow-up step, a document's passages. Through the SDK's Client, so every answer is validated against
// the tool's outputSchema; the scopes and the account isolation of the /app routes.

let harness: Harness
const { mcp, account } = mcpHarnessPerFile((created) => {
  harness = created
})

test('consent history: every opt-in change with its source, oldest first; another account’s contact is a 404', async () => {
  const { accountId, client } = await account()
  const other = await account()
  const { contact } = await toolOk(client, 'create_contact', { name: 'Erika', phone: '+4915112340001' })
  assert.deepEqual((await toolOk(client, 'get_contact_consent_history', { contact_id: contact.id })).history, [])
  for (const to of ['confirmed', 'opted_out'] as const) {
    await setOptin(harness, accountId, contact.id, to)
  }
  const { history } = await toolOk(client, 'get_contact_consent_history', { contact_id: contact.id })
  assert.deepEqual(
    history.map((h: Json) => [h.channel, h.from, h.to, h.source]),
    [
      ['chat', 'none', 'confirmed', 'test'],
      ['chat', 'confirmed', 'opted_out', 'test'],
    ],
  )
  await toolFails(other.client, 'get_contact_consent_history', { contact_id: contact.id }, 'not_found')
  const narrow = await mcp(await createKey(harness, accountId, ['stats:read']))
  assert.equal(
    (await toolFails(narrow, 'get_contact_consent_history', { contact_id: contact.id }, 'forbidden')).key,
    'apikey_scope_fehlt',
  )
})

test('import_contacts_csv: created, updated, rejected with reasons; opt-ins never raised; a header without address is 400', async () => {
  const { client } = await account()
  const other = await account()
  const csv = [
    'name,email,phone,tags',
    'Anna,anna@example.org,,stammkunde',
    'Ben,,+49 151 2345 0002,',
    'Nobody,,,',
    'Carl,not-an-address,,',
  ].join('\n')
  const first = await toolOk(client, 'import_contacts_csv', { csv })
  assert.equal(first.report.rows, 4)
  assert.equal(first.report.created, 2)
  assert.equal(first.report.rejected, 2)
  assert.deepEqual(
    first.report.rejected_lines.map((l: Json) => l.line),
    [4, 5],
  )
  const again = await toolOk(client, 'import_contacts_csv', { csv: 'name,email\nAnna Berg,anna@example.org\n' })
  assert.equal(again.report.updated, 1)
  assert.equal(again.report.created, 0)
  const found = await toolOk(client, 'search_contacts', { query: 'anna' })
  assert.equal(found.contacts[0].name, 'Anna Berg')
  assert.equal(found.contacts[0].optin_chat, 'none')
  assert.deepEqual(found.contacts[0].tags, ['stammkunde'])
  assert.equal((await toolOk(other.client, 'search_contacts', { query: 'anna' })).contacts.length, 0)

  const refused = await toolFails(client, 'import_contacts_csv', { csv: 'name,city\nAnna,Berlin\n' }, 'bad_request')
  assert.equal(refused.key, 'csv_invalid')
  await toolFails(client, 'import_contacts_csv', { csv: '' }, 'bad_request')
})

test('check_template and check_followup_step_text: the deterministic check, nothing stored', async () => {
  const { client } = await account()
  const clean = await toolOk(client, 'check_template', { name: 'Welcome', content: 'Hello {{name}}, welcome!' })
  assert.deepEqual(clean.issues, [])
  assert.deepEqual(clean.variables, ['name'])
  assert.equal(clean.provider_name, 'welcome')
  const broken = await toolOk(client, 'check_template', { name: 'Broken', content: '{{1}}' })
  assert.ok(broken.issues.length > 0, JSON.stringify(broken))
  assert.equal((await toolOk(client, 'list_templates')).templates.length, 0, 'nothing was stored')
  await toolOk(client, 'create_template', { name: 'Welcome', text: 'Hello {{name}}!' })
  const clash = await toolOk(client, 'check_template', { name: 'Welcome', content: 'Hi {{name}}' })
  assert.ok(
    clash.issues.some((i: Json) => i.field === 'name'),
    `another chat template has this provider name: ${JSON.stringify(clash.issues)}`,
  )

  assert.deepEqual(
    (await toolOk(client, 'check_followup_step_text', { text: 'Hallo {{name}}, wie geht es?' })).issues,
    [],
  )
  assert.ok((await toolOk(client, 'check_followup_step_text', { text: '{{1}}' })).issues.length > 0)
})

test('add_followup_step (two-step, it submits a template) and get_knowledge_document_passages; isolation', async () => {
  const { client } = await account()
  const other = await account()
  const created = await toolConfirmed(client, 'create_followup', {
    name: 'Willkommen',
    steps: [{ text: 'Hallo {{name}}, schön, dass Sie da sind!', delay: { amount: 1, unit: 'hours' } }],
  })
  const id = created.followup.id as string
  const step = { followup_id: id, text: 'Haben Sie noch Fragen?', delay: { amount: 2, unit: 'days' } }
  const preview = await toolOk(client, 'add_followup_step', step)
  assert.equal(preview.executed, false)
  assert.equal(preview.preview.followup.steps, 1)
  assert.equal((await toolOk(client, 'get_followup', { followup_id: id })).followup.steps.length, 1, 'preview')
  const added = await toolOk(client, 'add_followup_step', { ...step, confirm_token: preview.confirm_token })
  assert.equal(added.followup.steps.length, 2)
  assert.equal(added.followup.steps[1].text, 'Haben Sie noch Fragen?')
  await toolFails(other.client, 'add_followup_step', step, 'not_found')
  await toolFails(client, 'add_followup_step', { ...step, delay: { amount: 400, unit: 'days' } }, 'bad_request')

  const document = await toolOk(client, 'add_knowledge_document_from_text', {
    title: 'Öffnungszeiten',
    text: '# Öffnungszeiten\n\nMontags bis samstags von 9 bis 18 Uhr.\n\n# Lieferung\n\nWir liefern in ganz Berlin.\n',
  })
  const passages = await toolOk(client, 'get_knowledge_document_passages', { document_id: document.document.id })
  assert.deepEqual(
    passages.passages.map((p: Json) => p.heading),
    ['Öffnungszeiten', 'Lieferung'],
  )
  assert.equal(passages.has_more, false)
  const page = await toolOk(client, 'get_knowledge_document_passages', { document_id: document.document.id, limit: 1 })
  assert.equal(page.passages.length, 1)
  assert.equal(page.has_more, true)
  await toolFails(other.client, 'get_knowledge_document_passages', { document_id: document.document.id }, 'not_found')
})

test('check_automation: the safety rules’ changes and the refusals of a save, nothing stored; a narrow key is refused', async () => {
  const { accountId, client } = await account()
  const definition = {
    intent: 'newsletter',
    trigger: { type: 'manual' },
    steps: [
      { type: 'send_text', text: 'Willkommen' },
      { type: 'wait', duration: { days: 1 } },
      { type: 'send_text', text: 'Schon gesehen?' },
    ],
  }
  const checked = await toolOk(client, 'check_automation', definition)
  assert.deepEqual(checked.problems, [])
  assert.deepEqual(
    checked.changes.map((c: Json) => c.kind),
    ['followup_cut', 'double_optin_prepended'],
  )
  assert.equal(checked.steps[0].type, 'double_optin')
  const refused = await toolOk(client, 'check_automation', {
    trigger: { type: 'manual' },
    steps: [{ type: 'send_template', template_id: '00000000-0000-4000-8000-000000000000' }],
  })
  assert.equal(refused.problems.length, 1, JSON.stringify(refused))
  assert.equal((await toolOk(client, 'list_automations', {})).automations.length, 0)
  const narrow = await mcp(await createKey(harness, accountId, ['automations:read']))
  await toolFails(narrow, 'check_automation', definition, 'forbidden')
})

test('ask_knowledge_test_question: without an AI endpoint a 409 ai_unavailable, and nothing is stored', async () => {
  const { client } = await account()
  const failed = await toolFails(
    client,
    'ask_knowledge_test_question',
    { question: 'Wann habt ihr offen?' },
    'ai_unavailable',
  )
  assert.equal(failed.key, 'ai_not_configured')
  await toolFails(client, 'ask_knowledge_test_question', { question: '' }, 'bad_request')
  assert.deepEqual((await toolOk(client, 'list_ai_replies', {})).ai_replies, [])
})
