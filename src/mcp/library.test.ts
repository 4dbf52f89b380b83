import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { type FileServer, startFileServer } from '../../test/helpers/files.ts'
import { sandboxAccount } from '../../test/helpers/fixtures.ts'
import { createHarness, type Harness } from '../../test/helpers/harness.ts'
import { McpClients, toolConfirmed, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { createMember } from '../modules/people/index.ts'

// The tools for follow-up sequences, the media library, the knowledge documents and the AI settings, the team and
// the statistics, through the SDK's Client against a listening server; files come from a loopback HTTP server.

let harness: Harness
let files: FileServer
let filesBase: string
const mcpClients = new McpClients()

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
)
const MARKDOWN = '# Lieferung\n\nWir liefern Blumen dienstags und freitags in ganz Bremen.\n'

before(async () => {
  harness = await createHarness({ config: { allowPrivateTargets: true } })
  await mcpClients.listen(harness)
  files = await startFileServer({
    '/pixel.png': { type: 'image/png', body: PNG },
    '/delivery.md': { type: 'text/markdown', body: MARKDOWN },
  })
  filesBase = files.base
})
after(async () => {
  await mcpClients.close()
  await files.close()
  await harness.close()
})

async function account() {
  const created = await sandboxAccount(harness, { messagesPerMonth: 100 })
  const client = await mcpClients.connect(created.key)
  return { account: created, client }
}

test('follow-ups: create in two steps, list, get, rename, change a step in two steps, activate, pause, timing', async () => {
  const { client } = await account()
  const other = await account()
  const input = {
    name: 'Willkommen',
    trigger: { type: 'tag_added', tag: 'neukunde' },
    steps: [
      { text: 'Hallo {{name}}, schön, dass Sie da sind!', delay: { amount: 1, unit: 'hours' } },
      { text: 'Haben Sie noch Fragen zu unseren Blumen?', delay: { amount: 2, unit: 'days' }, send_time: '10:00' },
    ],
  }
  const preview = await toolOk(client, 'create_followup', input)
  assert.equal(preview.executed, false)
  assert.equal(preview.preview.steps, 2)
  assert.equal((await toolOk(client, 'list_followups')).followups.length, 0, 'the preview created nothing')
  const created = await toolOk(client, 'create_followup', { ...input, confirm_token: preview.confirm_token })
  const id = created.followup.id as string
  assert.equal(created.followup.status, 'draft')
  assert.equal(created.followup.steps.length, 2)
  await toolFails(client, 'create_followup', { ...input, steps: [] }, 'bad_request')

  const listed = await toolOk(client, 'list_followups')
  assert.deepEqual(
    listed.followups.map((f: { id: string; steps_count: number }) => [f.id, f.steps_count]),
    [[id, 2]],
  )
  assert.equal((await toolOk(client, 'get_followup', { followup_id: id })).followup.name, 'Willkommen')
  await toolFails(other.client, 'get_followup', { followup_id: id }, 'not_found')

  assert.equal(
    (await toolOk(client, 'rename_followup', { followup_id: id, name: 'Begrüßung' })).followup.name,
    'Begrüßung',
  )
  const step = created.followup.steps[1]
  const changed = await toolConfirmed(client, 'update_followup_step', {
    followup_id: id,
    step_id: step.id,
    delay: { amount: 3, unit: 'days' },
  })
  assert.deepEqual(changed.followup.steps[1].delay, { amount: 3, unit: 'days' })
  await toolFails(client, 'update_followup_step', { followup_id: id, step_id: step.id }, 'bad_request')

  const activation = await toolOk(client, 'activate_followup', { followup_id: id })
  assert.equal(activation.executed, false)
  assert.equal((await toolOk(client, 'get_followup', { followup_id: id })).followup.status, 'draft')
  const active = await toolOk(client, 'activate_followup', { followup_id: id, confirm_token: activation.confirm_token })
  assert.equal(active.followup.status, 'active')
  assert.equal((await toolOk(client, 'pause_followup', { followup_id: id })).followup.status, 'paused')

  const timing = await toolOk(client, 'update_followup_timing', { send_time: '09:30', timezone: 'Europe/Berlin' })
  assert.equal(timing.send_time, '09:30')
  assert.equal((await toolOk(client, 'get_followup_timing')).send_time, '09:30')
  await toolFails(client, 'update_followup_timing', { send_time: '25:00' }, 'bad_request')
})

test('media: upload from a URL, list, get, delete in two steps; another account sees nothing', async () => {
  const { client } = await account()
  const other = await account()
  const uploaded = await toolOk(client, 'upload_media_from_url', { url: `${filesBase}/pixel.png`, usage: 'generic' })
  const id = uploaded.media.id as string
  assert.equal(uploaded.media.kind, 'image')
  assert.equal(uploaded.media.width, 1)
  assert.deepEqual(
    (await toolOk(client, 'list_media', { kind: 'image' })).media.map((m: { id: string }) => m.id),
    [id],
  )
  assert.equal((await toolOk(client, 'get_media', { media_id: id })).media.mime, 'image/png')
  await toolFails(other.client, 'get_media', { media_id: id }, 'not_found')
  await toolFails(other.client, 'delete_media', { media_id: id }, 'not_found')
  await toolFails(client, 'upload_media_from_url', { url: `${filesBase}/missing.png` }, 'bad_request')

  const preview = await toolOk(client, 'delete_media', { media_id: id })
  assert.equal(preview.preview.media.id, id)
  assert.equal((await toolOk(client, 'get_media', { media_id: id })).media.id, id, 'the preview deleted nothing')
  assert.equal((await toolOk(client, 'delete_media', { media_id: id, confirm_token: preview.confirm_token })).ok, true)
  await toolFails(client, 'get_media', { media_id: id }, 'not_found')
})

test('knowledge: add from text and from a URL, list, search, delete in two steps; AI settings and replies', async () => {
  const { client } = await account()
  const other = await account()
  const fromText = await toolOk(client, 'add_knowledge_document_from_text', {
    title: 'Öffnungszeiten',
    text: '# Öffnungszeiten\n\nDer Laden ist montags bis samstags von 9 bis 18 Uhr geöffnet.\n',
  })
  assert.equal(fromText.document.title, 'Öffnungszeiten')
  const fromUrl = await toolOk(client, 'add_knowledge_document_from_url', { url: `${filesBase}/delivery.md` })
  assert.equal(fromUrl.document.filename, 'delivery.md')
  const listed = await toolOk(client, 'list_knowledge_documents')
  assert.deepEqual(
    listed.documents.map((d: { id: string }) => d.id).sort(),
    [fromText.document.id, fromUrl.document.id].sort(),
  )
  const found = await toolOk(client, 'search_knowledge', { q: 'liefern' })
  assert.equal(found.match, 'all')
  assert.equal(found.results[0].document.id, fromUrl.document.id)
  assert.equal((await toolOk(other.client, 'search_knowledge', { q: 'liefern' })).results.length, 0)
  await toolFails(other.client, 'delete_knowledge_document', { document_id: fromUrl.document.id }, 'not_found')
  await toolFails(client, 'add_knowledge_document_from_text', { title: 'a/b', text: 'x' }, 'bad_request')

  const deleted = await toolConfirmed(client, 'delete_knowledge_document', { document_id: fromUrl.document.id })
  assert.equal(deleted.deleted, true)
  assert.equal((await toolOk(client, 'search_knowledge', { q: 'liefern' })).results.length, 0)

  const settings = await toolOk(client, 'update_ai_settings', { replies_per_contact_per_hour: 5 })
  assert.equal(settings.replies_per_contact_per_hour, 5)
  assert.equal((await toolOk(client, 'get_ai_settings')).replies_per_contact_per_hour, 5)
  await toolFails(client, 'update_ai_settings', { replies_per_contact_per_hour: 61 }, 'bad_request')
  assert.deepEqual((await toolOk(client, 'list_ai_replies')).ai_replies, [])
})

test('team and statistics', async () => {
  const { account: created, client } = await account()
  await createMember(harness.database.orm, {
    accountId: created.accountId,
    email: `vera${created.accountId.slice(0, 8)}@example.org`,
    name: 'Vera Viewer',
    password: 'long password 12',
    role: 'viewer',
  })
  const team = await toolOk(client, 'list_team_members')
  assert.deepEqual(
    team.members.map((m: { name: string; role: string }) => [m.name, m.role]),
    [['Vera Viewer', 'viewer']],
  )
  await toolOk(client, 'create_contact', { name: 'Erika', email: 'erika@example.org' })
  const stats = await toolOk(client, 'get_statistics', { range: '7d' })
  assert.equal(stats.stats.contacts.total, 1)
  await toolFails(client, 'get_statistics', { range: '14d' }, 'bad_request')
})
