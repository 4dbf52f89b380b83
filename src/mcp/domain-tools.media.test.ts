import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { account, confirmedContact, domainToolsHarness, mcp, mcpClients } from '../../test/helpers/domain-tools.ts'
import { type FileServer, startFileServer } from '../../test/helpers/files.ts'
import { nextPhone } from '../../test/helpers/fixtures.ts'
import { createKey, type Harness } from '../../test/helpers/harness.ts'
import { type Json, toolConfirmed, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'

// The domain tools for media, knowledge, automations and statistics (see domain-tools.test.ts); files come from a
// loopback HTTP server.

let harness: Harness

let files: FileServer
let filesBase: string
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
)
// what the loopback file server answers for /prices.md (a test changes it to see a refresh pick it up)
let prices = '# Preise\n\nEin Strauß Tulpen kostet 12 Euro.\n'

before(async () => {
  harness = await domainToolsHarness()
  files = await startFileServer({
    '/logo.png': { type: 'image/png', body: PNG },
    '/prices.md': { type: 'text/markdown', body: () => prices },
  })
  filesBase = files.base
})
after(async () => {
  await mcpClients.close()
  await files.close()
  await harness.close()
})

test('media: rename, where a file is used; knowledge: get, rename (search follows), fetch again from its address', async () => {
  const { accountId, client } = await account()
  const other = await account()
  const { media } = await toolOk(client, 'upload_media_from_url', { url: `${filesBase}/logo.png`, usage: 'generic' })
  const renamed = await toolOk(client, 'update_media', { media_id: media.id, filename: 'Logo Frühling.png' })
  assert.equal(renamed.media.filename, 'Logo Frühling.png')
  assert.equal(renamed.media.url, media.url, 'the address stays')
  assert.equal((await toolOk(client, 'get_media', { media_id: media.id })).media.filename, 'Logo Frühling.png')
  await toolFails(client, 'update_media', { media_id: media.id }, 'bad_request')
  await toolFails(client, 'update_media', { media_id: media.id, filename: 'no-extension' }, 'bad_request')
  await toolFails(client, 'update_media', { media_id: media.id, filename: '../etc/passwd.png' }, 'bad_request')

  assert.deepEqual(await toolOk(client, 'list_media_usages', { media_id: media.id }), {
    media_id: media.id,
    in_use: false,
    used_by: [],
  })
  const { newsletter } = await toolOk(client, 'create_newsletter', {
    subject: 'Logo',
    content: 'Hallo {{name}}, neu bei uns.',
    header_media: { media_id: media.id },
  })
  const used = await toolOk(client, 'list_media_usages', { media_id: media.id })
  assert.equal(used.in_use, true)
  assert.ok(
    used.used_by.some((u: string) => u.includes(newsletter.id)),
    JSON.stringify(used),
  )
  await toolFails(other.client, 'list_media_usages', { media_id: media.id }, 'not_found')
  await toolFails(other.client, 'update_media', { media_id: media.id, filename: 'x.png' }, 'not_found')

  const added = await toolOk(client, 'add_knowledge_document_from_url', { url: `${filesBase}/prices.md` })
  const id = added.document.id
  assert.equal(
    (await toolOk(client, 'get_knowledge_document', { document_id: id })).document.title,
    added.document.title,
  )
  const titled = await toolOk(client, 'rename_knowledge_document', { document_id: id, title: 'Preisliste Sommer' })
  assert.equal(titled.document.title, 'Preisliste Sommer')
  const byTitle = await toolOk(client, 'search_knowledge', { q: 'Preisliste' })
  assert.ok(
    byTitle.results.some((r: Json) => r.document.id === id),
    'search finds it by its new title',
  )
  await toolFails(client, 'rename_knowledge_document', { document_id: id, title: '' }, 'bad_request')

  const same = await toolOk(client, 'refresh_knowledge_document', { document_id: id })
  assert.equal(same.changed, false)
  prices = '# Preise\n\nEin Strauß Rosen kostet 15 Euro.\n'
  const fresh = await toolOk(client, 'refresh_knowledge_document', { document_id: id })
  assert.equal(fresh.changed, true)
  assert.equal(fresh.document.id, id)
  assert.equal(fresh.document.title, 'Preisliste Sommer', 'the title stays')
  assert.equal((await toolOk(client, 'search_knowledge', { q: 'Rosen' })).results[0].document.id, id)
  assert.equal((await toolOk(client, 'search_knowledge', { q: 'Tulpen' })).results.length, 0, 'the old text is gone')

  const written = await toolOk(client, 'add_knowledge_document_from_text', {
    title: 'FAQ',
    text: 'Wir haben montags zu.',
  })
  await toolFails(
    client,
    'refresh_knowledge_document',
    { document_id: written.document.id },
    'bad_request',
    'document_not_from_url',
  )
  for (const name of ['get_knowledge_document', 'refresh_knowledge_document']) {
    await toolFails(other.client, name, { document_id: id }, 'not_found')
  }
  await toolFails(other.client, 'rename_knowledge_document', { document_id: id, title: 'x' }, 'not_found')

  const reader = await mcp(await createKey(harness, accountId, ['media:read']))
  assert.equal((await toolOk(reader, 'list_media_usages', { media_id: media.id })).in_use, true)
  await toolFails(reader, 'update_media', { media_id: media.id, filename: 'x.png' }, 'forbidden', 'apikey_scope_fehlt')
  await toolFails(reader, 'get_knowledge_document', { document_id: id }, 'forbidden', 'apikey_scope_fehlt')
})

test('automations: duplicate, cancel a run, the building blocks; isolation and scopes', async () => {
  const { accountId, client } = await account()
  const other = await account()
  const { contact } = await toolOk(client, 'create_contact', { name: 'Auto', phone: nextPhone() })
  const created = await toolOk(client, 'create_automation', {
    name: 'Warten',
    trigger: { type: 'manual' },
    steps: [
      { type: 'wait', duration: { days: 2 } },
      { type: 'add_tag', tag: 'gewartet' },
    ],
  })
  const copy = await toolOk(client, 'duplicate_automation', { automation_id: created.id })
  assert.notEqual(copy.id, created.id)
  assert.equal(copy.name, 'Warten (copy)')
  assert.equal(copy.status, 'draft')
  assert.deepEqual(copy.steps, created.steps)
  assert.equal(typeof copy.signing_secret, 'string')
  assert.notEqual(copy.signing_secret, created.signing_secret)

  await toolOk(client, 'activate_automation', { automation_id: created.id })
  const started = await toolConfirmed(client, 'trigger_automation', {
    automation_id: created.id,
    contact_id: contact.id,
  })
  // the run reaches its wait step (the job runner is not running here: it is running with its step queued)
  const cancelled = await toolOk(client, 'cancel_automation_run', { automation_id: created.id, run_id: started.run_id })
  assert.equal(cancelled.state, 'cancelled')
  assert.equal(cancelled.reason, 'cancelled_by_user')
  const jobs = await harness.database.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE account_id = $1 AND queue = 'automations.run' AND state = 'queued'`,
    [accountId],
  )
  assert.equal(Number(jobs[0].n), 0, 'its queued step is gone')
  await toolFails(
    client,
    'cancel_automation_run',
    { automation_id: created.id, run_id: started.run_id },
    'run_finished',
  )
  await toolFails(client, 'cancel_automation_run', { automation_id: copy.id, run_id: started.run_id }, 'not_found')
  await toolFails(client, 'cancel_automation_run', { automation_id: created.id, run_id: 'x' }, 'bad_request')

  const blocks = await toolOk(client, 'list_automation_building_blocks')
  assert.ok(blocks.intents.includes('transactional'))
  const triggers = blocks.triggers.map((t: Json) => t.type)
  for (const t of ['contact_created', 'optin_confirmed', 'tag_added', 'keyword', 'webhook', 'calendar', 'manual']) {
    assert.ok(triggers.includes(t), t)
  }
  const wait = blocks.steps.find((s: Json) => s.type === 'wait')
  assert.ok(
    wait.fields.some((f: Json) => f.name === 'duration'),
    JSON.stringify(wait),
  )
  const tagStep = blocks.steps.find((s: Json) => s.type === 'add_tag')
  assert.deepEqual(
    tagStep.fields.map((f: Json) => [f.name, f.required, f.schema.maxLength]),
    [['tag', true, 40]],
  )

  await toolFails(other.client, 'duplicate_automation', { automation_id: created.id }, 'not_found')
  await toolFails(
    other.client,
    'cancel_automation_run',
    { automation_id: created.id, run_id: started.run_id },
    'not_found',
  )
  const reader = await mcp(await createKey(harness, accountId, ['automations:read']))
  assert.ok((await toolOk(reader, 'list_automation_building_blocks')).steps.length >= 10)
  await toolFails(reader, 'duplicate_automation', { automation_id: created.id }, 'forbidden', 'apikey_scope_fehlt')
  await toolFails(
    reader,
    'cancel_automation_run',
    { automation_id: created.id, run_id: started.run_id },
    'forbidden',
    'apikey_scope_fehlt',
  )
})

test('statistics of a template, a follow-up sequence and an automation; ranges, isolation and scopes', async () => {
  const { accountId, client } = await account()
  const other = await account()
  await harness.services.channels.connect(accountId, {
    channel: 'chat',
    provider: 'sandbox',
  })
  const erika = await confirmedContact(client, accountId, 'Erika')
  const { template } = await toolOk(client, 'create_template', {
    name: 'Gruss',
    text: 'Hallo {{name}}, schön dich zu sehen.',
  })
  await toolConfirmed(client, 'submit_template', { template_id: template.id })
  await toolConfirmed(client, 'send_template', {
    contact_id: erika,
    template_id: template.id,
    idempotency_key: 'stat-1',
  })
  const templateStats = await toolOk(client, 'get_template_statistics', { template_id: template.id })
  assert.equal(templateStats.range, '30d')
  assert.equal(templateStats.sends.total, 1)
  assert.equal(templateStats.by_origin.api, 1)
  assert.equal(
    templateStats.sends.sent + templateStats.sends.queued + templateStats.sends.skipped + templateStats.sends.failed,
    1,
  )
  const allTime = await toolOk(client, 'get_template_statistics', { template_id: template.id, range: 'all' })
  assert.equal(allTime.since, null)
  await toolFails(client, 'get_template_statistics', { template_id: template.id, range: '1y' }, 'bad_request')

  const { followup } = await toolConfirmed(client, 'create_followup', {
    name: 'Danke',
    steps: [{ text: 'Danke für deinen Besuch, bis bald.', delay: { amount: 1, unit: 'days' } }],
  })
  await toolConfirmed(client, 'activate_followup', { followup_id: followup.id })
  const followupStats = await toolOk(client, 'get_followup_statistics', { followup_id: followup.id, range: '7d' })
  assert.equal(followupStats.enrollments.started, 1, JSON.stringify(followupStats))
  assert.equal(followupStats.enrollments.active, 1)
  assert.equal(followupStats.enrollments.completion_rate, null)
  assert.equal(followupStats.steps.length, 1)
  assert.equal(followupStats.steps[0].sends.total, 0)

  const automation = await toolOk(client, 'create_automation', {
    name: 'Markieren',
    trigger: { type: 'manual' },
    steps: [{ type: 'add_tag', tag: 'markiert' }],
  })
  await toolOk(client, 'activate_automation', { automation_id: automation.id })
  await toolConfirmed(client, 'trigger_automation', { automation_id: automation.id, contact_id: erika })
  const automationStats = await toolOk(client, 'get_automation_statistics', { automation_id: automation.id })
  assert.equal(automationStats.runs.total, 1)
  assert.deepEqual(automationStats.by_source, { manual: 1 })
  assert.equal(automationStats.sends.total, 0)

  await toolFails(other.client, 'get_template_statistics', { template_id: template.id }, 'not_found')
  await toolFails(other.client, 'get_followup_statistics', { followup_id: followup.id }, 'not_found')
  await toolFails(other.client, 'get_automation_statistics', { automation_id: automation.id }, 'not_found')
  const stats = await mcp(await createKey(harness, accountId, ['stats:read']))
  assert.equal((await toolOk(stats, 'get_template_statistics', { template_id: template.id })).sends.total, 1)
  const templatesOnly = await mcp(await createKey(harness, accountId, ['templates:read', 'followups:read']))
  await toolFails(
    templatesOnly,
    'get_template_statistics',
    { template_id: template.id },
    'forbidden',
    'apikey_scope_fehlt',
  )
  await toolFails(
    templatesOnly,
    'get_followup_statistics',
    { followup_id: followup.id },
    'forbidden',
    'apikey_scope_fehlt',
  )
})
