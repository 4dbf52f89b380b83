import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import { account, confirmedContact, domainToolsHarness, mcp, mcpClients } from '../../test/helpers/domain-tools.ts'
import { nextPhone } from '../../test/helpers/fixtures.ts'
import { createKey, type Harness } from '../../test/helpers/harness.ts'
import { type Json, toolConfirmed, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'

// The tools added for newsletters, follow-ups, automations, templates, media, knowledge and statistics, through the
// SDK's Client (every answer validated against the tool's outputSchema): valid and invalid arguments, another
// account's ids (404) and the scopes. Here newsletters, follow-ups and templates; the rest in domain-tools.media.

let harness: Harness

before(async () => {
  harness = await domainToolsHarness()
})
after(async () => {
  await mcpClients.close()
  await harness.close()
})

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
  await harness.services.channels.connect(accountId, {
    channel: 'chat',
    provider: 'sandbox',
  })
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
