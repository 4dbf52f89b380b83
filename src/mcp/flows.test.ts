import assert from 'node:assert/strict'
import { after, before, test } from 'node:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { sandboxAccount as fixtureAccount, phoneSequence, setOptin } from '../../test/helpers/fixtures.ts'
import { createHarness, type Harness, type TestAccount } from '../../test/helpers/harness.ts'
import { type Json, McpClients, toolConfirmed, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { sandboxOutboxOf } from '../modules/channels/index.ts'

let harness: Harness
const mcpClients = new McpClients()

before(async () => {
  harness = await createHarness({ workers: true, config: { allowPrivateTargets: true } })
  await harness.jobs!.stop()
  await mcpClients.listen(harness)
})
after(async () => {
  await mcpClients.close()
  await harness.close()
})

let counter = 0
const nextPhone = phoneSequence('+4916')

async function sandboxAccount(): Promise<{ account: TestAccount; client: Client }> {
  const account = await fixtureAccount(harness, { messagesPerMonth: 100 })
  const client = await mcpClients.connect(account.key)
  return { account, client }
}

const confirm = (account: TestAccount, contactId: string) => setOptin(harness, account.accountId, contactId)

test('contacts: upsert, list with created_after, tags added and removed, tag counts, delete in two steps', async () => {
  const { account, client } = await sandboxAccount()
  const me = await toolOk(client, 'get_account')
  assert.equal(me.account.id, account.accountId)
  assert.equal(me.auth_type, 'api_key')

  const phone = nextPhone()
  const created = await toolOk(client, 'upsert_contact', { name: 'Anna', phone })
  assert.equal(created.created, true)
  const again = await toolOk(client, 'upsert_contact', { name: 'Anna Berg', phone })
  assert.equal(again.created, false)
  assert.equal(again.contact.name, 'Anna Berg')
  const id = created.contact.id

  const before = new Date(harness.clock.now().getTime() - 1000).toISOString()
  const listed = await toolOk(client, 'list_contacts', { created_after: before, limit: 200 })
  assert.deepEqual(
    listed.contacts.map((c: Json) => c.id),
    [id],
  )
  await toolFails(client, 'list_contacts', { limit: 201 }, 'bad_request')

  const tagged = await toolOk(client, 'add_contact_tags', { contact_id: id, tags: ['vip', 'stamm'] })
  assert.deepEqual(tagged.added.sort(), ['stamm', 'vip'])
  const counts = await toolOk(client, 'list_tags')
  assert.deepEqual(counts.tags.map((t: Json) => t.name).sort(), ['stamm', 'vip'])
  // two-step like every delete: the first call only previews and issues the token
  const removal = await toolOk(client, 'remove_contact_tag', { contact_id: id, tag: 'vip' })
  assert.equal(removal.confirmation_required, true)
  assert.equal(removal.executed, false)
  assert.equal(removal.preview.carried, true)
  assert.deepEqual(
    removal.preview.contact.tags.filter((t: string) => t === 'vip'),
    ['vip'],
  )
  assert.ok((await toolOk(client, 'get_contact', { contact_id: id })).contact.tags.includes('vip'), 'nothing removed')
  const removed = await toolOk(client, 'remove_contact_tag', {
    contact_id: id,
    tag: 'vip',
    confirm_token: removal.confirm_token,
  })
  assert.equal(removed.removed, true)
  assert.ok(!removed.tags.includes('vip'))
  assert.ok(!(await toolOk(client, 'get_contact', { contact_id: id })).contact.tags.includes('vip'))
  const used = await toolFails(
    client,
    'remove_contact_tag',
    { contact_id: id, tag: 'vip', confirm_token: removal.confirm_token },
    'confirm_token_invalid',
  )
  assert.equal(used.key, 'confirm_token_used')
  const other = await toolOk(client, 'remove_contact_tag', { contact_id: id, tag: 'stamm' })
  const changed = await toolFails(
    client,
    'remove_contact_tag',
    { contact_id: id, tag: 'vip', confirm_token: other.confirm_token },
    'confirm_token_invalid',
  )
  assert.equal(changed.key, 'confirm_token_arguments')
  assert.ok((await toolOk(client, 'get_contact', { contact_id: id })).contact.tags.includes('stamm'), 'still there')
  await toolFails(client, 'remove_contact_tag', { contact_id: id, tag: 'herkunft:api' }, 'bad_request')
  await toolFails(client, 'remove_contact_tag', { contact_id: crypto.randomUUID(), tag: 'vip' }, 'not_found')

  await toolOk(client, 'update_contact', { contact_id: id, email: 'anna@example.com' })
  const cleared = await toolOk(client, 'clear_contact_field', { contact_id: id, field: 'email' })
  assert.equal(cleared.contact.email, '')

  const preview = await toolOk(client, 'delete_contact', { contact_id: id })
  assert.equal(preview.preview.contact.id, id)
  assert.equal((await toolOk(client, 'get_contact', { contact_id: id })).contact.id, id, 'the preview deletes nothing')
  const deleted = await toolOk(client, 'delete_contact', { contact_id: id, confirm_token: preview.confirm_token })
  assert.equal(deleted.ok, true)
  assert.equal(typeof deleted.removed, 'object')
  await toolFails(client, 'get_contact', { contact_id: id }, 'not_found')
})

test('inbox and settings: simulated inbound message, list_messages, channel, coexistence and consent settings', async () => {
  const { client } = await sandboxAccount()
  const phone = nextPhone()
  const inbound = await toolOk(client, 'simulate_inbound_message', { from: phone, text: 'Guten Tag' })
  assert.equal(inbound.stored, 1)
  await toolFails(client, 'simulate_inbound_message', { from: phone }, 'bad_request')
  const messages = await toolOk(client, 'list_messages', { direction: 'inbound' })
  assert.equal(messages.messages[0].text, 'Guten Tag')
  assert.equal((await toolOk(client, 'list_messages', { direction: 'outbound' })).messages.length, 0)

  const channels = await toolOk(client, 'get_channel_settings')
  assert.equal(channels.chat.connected, true)
  assert.equal((await toolOk(client, 'get_coexistence')).available, true)
  assert.equal((await toolOk(client, 'set_coexistence', { enabled: true })).enabled, true)
  const consent = await toolOk(client, 'update_consent_settings', { stop_keywords: ['HALT'] })
  assert.deepEqual(consent.stop_keywords, ['HALT'])
  assert.deepEqual((await toolOk(client, 'get_consent_settings')).stop_keywords, ['HALT'])
})

test('templates: create with options, update, submit in two steps, find, delete in two steps', async () => {
  const { client } = await sandboxAccount()
  const created = await toolOk(client, 'create_template_with_options', {
    name: `Angebot ${process.pid} ${++counter}`,
    content: 'Hallo {{name}}, heute gibt es {{rabatt}} Rabatt. Bis bald!',
    language: 'de',
    purpose: 'marketing',
    buttons: [{ type: 'QUICK_REPLY', text: 'Interessiert' }],
  })
  const id = created.template.id
  await toolFails(client, 'create_template_with_options', { name: 'x', content: 'y', channel: 'fax' }, 'bad_request')
  const updated = await toolOk(client, 'update_template', {
    template_id: id,
    content: 'Hallo {{name}}, neu: {{rabatt}}. Bis bald!',
  })
  assert.match(updated.template.content, /neu/)

  const preview = await toolOk(client, 'submit_template', { template_id: id })
  assert.equal(preview.preview.template.id, id)
  assert.equal((await toolOk(client, 'get_template', { template_id: id })).template.state, 'draft')
  const submitted = await toolOk(client, 'submit_template', { template_id: id, confirm_token: preview.confirm_token })
  assert.equal(submitted.template.provider_status, 'approved')
  const approved = await toolOk(client, 'filter_templates', { state: 'approved' })
  assert.deepEqual(
    approved.templates.map((t: Json) => t.id),
    [id],
  )
  await toolFails(client, 'filter_templates', { state: 'gone' }, 'bad_request')

  await toolConfirmed(client, 'delete_template', { template_id: id })
  await toolFails(client, 'get_template', { template_id: id }, 'not_found')
})

test('newsletters: create, segment, schedule, status, cancel, delete in two steps', async () => {
  const { account, client } = await sandboxAccount()
  const contact = await toolOk(client, 'create_contact', { name: 'Leser', phone: nextPhone() })
  await confirm(account, contact.contact.id)
  await toolOk(client, 'add_contact_tag', { contact_id: contact.contact.id, tag: 'leser' })
  const created = await toolOk(client, 'create_newsletter', {
    subject: 'Sommer',
    content: 'Hallo {{name}}, der Sommer ist da!',
  })
  const id = created.newsletter.id
  await toolFails(client, 'create_newsletter', { subject: 'ohne Inhalt' }, 'bad_request')
  const segmented = await toolOk(client, 'update_newsletter', { newsletter_id: id, segment: { tags_any: ['leser'] } })
  assert.equal(segmented.newsletter.recipients_estimate, 1)
  await toolFails(client, 'update_newsletter', { newsletter_id: id, segment: { tags_any: ['fehlt'] } }, 'bad_request')

  const at = new Date(harness.clock.now().getTime() + 86_400_000).toISOString()
  await toolConfirmed(client, 'schedule_newsletter', { newsletter_id: id, scheduled_at: at })
  assert.equal((await toolOk(client, 'get_newsletter', { newsletter_id: id })).newsletter.status, 'scheduled')
  const status = await toolOk(client, 'get_newsletter_status', { newsletter_id: id })
  assert.equal(typeof status, 'object')
  const cancelled = await toolOk(client, 'cancel_newsletter', { newsletter_id: id })
  assert.equal(cancelled.newsletter.status, 'draft')
  await toolFails(client, 'cancel_newsletter', { newsletter_id: id }, 'bad_request')

  const deletePreview = await toolOk(client, 'delete_newsletter', { newsletter_id: id })
  assert.equal(deletePreview.preview.newsletter.id, id)
  await toolOk(client, 'delete_newsletter', { newsletter_id: id, confirm_token: deletePreview.confirm_token })
  await toolFails(client, 'get_newsletter', { newsletter_id: id }, 'not_found')
})

test('automations: create, activate, trigger in two steps, runs, pause, delete; webhook addresses', async () => {
  const { client } = await sandboxAccount()
  const contact = await toolOk(client, 'create_contact', { name: 'Auto', phone: nextPhone() })
  const created = await toolOk(client, 'create_automation', {
    name: 'Markieren',
    trigger: { type: 'manual' },
    steps: [{ type: 'add_tag', tag: 'automatisch' }],
  })
  const id = created.id
  assert.equal(created.status, 'draft')
  await toolFails(client, 'create_automation', { name: 'leer', trigger: { type: 'manual' }, steps: [] }, 'bad_request')
  await toolFails(
    client,
    'trigger_automation',
    {
      automation_id: id,
      contact_id: contact.contact.id,
      confirm_token: (await toolOk(client, 'trigger_automation', { automation_id: id, contact_id: contact.contact.id }))
        .confirm_token,
    },
    'automation_not_active',
  )
  assert.equal((await toolOk(client, 'activate_automation', { automation_id: id })).status, 'active')
  const renamed = await toolOk(client, 'update_automation', { automation_id: id, name: 'Markieren 2' })
  assert.equal(renamed.name, 'Markieren 2')

  const preview = await toolOk(client, 'trigger_automation', { automation_id: id, contact_id: contact.contact.id })
  assert.equal(preview.preview.recipients, 1)
  assert.equal(
    (await toolOk(client, 'list_automation_runs', { automation_id: id })).runs.length,
    0,
    'the preview starts nothing',
  )
  const started = await toolOk(client, 'trigger_automation', {
    automation_id: id,
    contact_id: contact.contact.id,
    confirm_token: preview.confirm_token,
  })
  const runs = await toolOk(client, 'list_automation_runs', { automation_id: id })
  assert.deepEqual(
    runs.runs.map((r: Json) => r.id),
    [started.run_id],
  )
  const run = await toolOk(client, 'get_automation_run', { automation_id: id, run_id: started.run_id })
  assert.equal(run.id, started.run_id)
  assert.equal((await toolOk(client, 'pause_automation', { automation_id: id })).status, 'paused')
  assert.equal((await toolOk(client, 'list_automations')).automations.length, 1)
  assert.equal((await toolOk(client, 'get_automation', { automation_id: id })).name, 'Markieren 2')

  const hooked = await toolOk(client, 'create_automation', {
    name: 'Von außen',
    trigger: { type: 'webhook' },
    steps: [{ type: 'add_tag', tag: 'extern' }],
  })
  const addresses = await toolOk(client, 'list_automation_webhooks')
  assert.ok(addresses.automation_webhooks.some((a: Json) => JSON.stringify(a).includes(hooked.id)))

  await toolConfirmed(client, 'delete_automation', { automation_id: id })
  await toolFails(client, 'get_automation', { automation_id: id }, 'not_found')
})

test('webhook subscriptions: create, list, get, rotate, enable, deliveries, delete in two steps', async () => {
  const { client } = await sandboxAccount()
  const created = await toolOk(client, 'create_webhook_subscription', {
    url: 'https://hooks.example.com/herold',
    events: ['contact.created'],
  })
  assert.equal(typeof created.secret, 'string')
  await toolFails(client, 'create_webhook_subscription', { url: 'https://x.example', events: ['nope'] }, 'bad_request')
  const id = created.id
  assert.deepEqual(
    (await toolOk(client, 'list_webhook_subscriptions')).webhook_subscriptions.map((s: Json) => s.id),
    [id],
  )
  assert.equal((await toolOk(client, 'get_webhook_subscription', { subscription_id: id })).id, id)
  const rotated = await toolOk(client, 'rotate_webhook_secret', { subscription_id: id })
  assert.notEqual(rotated.secret, created.secret)
  await toolOk(client, 'enable_webhook_subscription', { subscription_id: id })
  assert.deepEqual((await toolOk(client, 'list_webhook_deliveries', { subscription_id: id })).deliveries, [])
  await toolConfirmed(client, 'delete_webhook_subscription', { subscription_id: id })
  await toolFails(client, 'get_webhook_subscription', { subscription_id: id }, 'not_found')
})

test('the sandbox outbox stays empty through all previews', async () => {
  const { account, client } = await sandboxAccount()
  const contact = await toolOk(client, 'create_contact', { name: 'Still', phone: nextPhone() })
  await confirm(account, contact.contact.id)
  await toolOk(client, 'send_message', { contact_id: contact.contact.id, text: 'nur Vorschau' })
  assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).length, 0)
})
