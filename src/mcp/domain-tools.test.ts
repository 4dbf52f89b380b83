import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { nextPhone } from '../../test/helpers/fixtures.ts'
import { createHarness, createKey, createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { type Json, McpClients, toolConfirmed, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { channelsServiceFor } from '../modules/channels/index.ts'
import { recordOptinChange } from '../modules/contacts/index.ts'

// The tools added for newsletters, follow-ups, automations, templates, media, knowledge and statistics, through the
// SDK's Client (every answer validated against the tool's outputSchema): valid and invalid arguments, another
// account's ids (404) and the scopes.

let harness: Harness
const mcpClients = new McpClients()

let files: Server
let filesBase: string
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=',
  'base64',
)
// what the loopback file server answers for /prices.md (a test changes it to see a refresh pick it up)
let prices = '# Preise\n\nEin Strauß Tulpen kostet 12 Euro.\n'

before(async () => {
  harness = await createHarness({ config: { allowPrivateTargets: true } })
  await mcpClients.listen(harness)
  files = createServer((request, response) => {
    if (request.url === '/logo.png') response.writeHead(200, { 'content-type': 'image/png' }).end(PNG)
    else if (request.url === '/prices.md') response.writeHead(200, { 'content-type': 'text/markdown' }).end(prices)
    else response.writeHead(404).end()
  })
  await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve))
  filesBase = `http://127.0.0.1:${(files.address() as AddressInfo).port}`
})
after(async () => {
  await mcpClients.close()
  await new Promise((resolve) => files.close(resolve))
  await harness.close()
})

const mcp = (token: string) => mcpClients.connect(token)

async function account() {
  const created = await createTestAccount(harness, { plan: { requestsPerMinute: 10_000 } })
  return { ...created, client: await mcp(created.key) }
}

async function confirmedContact(client: Client, accountId: string, name: string, tags: string[] = []) {
  const { contact } = await toolOk(client, 'create_contact', { name, phone: nextPhone() })
  await harness.database.orm.transaction((tx) =>
    recordOptinChange(tx, harness.clock, {
      accountId,
      contactId: contact.id,
      channel: 'chat',
      to: 'confirmed',
      source: 'test',
    }),
  )
  for (const tag of tags) await toolOk(client, 'add_contact_tag', { contact_id: contact.id, tag })
  return contact.id as string
}

test('newsletters: duplicate, preview for a contact, estimate a segment, recipients and clicks; isolation and scopes', async () => {
  const { accountId, client } = await account()
  const other = await account()
  const erika = await confirmedContact(client, accountId, 'Erika Muster', ['vip'])
  const { contact: ben } = await toolOk(client, 'create_contact', { name: 'Ben', phone: nextPhone() })
  const { newsletter } = await toolOk(client, 'create_newsletter', {
    subject: 'Frühling',
    content: 'Hallo {{name}}, unsere Tulpen sind da.',
  })
  await toolOk(client, 'update_newsletter', {
    newsletter_id: newsletter.id,
    cta: { text: 'Zum Shop', url: 'https://shop.example/' },
    segment: { tags_any: ['vip'] },
  })

  const copy = (await toolOk(client, 'duplicate_newsletter', { newsletter_id: newsletter.id })).newsletter
  assert.notEqual(copy.id, newsletter.id)
  assert.equal(copy.name, 'Frühling (copy)')
  assert.equal(copy.status, 'draft')
  assert.deepEqual(copy.segment, { tags_any: ['vip'] })
  assert.deepEqual(copy.cta, { text: 'Zum Shop', url: 'https://shop.example/' })
  assert.equal(copy.recipients_estimate, 1)
  assert.equal((await toolOk(client, 'list_newsletters')).newsletters.length, 2)

  const preview = await toolOk(client, 'preview_newsletter', { newsletter_id: newsletter.id, contact_id: erika })
  assert.equal(preview.text, '*Frühling*\n\nHallo Erika, unsere Tulpen sind da.')
  assert.equal(preview.would_receive, true)
  assert.equal(preview.cta.text, 'Zum Shop')
  const notOptedIn = await toolOk(client, 'preview_newsletter', { newsletter_id: newsletter.id, contact_id: ben.id })
  assert.equal(notOptedIn.would_receive, false)
  assert.equal(notOptedIn.reason, 'optin_not_confirmed')
  await toolFails(client, 'preview_newsletter', { newsletter_id: newsletter.id, contact_id: 'nope' }, 'bad_request')
  const foreignContact = await confirmedContact(other.client, other.accountId, 'Fremd')
  await toolFails(
    client,
    'preview_newsletter',
    { newsletter_id: newsletter.id, contact_id: foreignContact },
    'not_found',
  )
  await toolFails(
    other.client,
    'preview_newsletter',
    { newsletter_id: newsletter.id, contact_id: foreignContact },
    'not_found',
  )

  assert.equal((await toolOk(client, 'estimate_newsletter_recipients', {})).recipients_estimate, 1)
  assert.equal(
    (await toolOk(client, 'estimate_newsletter_recipients', { segment: { tags_exclude: ['vip'] } }))
      .recipients_estimate,
    0,
  )
  const unknown = await toolFails(
    client,
    'estimate_newsletter_recipients',
    { segment: { tags_any: ['gibtsnicht'] } },
    'bad_request',
    'segment_unknown_tags',
  )
  assert.match(unknown.message, /gibtsnicht/)
  await toolFails(client, 'estimate_newsletter_recipients', { segment: { tags_any: ['x'.repeat(41)] } }, 'bad_request')

  // before it starts nobody got it: empty lists (the sending itself is tested in newsletters.cta.test.ts)
  const recipients = await toolOk(client, 'list_newsletter_recipients', {
    newsletter_id: newsletter.id,
    status: 'sent',
  })
  assert.deepEqual(recipients.recipients, [])
  assert.equal(recipients.has_more, false)
  await toolFails(client, 'list_newsletter_recipients', { newsletter_id: newsletter.id, status: 'lost' }, 'bad_request')
  await toolFails(client, 'list_newsletter_recipients', { newsletter_id: newsletter.id, limit: 101 }, 'bad_request')
  assert.deepEqual((await toolOk(client, 'list_newsletter_clicks', { newsletter_id: newsletter.id })).clicks, [])
  for (const name of ['duplicate_newsletter', 'list_newsletter_recipients', 'list_newsletter_clicks']) {
    await toolFails(other.client, name, { newsletter_id: newsletter.id }, 'not_found')
  }

  const fine = await toolOk(client, 'check_newsletter', { newsletter_id: newsletter.id })
  assert.equal(fine.schedulable, true, JSON.stringify(fine))
  assert.deepEqual(fine.issues, [])
  assert.equal(fine.body_length, '*Frühling*\n\nHallo {{name}}, unsere Tulpen sind da.'.length)
  const { newsletter: long } = await toolOk(client, 'create_newsletter', { subject: 'Lang', content: 'x '.repeat(600) })
  const tooLong = await toolOk(client, 'check_newsletter', { newsletter_id: long.id })
  assert.equal(tooLong.schedulable, false)
  assert.ok(
    tooLong.issues.some((i: Json) => i.field === 'content'),
    JSON.stringify(tooLong.issues),
  )
  await toolFails(other.client, 'check_newsletter', { newsletter_id: newsletter.id }, 'not_found')

  // a draft's text changes; a scheduled newsletter's does not
  const edited = await toolOk(client, 'update_newsletter_content', {
    newsletter_id: copy.id,
    subject: 'Sommer',
    content: 'Hallo {{name}}, die Rosen blühen.',
  })
  assert.equal(edited.newsletter.subject, 'Sommer')
  assert.equal(edited.newsletter.name, 'Frühling (copy)')
  await toolFails(client, 'update_newsletter_content', { newsletter_id: copy.id }, 'bad_request')
  await toolFails(client, 'update_newsletter_content', { newsletter_id: copy.id, subject: '' }, 'bad_request')
  await toolFails(other.client, 'update_newsletter_content', { newsletter_id: copy.id, name: 'x' }, 'not_found')
  await harness.database.query(`UPDATE newsletters SET status = 'sent', phase = 'done' WHERE id = $1`, [copy.id])
  await toolFails(
    client,
    'update_newsletter_content',
    { newsletter_id: copy.id, name: 'x' },
    'bad_request',
    'newsletter_not_draft',
  )

  const stats = await toolOk(client, 'get_newsletter_statistics', { newsletter_id: newsletter.id })
  assert.equal(stats.sends.total, 0)
  assert.equal(stats.click_rate, null)
  await toolFails(other.client, 'get_newsletter_statistics', { newsletter_id: newsletter.id }, 'not_found')

  // newsletters:read without contacts:read: no preview (it shows the contact's data); no copy without write
  const reader = await mcp(await createKey(harness, accountId, ['newsletters:read']))
  assert.equal(
    (await toolFails(reader, 'preview_newsletter', { newsletter_id: newsletter.id, contact_id: erika }, 'forbidden'))
      .key,
    'apikey_scope_fehlt',
  )
  await toolFails(reader, 'duplicate_newsletter', { newsletter_id: newsletter.id }, 'forbidden', 'apikey_scope_fehlt')
  assert.equal((await toolOk(reader, 'estimate_newsletter_recipients', {})).recipients_estimate, 1)
  await toolFails(
    reader,
    'get_newsletter_statistics',
    { newsletter_id: newsletter.id },
    'forbidden',
    'apikey_scope_fehlt',
  )
  await toolFails(
    reader,
    'update_newsletter_content',
    { newsletter_id: newsletter.id, name: 'x' },
    'forbidden',
    'apikey_scope_fehlt',
  )
  const statsKey = await mcp(await createKey(harness, accountId, ['stats:read']))
  await toolFails(
    statsKey,
    'list_newsletter_clicks',
    { newsletter_id: newsletter.id },
    'forbidden',
    'apikey_scope_fehlt',
  )
  assert.equal((await toolOk(statsKey, 'get_newsletter_statistics', { newsletter_id: newsletter.id })).sends.total, 0)
})

test('follow-ups: enrollments (list, enroll, stop), duplicate, trigger, remove and move steps; isolation and scopes', async () => {
  const { accountId, client } = await account()
  const other = await account()
  const erika = await confirmedContact(client, accountId, 'Erika')
  const { contact: ben } = await toolOk(client, 'create_contact', { name: 'Ben', phone: nextPhone() })
  const created = await toolConfirmed(client, 'create_followup', {
    name: 'Willkommen',
    steps: [
      { text: 'Hallo {{name}}, schön dass du da bist.', delay: { amount: 1, unit: 'days' } },
      { text: 'Schon gesehen? Unsere Angebote.', delay: { amount: 2, unit: 'days' } },
      { text: 'Letzte Erinnerung.', delay: { amount: 3, unit: 'days' } },
    ],
  })
  const followup = created.followup
  const [s1, s2, s3] = followup.steps.map((s: Json) => s.id)

  // a draft: nobody can be enrolled by hand yet
  await toolFails(
    client,
    'enroll_contact_in_followup',
    { followup_id: followup.id, contact_id: erika },
    'followup_not_active',
  )

  // trigger and step order while it is a draft
  const tagged = await toolOk(client, 'set_followup_trigger', {
    followup_id: followup.id,
    trigger: { type: 'tag_added', tag: 'neukunde' },
  })
  assert.deepEqual(tagged.followup.trigger, { type: 'tag_added', tag: 'neukunde' })
  await toolFails(
    client,
    'set_followup_trigger',
    { followup_id: followup.id, trigger: { type: 'tag_added' } },
    'bad_request',
  )
  await toolFails(
    client,
    'set_followup_trigger',
    { followup_id: followup.id, trigger: { type: 'tag_added', tag: 'x'.repeat(41) } },
    'bad_request',
  )
  const moved = await toolOk(client, 'move_followup_step', { followup_id: followup.id, step_id: s3, position: 1 })
  assert.deepEqual(
    moved.followup.steps.map((s: Json) => [s.id, s.position]),
    [
      [s3, 1],
      [s1, 2],
      [s2, 3],
    ],
  )
  await toolFails(client, 'move_followup_step', { followup_id: followup.id, step_id: s3, position: 4 }, 'bad_request')
  await toolFails(client, 'move_followup_step', { followup_id: followup.id, step_id: s3, position: 0 }, 'bad_request')
  const removal = await toolOk(client, 'remove_followup_step', { followup_id: followup.id, step_id: s1 })
  assert.equal(removal.confirmation_required, true)
  assert.equal(removal.preview.step.position, 2)
  assert.equal(
    (await toolOk(client, 'get_followup', { followup_id: followup.id })).followup.steps.length,
    3,
    'the preview changed nothing',
  )
  const removed = await toolOk(client, 'remove_followup_step', {
    followup_id: followup.id,
    step_id: s1,
    confirm_token: removal.confirm_token,
  })
  assert.deepEqual(
    removed.followup.steps.map((s: Json) => [s.id, s.position]),
    [
      [s3, 1],
      [s2, 2],
    ],
  )

  // the copy: same trigger and steps, a draft with its own templates
  const copy = (await toolConfirmed(client, 'duplicate_followup', { followup_id: followup.id })).followup
  assert.equal(copy.name, 'Willkommen (copy)')
  assert.equal(copy.status, 'draft')
  assert.deepEqual(copy.trigger, { type: 'tag_added', tag: 'neukunde' })
  assert.deepEqual(
    copy.steps.map((s: Json) => s.text),
    removed.followup.steps.map((s: Json) => s.text),
  )
  assert.notEqual(copy.steps[0].template_id, removed.followup.steps[0].template_id)

  // active: enroll by hand (two-step), list, stop
  await toolConfirmed(client, 'activate_followup', { followup_id: followup.id })
  await toolFails(
    client,
    'move_followup_step',
    { followup_id: followup.id, step_id: s3, position: 2 },
    'followup_active',
  )
  await toolFails(
    client,
    'set_followup_trigger',
    { followup_id: followup.id, trigger: { type: 'optin_confirmed' } },
    'followup_active',
  )
  await toolFails(client, 'remove_followup_step', { followup_id: followup.id, step_id: s2 }, 'followup_active')
  await toolFails(
    client,
    'enroll_contact_in_followup',
    { followup_id: followup.id, contact_id: ben.id },
    'bad_request',
    'followup_contact_not_confirmed',
  )
  const preview = await toolOk(client, 'enroll_contact_in_followup', { followup_id: followup.id, contact_id: erika })
  assert.equal(preview.preview.recipients, 1)
  assert.deepEqual((await toolOk(client, 'list_followup_enrollments', { followup_id: followup.id })).enrollments, [])
  const { enrollment } = await toolOk(client, 'enroll_contact_in_followup', {
    followup_id: followup.id,
    contact_id: erika,
    confirm_token: preview.confirm_token,
  })
  assert.equal(enrollment.status, 'active')
  assert.equal(enrollment.next_position, 1)
  assert.ok(enrollment.next_due_at)
  await toolFails(
    client,
    'enroll_contact_in_followup',
    { followup_id: followup.id, contact_id: erika },
    'followup_already_enrolled',
  )
  const listed = await toolOk(client, 'list_followup_enrollments', { followup_id: followup.id, status: 'active' })
  assert.deepEqual(
    listed.enrollments.map((e: Json) => e.contact_id),
    [erika],
  )
  assert.deepEqual(
    (await toolOk(client, 'list_followup_enrollments', { followup_id: followup.id, contact_id: ben.id })).enrollments,
    [],
  )
  await toolFails(client, 'list_followup_enrollments', { followup_id: followup.id, status: 'waiting' }, 'bad_request')
  const stopped = await toolOk(client, 'stop_followup_enrollment', {
    followup_id: followup.id,
    enrollment_id: enrollment.id,
  })
  assert.equal(stopped.enrollment.status, 'stopped')
  assert.equal(stopped.enrollment.stop_reason, 'stopped_by_user')
  assert.equal(stopped.enrollment.next_due_at, null)
  const jobs = await harness.database.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE account_id = $1 AND queue = 'followups.step' AND state = 'queued'`,
    [accountId],
  )
  assert.equal(Number(jobs[0].n), 0, 'its pending step job is gone')

  // another account's sequence, enrollment and contact: 404
  const foreignContact = await confirmedContact(other.client, other.accountId, 'Fremd')
  await toolFails(
    client,
    'enroll_contact_in_followup',
    { followup_id: followup.id, contact_id: foreignContact },
    'not_found',
  )
  for (const [name, args] of [
    ['list_followup_enrollments', { followup_id: followup.id }],
    ['stop_followup_enrollment', { followup_id: followup.id, enrollment_id: enrollment.id }],
    ['duplicate_followup', { followup_id: followup.id }],
    ['set_followup_trigger', { followup_id: followup.id, trigger: { type: 'optin_confirmed' } }],
    ['remove_followup_step', { followup_id: followup.id, step_id: s2 }],
    ['move_followup_step', { followup_id: followup.id, step_id: s2, position: 1 }],
    ['enroll_contact_in_followup', { followup_id: followup.id, contact_id: foreignContact }],
  ] as const) {
    await toolFails(other.client, name, args, 'not_found')
  }

  // followups:read reads the enrollments and changes nothing
  const reader = await mcp(await createKey(harness, accountId, ['followups:read']))
  assert.equal((await toolOk(reader, 'list_followup_enrollments', { followup_id: followup.id })).enrollments.length, 1)
  for (const [name, args] of [
    ['stop_followup_enrollment', { followup_id: followup.id, enrollment_id: enrollment.id }],
    ['enroll_contact_in_followup', { followup_id: followup.id, contact_id: erika }],
    ['move_followup_step', { followup_id: followup.id, step_id: s2, position: 1 }],
  ] as const) {
    await toolFails(reader, name, args, 'forbidden', 'apikey_scope_fehlt')
  }
})

test('templates: duplicate, preview for a contact with variables, refresh the provider status, list sends; isolation and scopes', async () => {
  const { accountId, client } = await account()
  const other = await account()
  const erika = await confirmedContact(client, accountId, 'Erika Muster')
  const { template } = await toolOk(client, 'create_template_with_options', {
    name: 'Angebot',
    content: 'Hallo {{name}}, dein Code: {{code}} gilt bis Sonntag.',
  })

  const copy = (await toolOk(client, 'duplicate_template', { template_id: template.id })).template
  assert.equal(copy.name, 'Angebot copy')
  assert.equal(copy.content, template.content)
  assert.equal(copy.state, 'draft')
  assert.equal(copy.provider_status, null)
  assert.equal((await toolOk(client, 'list_templates')).templates.length, 2)

  const partial = await toolOk(client, 'preview_template', { template_id: template.id, contact_id: erika })
  assert.equal(partial.text, null)
  assert.deepEqual(partial.missing_variables, ['code'])
  const full = await toolOk(client, 'preview_template', {
    template_id: template.id,
    contact_id: erika,
    variables: { code: 'FRUEHLING' },
  })
  assert.equal(full.text, 'Hallo Erika, dein Code: FRUEHLING gilt bis Sonntag.')
  assert.deepEqual(full.missing_variables, [])
  const wrong = await toolFails(
    client,
    'preview_template',
    { template_id: template.id, contact_id: erika, variables: { name: 'Max', code: 'X' } },
    'invalid_variables',
  )
  assert.match(wrong.message, /name/)
  await toolFails(
    client,
    'preview_template',
    { template_id: template.id, contact_id: erika, variables: { code: 'x'.repeat(1025) } },
    'bad_request',
  )

  // refresh: a template never submitted has no status at the provider
  await toolFails(
    client,
    'refresh_template_status',
    { template_id: template.id },
    'bad_request',
    'template_not_submitted',
  )
  await channelsServiceFor({ config: harness.config, database: harness.database, clock: harness.clock }).connect(
    accountId,
    {
      channel: 'chat',
      provider: 'sandbox',
    },
  )
  await toolConfirmed(client, 'submit_template', { template_id: template.id })
  const refreshed = await toolOk(client, 'refresh_template_status', { template_id: template.id })
  assert.equal(typeof refreshed.changed, 'boolean')
  assert.equal(refreshed.template.id, template.id)
  assert.equal(
    refreshed.template.provider_status,
    (await toolOk(client, 'get_template', { template_id: template.id })).template.provider_status,
  )

  assert.deepEqual((await toolOk(client, 'list_template_usages', { template_id: template.id })).used_by, [])
  await toolOk(client, 'create_automation', {
    name: 'Code senden',
    trigger: { type: 'manual' },
    steps: [{ type: 'send_template', template_id: template.id, variables: { code: 'X1' } }],
  })
  const usages = await toolOk(client, 'list_template_usages', { template_id: template.id })
  assert.equal(usages.in_use, true)
  assert.deepEqual(usages.used_by, ['automation "Code senden"'])
  await toolFails(other.client, 'list_template_usages', { template_id: template.id }, 'not_found')

  const sends = await toolOk(client, 'list_template_sends', { template_id: template.id, origin: 'api' })
  assert.deepEqual(sends.sends, [])
  await toolFails(client, 'list_template_sends', { template_id: template.id, origin: 'fax' }, 'bad_request')

  for (const name of ['duplicate_template', 'refresh_template_status', 'list_template_sends']) {
    await toolFails(other.client, name, { template_id: template.id }, 'not_found')
  }
  await toolFails(other.client, 'preview_template', { template_id: template.id, contact_id: erika }, 'not_found')
  const foreign = await confirmedContact(other.client, other.accountId, 'Fremd')
  await toolFails(client, 'preview_template', { template_id: template.id, contact_id: foreign }, 'not_found')

  const reader = await mcp(await createKey(harness, accountId, ['templates:read']))
  await toolFails(
    reader,
    'preview_template',
    { template_id: template.id, contact_id: erika },
    'forbidden',
    'apikey_scope_fehlt',
  )
  await toolFails(reader, 'duplicate_template', { template_id: template.id }, 'forbidden', 'apikey_scope_fehlt')
  await toolFails(reader, 'refresh_template_status', { template_id: template.id }, 'forbidden', 'apikey_scope_fehlt')
  assert.deepEqual((await toolOk(reader, 'list_template_sends', { template_id: template.id })).sends, [])
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
  await channelsServiceFor({ config: harness.config, database: harness.database, clock: harness.clock }).connect(
    accountId,
    {
      channel: 'chat',
      provider: 'sandbox',
    },
  )
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
