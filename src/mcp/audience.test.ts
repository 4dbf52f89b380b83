import assert from 'node:assert/strict'
import { randomBytes, randomInt } from 'node:crypto'
import { test } from 'node:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { setOptin, signedInMember } from '../../test/helpers/fixtures.ts'
import { createKey, type Harness } from '../../test/helpers/harness.ts'
import { type Json, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { mcpHarnessPerFile } from '../../test/helpers/mcp-file.ts'
import { consentHistory } from '../modules/contacts/index.ts'
import { createMember, invite } from '../modules/people/index.ts'

// The audience and inbox tools: looking contacts up, counting, exporting, tags account-wide, bulk changes, the
// consent actions a person takes for a contact, and handling conversations. Through the SDK's Client (every answer
// validated against the tool's outputSchema); two-step tools change nothing before their confirm_token; another
// account's ids are 404; a key without the scope is refused.

let harness: Harness
const { mcp, account } = mcpHarnessPerFile(
  (created) => {
    harness = created
  },
  { account: { plan: { requestsPerMinute: 10_000 } } },
)

const phone = () => `+49151${randomInt(10_000_000, 99_999_999)}`

async function contact(client: Client, fields: Json, tags: string[] = []) {
  const { contact } = await toolOk(client, 'create_contact', { name: 'Kontakt', ...fields })
  if (tags.length) await toolOk(client, 'add_contact_tags', { contact_id: contact.id, tags })
  return contact as Json
}

/** The first call's preview, then the same call with its token. */
async function confirmed(client: Client, name: string, args: Json) {
  const preview = await toolOk(client, name, args)
  assert.equal(preview.confirmation_required, true, `${name} is two-step`)
  assert.equal(preview.executed, false)
  return {
    preview: preview.preview as Json,
    result: await toolOk(client, name, { ...args, confirm_token: preview.confirm_token }),
  }
}

test('find_contact: the exact e-mail or phone in any format; no partial match; another account’s contact is a 404', async () => {
  const { client, accountId } = await account()
  const other = await account()
  const number = phone()
  const erika = await contact(client, { name: 'Erika', email: 'Erika@Example.org', phone: number })
  assert.equal((await toolOk(client, 'find_contact', { address: 'erika@example.org' })).contact.id, erika.id)
  const spaced = `${number.slice(0, 3)} ${number.slice(3, 6)} ${number.slice(6)}`
  assert.equal((await toolOk(client, 'find_contact', { address: spaced })).contact.id, erika.id)
  await toolFails(client, 'find_contact', { address: 'erika@example' }, 'not_found')
  await toolFails(other.client, 'find_contact', { address: 'erika@example.org' }, 'not_found')
  await toolFails(client, 'find_contact', { address: '12' }, 'bad_request')
  await toolFails(client, 'find_contact', { address: 'x'.repeat(255) }, 'bad_request')
  const narrow = await mcp(await createKey(harness, accountId, ['stats:read']))
  await toolFails(narrow, 'find_contact', { address: 'erika@example.org' }, 'forbidden', 'apikey_scope_fehlt')
})

test('count_contacts and export_contacts_csv: by tag and opt-in, every contact; CSV with header, paging and a formula guard', async () => {
  const { client, accountId } = await account()
  const a = await contact(client, { name: '=HYPERLINK("x")', email: 'a@example.org' }, ['vip', 'berlin'])
  await contact(client, { name: 'Ben', email: 'b@example.org' }, ['vip'])
  await contact(client, { name: 'Cem', phone: phone() })
  await setOptin(harness, accountId, a.id, 'confirmed', 'email')
  assert.equal((await toolOk(client, 'count_contacts', {})).matching, 3)
  assert.equal((await toolOk(client, 'count_contacts', { filter: { tag: 'vip' } })).matching, 2)
  assert.equal(
    (await toolOk(client, 'count_contacts', { filter: { tag: 'vip', optin_email: 'confirmed' } })).matching,
    1,
  )
  await toolFails(client, 'count_contacts', { filter: { optin_email: 'maybe' } }, 'bad_request')

  const all = await toolOk(client, 'export_contacts_csv', {})
  const lines = all.csv.trim().split('\n')
  assert.equal(lines[0], 'id,name,email,phone,optin_chat,optin_email,tags,language,source,created_at')
  assert.equal(all.rows, 3)
  assert.equal(all.has_more, false)
  const line = lines.find((l: string) => l.startsWith(a.id)) ?? ''
  assert.ok(line.startsWith(`${a.id},"'=HYPERLINK(""x"")",a@example.org,,none,confirmed,berlin;vip,`), line)
  const page = await toolOk(client, 'export_contacts_csv', { filter: { tag: 'vip' }, limit: 1 })
  assert.equal(page.rows, 1)
  assert.equal(page.has_more, true)
  assert.equal(page.next_offset, 1)
  await toolFails(client, 'export_contacts_csv', { limit: 2001 }, 'bad_request')
  const narrow = await mcp(await createKey(harness, accountId, ['inbox:read']))
  await toolFails(narrow, 'export_contacts_csv', {}, 'forbidden', 'apikey_scope_fehlt')
})

test('get_tag, rename_tag and delete_tag: every contact; the preview changes nothing; system tags refused; other accounts untouched', async () => {
  const { client, accountId } = await account()
  const other = await account()
  const one = await contact(client, { email: 'one@example.org' }, ['kunde-alt', 'sommer'])
  await contact(client, { email: 'two@example.org' }, ['kunde-alt'])
  await contact(other.client, { email: 'x@example.org' }, ['kunde-alt'])
  const tag = (await toolOk(client, 'get_tag', { tag: 'kunde-alt' })).tag
  assert.deepEqual(tag, { name: 'kunde-alt', origin: 'manuell', system: false, contacts: 2, by_origin: { manuell: 2 } })
  await toolFails(client, 'get_tag', { tag: 'nobody-has-it' }, 'not_found')

  // rename, merging into a name one contact has already
  const preview = await toolOk(client, 'rename_tag', { tag: 'kunde-alt', new_name: 'sommer' })
  assert.equal(preview.preview.contacts, 2)
  assert.equal((await toolOk(client, 'get_tag', { tag: 'kunde-alt' })).tag.contacts, 2, 'the preview renames nothing')
  const renamed = await toolOk(client, 'rename_tag', {
    tag: 'kunde-alt',
    new_name: 'sommer',
    confirm_token: preview.confirm_token,
  })
  assert.deepEqual(renamed, { from: 'kunde-alt', to: 'sommer', contacts: 2 })
  assert.deepEqual((await toolOk(client, 'get_contact', { contact_id: one.id })).contact.tags, ['sommer'])
  assert.equal((await toolOk(client, 'get_tag', { tag: 'sommer' })).tag.contacts, 2)
  assert.equal((await toolOk(other.client, 'get_tag', { tag: 'kunde-alt' })).tag.contacts, 1, 'other account untouched')
  await toolFails(client, 'rename_tag', { tag: 'sommer', new_name: 'kunde' }, 'bad_request', 'system_tag')
  await toolFails(client, 'rename_tag', { tag: 'sommer', new_name: 'x'.repeat(41) }, 'bad_request')
  await toolFails(client, 'rename_tag', { tag: 'kunde-alt', new_name: 'neu' }, 'not_found')

  const { preview: deletion, result } = await confirmed(client, 'delete_tag', { tag: 'sommer' })
  assert.equal(deletion.contacts, 2)
  assert.deepEqual(result, { tag: 'sommer', contacts: 2 })
  await toolFails(client, 'get_tag', { tag: 'sommer' }, 'not_found')
  await toolFails(client, 'delete_tag', { tag: 'herkunft:landing' }, 'bad_request', 'system_tag')
  await toolFails(other.client, 'delete_tag', { tag: 'sommer' }, 'not_found')
  const reader = await mcp(await createKey(harness, accountId, ['contacts:read']))
  await toolFails(reader, 'delete_tag', { tag: 'x' }, 'forbidden', 'apikey_scope_fehlt')
})

test('tag_contacts, untag_contacts and delete_contacts: the filter decides; previews count and change nothing', async () => {
  const { client, accountId } = await account()
  const other = await account()
  const a = await contact(client, { email: 'a@example.org' }, ['messe'])
  const b = await contact(client, { email: 'b@example.org' }, ['messe'])
  const c = await contact(client, { email: 'c@example.org' })
  const foreign = await contact(other.client, { email: 'f@example.org' }, ['messe'])

  const tagged = await confirmed(client, 'tag_contacts', { filter: { tag: 'messe' }, tag: 'einladen' })
  assert.equal(tagged.preview.contacts, 2)
  assert.deepEqual(tagged.result, { tag: 'einladen', matched: 2, tagged: 2, skipped_full: 0, has_more: false })
  assert.deepEqual((await toolOk(client, 'get_contact', { contact_id: a.id })).contact.tags, ['einladen', 'messe'])
  assert.deepEqual((await toolOk(client, 'get_contact', { contact_id: c.id })).contact.tags, [])
  assert.deepEqual((await toolOk(other.client, 'get_contact', { contact_id: foreign.id })).contact.tags, ['messe'])
  await toolFails(client, 'tag_contacts', { filter: {}, tag: 'marketing' }, 'bad_request', 'system_tag')

  const untagged = await confirmed(client, 'untag_contacts', { filter: { tag: 'messe' }, tag: 'einladen' })
  assert.equal(untagged.result.untagged, 2)
  assert.deepEqual((await toolOk(client, 'get_contact', { contact_id: b.id })).contact.tags, ['messe'])

  await toolFails(client, 'delete_contacts', { filter: {} }, 'bad_request', 'filter_required')
  const preview = await toolOk(client, 'delete_contacts', { filter: { tag: 'messe' } })
  assert.equal(preview.preview.contacts, 2)
  assert.equal((await toolOk(client, 'count_contacts', {})).matching, 3, 'the preview deletes nobody')
  const deleted = await toolOk(client, 'delete_contacts', {
    filter: { tag: 'messe' },
    confirm_token: preview.confirm_token,
  })
  assert.deepEqual(deleted, { deleted: 2, has_more: false })
  await toolFails(client, 'get_contact', { contact_id: a.id }, 'not_found')
  assert.equal((await toolOk(client, 'get_contact', { contact_id: c.id })).contact.id, c.id)
  assert.equal((await toolOk(other.client, 'get_contact', { contact_id: foreign.id })).contact.id, foreign.id)
  // contacts:write does not delete
  const writer = await mcp(await createKey(harness, accountId, ['contacts:read', 'contacts:write']))
  await toolFails(writer, 'delete_contacts', { filter: { source: 'api' } }, 'forbidden', 'apikey_scope_fehlt')
})

test('request_contact_optin and record_contact_opt_out: pending, never confirmed; opted out gets nothing; the consent record names the request', async () => {
  const { client, accountId } = await account()
  const other = await account()
  const erika = await contact(client, { name: 'Erika', phone: phone(), email: 'erika@example.org' })
  const noMail = await contact(client, { name: 'Ohne', phone: phone() })

  const requested = await confirmed(client, 'request_contact_optin', { contact_id: erika.id, channel: 'email' })
  assert.equal(requested.preview.to.address, 'erika@example.org')
  assert.equal(requested.preview.recipients, 1)
  assert.deepEqual(requested.result, { contact_id: erika.id, channel: 'email', optin: 'pending', started: true })
  const [record] = await consentHistory(harness.database.orm, accountId, erika.id)
  assert.equal(record.source, 'team_request')
  assert.equal(record.toState, 'pending')
  await toolFails(
    client,
    'request_contact_optin',
    { contact_id: noMail.id, channel: 'email' },
    'bad_request',
    'address_missing',
  )
  await toolFails(other.client, 'request_contact_optin', { contact_id: erika.id, channel: 'chat' }, 'not_found')
  await toolFails(client, 'request_contact_optin', { contact_id: erika.id, channel: 'fax' }, 'bad_request')
  const noSend = await mcp(await createKey(harness, accountId, ['contacts:read', 'contacts:write']))
  await toolFails(
    noSend,
    'request_contact_optin',
    { contact_id: erika.id, channel: 'chat' },
    'forbidden',
    'apikey_scope_fehlt',
  )

  const optOut = await confirmed(client, 'record_contact_opt_out', { contact_id: erika.id, channel: 'chat' })
  assert.equal(optOut.preview.optin_after, 'opted_out')
  assert.deepEqual(optOut.result, { contact_id: erika.id, channel: 'chat', optin: 'opted_out', changed: true })
  assert.equal((await toolOk(client, 'get_contact', { contact_id: erika.id })).contact.optin_chat, 'opted_out')
  const again = await confirmed(client, 'record_contact_opt_out', { contact_id: erika.id, channel: 'chat' })
  assert.equal(again.result.changed, false)
  await toolFails(client, 'request_contact_optin', { contact_id: erika.id, channel: 'chat' }, 'contact_opted_out')
  await toolFails(other.client, 'record_contact_opt_out', { contact_id: erika.id, channel: 'email' }, 'not_found')
})

test('conversations: get, mark read, close (the next message reopens), reopen, assign to an active member; one message; the activity', async () => {
  const { client, accountId } = await account()
  const other = await account()
  await harness.services.channels.connect(accountId, { channel: 'chat', provider: 'sandbox' })
  const number = phone()
  await toolOk(client, 'simulate_inbound_message', { from: number, name: 'Erika', text: 'Hallo, wann öffnet ihr?' })
  const [listed] = (await toolOk(client, 'list_conversations', {})).conversations
  const id = listed.id as string
  const got = (await toolOk(client, 'get_conversation', { conversation_id: id })).conversation
  assert.equal(got.status, 'open')
  assert.equal(got.unread_count, 1)
  assert.equal(got.assignee_id, null)
  await toolFails(other.client, 'get_conversation', { conversation_id: id }, 'not_found')
  await toolFails(client, 'get_conversation', { conversation_id: 'nope' }, 'bad_request')

  assert.equal((await toolOk(client, 'mark_conversation_read', { conversation_id: id })).conversation.unread_count, 0)
  const closed = (await toolOk(client, 'close_conversation', { conversation_id: id })).conversation
  assert.equal(closed.status, 'closed')
  assert.equal(closed.closed_at, harness.clock.now().toISOString())
  await toolOk(client, 'simulate_inbound_message', { from: number, text: 'Noch da?' })
  const reopened = (await toolOk(client, 'get_conversation', { conversation_id: id })).conversation
  assert.equal(reopened.status, 'open', 'the customer’s message opens it again')
  assert.equal(reopened.closed_at, null)
  await toolOk(client, 'close_conversation', { conversation_id: id })
  assert.equal((await toolOk(client, 'reopen_conversation', { conversation_id: id })).conversation.status, 'open')
  await toolFails(other.client, 'close_conversation', { conversation_id: id }, 'not_found')

  const member = await createMember(harness.database.orm, {
    accountId,
    email: `m${randomBytes(4).toString('hex')}@example.org`,
    name: 'Mia',
    password: 'long password 12',
    role: 'member',
  })
  const assigned = await toolOk(client, 'assign_conversation', { conversation_id: id, member_id: member.id })
  assert.equal(assigned.conversation.assignee_id, member.id)
  const pending = await invite(harness.database.orm, harness.clock, {
    accountId,
    email: `i${randomBytes(4).toString('hex')}@example.org`,
    role: 'member',
    actorRole: 'owner',
  })
  await toolFails(
    client,
    'assign_conversation',
    { conversation_id: id, member_id: pending.member.id },
    'bad_request',
    'member_not_active',
  )
  const stranger = await createMember(harness.database.orm, {
    accountId: other.accountId,
    email: `s${randomBytes(4).toString('hex')}@example.org`,
    name: 'Sam',
    password: 'long password 12',
    role: 'member',
  })
  await toolFails(client, 'assign_conversation', { conversation_id: id, member_id: stranger.id }, 'not_found')
  assert.equal(
    (await toolOk(client, 'assign_conversation', { conversation_id: id, member_id: null })).conversation.assignee_id,
    null,
  )
  const reader = await mcp(await createKey(harness, accountId, ['inbox:read']))
  await toolFails(reader, 'close_conversation', { conversation_id: id }, 'forbidden', 'apikey_scope_fehlt')
  assert.equal((await toolOk(reader, 'get_conversation', { conversation_id: id })).conversation.id, id)

  const [message] = (await toolOk(client, 'list_messages', { conversation_id: id })).messages
  const one = (await toolOk(client, 'get_message', { message_id: message.id })).message
  assert.equal(one.text, 'Noch da?')
  assert.equal(one.direction, 'inbound')
  assert.equal(one.automated, false)
  await toolFails(other.client, 'get_message', { message_id: message.id }, 'not_found')

  const activity = await toolOk(client, 'get_contact_activity', { contact_id: listed.contact_id, limit: 10 })
  assert.deepEqual(activity.items.map((i: Json) => i.kind).sort(), ['contact_created', 'message', 'message'])
  assert.ok(activity.items.some((i: Json) => i.message_id === message.id))
  await toolFails(other.client, 'get_contact_activity', { contact_id: listed.contact_id }, 'not_found')
  const contactsOnly = await mcp(await createKey(harness, accountId, ['contacts:read']))
  await toolFails(
    contactsOnly,
    'get_contact_activity',
    { contact_id: listed.contact_id },
    'forbidden',
    'apikey_scope_fehlt',
  )
})

test('the /app routes behind the tools answer the web app: the CSV export, a tag, a conversation', async () => {
  const { accountId } = await account()
  const { headers } = await signedInMember(harness, {
    accountId,
    email: `o${randomBytes(4).toString('hex')}@example.org`,
    name: 'Olga',
    password: 'long password 12',
    role: 'owner',
  })
  const created = await harness.app.inject({
    method: 'POST',
    url: '/app/create_contact',
    headers,
    payload: { name: 'Ina', email: 'ina@example.org' },
  })
  assert.equal(created.statusCode, 200, created.body)
  const csv = await harness.app.inject({ method: 'GET', url: '/app/contacts/export?limit=10', headers })
  assert.equal(csv.statusCode, 200, csv.body)
  assert.match(String(csv.headers['content-type']), /^text\/csv/)
  assert.match(csv.body, /ina@example\.org/)
  const lookup = await harness.app.inject({ method: 'GET', url: '/app/contacts/lookup?email=INA@example.org', headers })
  assert.equal(lookup.json().contact.email, 'ina@example.org')
  const missing = await harness.app.inject({ method: 'GET', url: '/app/tags/none', headers })
  assert.equal(missing.statusCode, 404)
  assert.equal(missing.json().error.code, 'not_found')
  const conversation = await harness.app.inject({
    method: 'POST',
    url: '/app/conversations/00000000-0000-4000-8000-000000000000/close',
    headers,
  })
  assert.equal(conversation.statusCode, 404)
  const noCsrf = await harness.app.inject({
    method: 'POST',
    url: '/app/contacts/bulk/tag',
    headers: { cookie: headers.cookie },
    payload: { filter: {}, tag: 'x' },
  })
  assert.equal(noCsrf.statusCode, 403)
})
