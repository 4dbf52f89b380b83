import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, test } from 'node:test'
import { contactWhoWrote, nextPhone, sandboxAccount } from '../../test/helpers/fixtures.ts'
import {
  createHarness,
  createKey,
  createTestAccount,
  type Harness,
  type TestAccount,
} from '../../test/helpers/harness.ts'
import { callTool, type Json, McpClients, toolConfirmed, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { sandboxOutboxOf } from '../modules/channels/index.ts'
import { blockAccount, createOAuthAccessToken, setAccountPlan, setPlan } from '../platform/auth/accounts.service.ts'
import { SCOPES } from '../platform/auth/scopes.ts'

let harness: Harness
let base: string

before(async () => {
  harness = await createHarness({ workers: true })
  // jobs run only when a test drains them: a queued template send stays queued
  await harness.jobs!.stop()
  base = await mcpClients.listen(harness)
})
after(() => harness.close())

const mcpClients = new McpClients()
after(async () => {
  await mcpClients.close()
})

const connect = (token: string) => mcpClients.connect(token)

const call = callTool
const ok = toolOk
const fails = toolFails
const confirmed = toolConfirmed

let counter = 0
const outbox = (accountId: string) => sandboxOutboxOf(harness.database.orm, accountId, 'chat')

/** A sandbox-connected account with a confirmed contact who wrote within the last 24 hours. */
async function ready(name = 'Erika Mustermann') {
  const account = await sandboxAccount(harness, { messagesPerMonth: 100 })
  const { contactId, phone } = await contactWhoWrote(harness, account, { name })
  return { account, contactId, phone, client: await connect(account.key) }
}

async function approvedTemplate(account: TestAccount): Promise<Json> {
  const created = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: {
      name: `Code ${process.pid} ${++counter}`,
      content: 'Hallo {{name}}, dein Code ist {{code}}. Bis bald!',
      language: 'de',
    },
  })
  assert.equal(created.statusCode, 201, created.body)
  const submitted = await account.request({ method: 'POST', url: `/v1/templates/${created.json().template.id}/submit` })
  assert.equal(submitted.statusCode, 200, submitted.body)
  return submitted.json().template
}

const NAMED = [
  'search_contacts',
  'get_contact',
  'create_contact',
  'update_contact',
  'add_contact_tag',
  'send_message',
  'send_template',
  'get_send_status',
  'list_conversations',
  'get_conversation_messages',
  'list_newsletters',
  'schedule_newsletter',
  'list_templates',
  'create_template',
]

describe('the MCP server over Streamable HTTP', () => {
  test('initialize names the server; tools/list has the 14 named tools with the spec’s fields, limits and annotations', async () => {
    const account = await createTestAccount(harness)
    const client = await connect(account.key)
    assert.equal(client.getServerVersion()?.name, 'herold')
    assert.ok(client.getServerCapabilities()?.tools)
    const { tools } = await client.listTools()
    const byName = new Map(tools.map((t) => [t.name, t]))
    for (const name of NAMED) assert.ok(byName.has(name), `${name} is listed`)
    const props = (name: string) => (byName.get(name)?.inputSchema.properties ?? {}) as Json
    assert.deepEqual(Object.keys(props('search_contacts')).sort(), ['limit', 'query'])
    assert.equal(props('search_contacts').query.maxLength, 100)
    assert.deepEqual([props('search_contacts').limit.minimum, props('search_contacts').limit.maximum], [1, 100])
    assert.equal(props('search_contacts').limit.default, 25)
    assert.deepEqual(byName.get('create_contact')?.inputSchema.required, ['name'])
    assert.deepEqual([props('create_contact').name.minLength, props('create_contact').name.maxLength], [1, 120])
    assert.equal(props('create_contact').phone.maxLength, 40)
    assert.equal(props('create_contact').email.maxLength, 254)
    assert.equal(props('add_contact_tag').tag.maxLength, 60)
    assert.equal(props('send_message').text.maxLength, 4000)
    assert.deepEqual(
      [props('send_message').idempotency_key.minLength, props('send_message').idempotency_key.maxLength],
      [1, 255],
    )
    assert.equal(props('send_template').variables.maxProperties, 20)
    assert.equal((Object.values(props('send_template').variables.patternProperties)[0] as Json).maxLength, 1024)
    assert.equal(props('schedule_newsletter').scheduled_at.maxLength, 40)
    assert.deepEqual([props('create_template').text.minLength, props('create_template').text.maxLength], [1, 1024])
    assert.deepEqual(
      [props('create_template').language.minLength, props('create_template').language.maxLength],
      [2, 10],
    )
    assert.equal(props('list_conversations').offset.maximum, 100000)
    assert.deepEqual(Object.keys(props('list_newsletters')), [])
    for (const name of ['send_message', 'send_template', 'schedule_newsletter']) {
      assert.ok(props(name).confirm_token, `${name} is two-step`)
    }
    assert.equal(props('create_contact').confirm_token, undefined)
    assert.equal(byName.get('search_contacts')?.annotations?.readOnlyHint, true)
    assert.equal(byName.get('send_message')?.annotations?.readOnlyHint, false)
    assert.equal(byName.get('send_message')?.annotations?.openWorldHint, true)
    assert.equal(byName.get('update_contact')?.annotations?.idempotentHint, true)
    assert.equal(byName.get('create_contact')?.annotations?.idempotentHint, false)
  })

  test('search_contacts, get_contact, create_contact, update_contact: valid and invalid arguments', async () => {
    const { client, contactId } = await ready('Zacharias Quast')
    const found = await ok(client, 'search_contacts', { query: 'zachar' })
    assert.deepEqual(
      found.contacts.map((c: Json) => c.id),
      [contactId],
    )
    assert.equal(found.limit, 25)
    await fails(client, 'search_contacts', { query: 'x'.repeat(101) }, 'bad_request')
    await fails(client, 'search_contacts', { limit: 0 }, 'bad_request')
    await fails(client, 'search_contacts', { limit: 101 }, 'bad_request')

    assert.equal((await ok(client, 'get_contact', { contact_id: contactId })).contact.name, 'Zacharias Quast')
    await fails(client, 'get_contact', { contact_id: 'not-a-uuid' }, 'bad_request')
    await fails(client, 'get_contact', {}, 'bad_request')

    const phone = nextPhone()
    const created = await ok(client, 'create_contact', { name: 'Neu', phone, acquisition: 'service' })
    assert.equal(created.created, true)
    assert.equal(created.contact.optin_chat, 'none')
    const duplicate = await fails(
      client,
      'create_contact',
      { name: 'Zweit', phone },
      'contact_exists',
      'kontakt_nummer_doppelt',
    )
    assert.equal(duplicate.contact_id, created.contact.id)
    await fails(client, 'create_contact', { phone: nextPhone() }, 'bad_request')
    await fails(client, 'create_contact', { name: 'x'.repeat(121), phone: nextPhone() }, 'bad_request')
    await fails(client, 'create_contact', { name: 'Ohne' }, 'bad_request')
    await fails(client, 'create_contact', { name: 'Falsch', phone: nextPhone(), acquisition: 'cold' }, 'bad_request')

    const updated = await ok(client, 'update_contact', { contact_id: created.contact.id, name: 'Neuer Name' })
    assert.equal(updated.contact.name, 'Neuer Name')
    await fails(client, 'update_contact', { contact_id: created.contact.id, name: '' }, 'bad_request')
    await fails(client, 'update_contact', { contact_id: created.contact.id, email: 'kein-email' }, 'bad_request')
  })

  test('add_contact_tag: up to 40 characters as REST allows; 41-60 answer REST’s error; system tags refused', async () => {
    const { client, contactId } = await ready()
    const tagged = await ok(client, 'add_contact_tag', { contact_id: contactId, tag: 'stammkunde' })
    assert.deepEqual(tagged.added, ['stammkunde'])
    const restRule = await fails(
      client,
      'add_contact_tag',
      { contact_id: contactId, tag: 't'.repeat(50) },
      'bad_request',
    )
    assert.match(restRule.message, /40/)
    await fails(client, 'add_contact_tag', { contact_id: contactId, tag: 't'.repeat(61) }, 'bad_request')
    await fails(client, 'add_contact_tag', { contact_id: contactId, tag: '' }, 'bad_request')
    await fails(client, 'add_contact_tag', { contact_id: contactId, tag: 'herkunft:messe' }, 'bad_request')
  })

  test('send_message: the preview sends nothing; the token executes once, bound to the arguments', async () => {
    const { account, client, contactId } = await ready()
    const args = { contact_id: contactId, text: 'Ihre Bestellung ist da.' }
    const preview = await ok(client, 'send_message', args)
    assert.equal(preview.confirmation_required, true)
    assert.equal(preview.executed, false)
    assert.equal(preview.preview.recipients, 1)
    assert.equal(preview.preview.to.contact_id, contactId)
    assert.equal(preview.preview.text, args.text)
    assert.match(preview.confirm_token, /^hct_/)
    assert.equal(new Date(preview.expires_at).getTime(), harness.clock.now().getTime() + 10 * 60_000)
    assert.equal((await outbox(account.accountId)).length, 0, 'a preview sends nothing')

    await fails(
      client,
      'send_message',
      { ...args, text: 'Etwas anderes', confirm_token: preview.confirm_token },
      'confirm_token_invalid',
      'confirm_token_arguments',
    )
    assert.equal((await outbox(account.accountId)).length, 0)

    const sent = await ok(client, 'send_message', { ...args, confirm_token: preview.confirm_token })
    assert.equal(sent.sent, true)
    assert.equal(sent.message.text, args.text)
    assert.equal((await outbox(account.accountId)).length, 1)

    await fails(
      client,
      'send_message',
      { ...args, confirm_token: preview.confirm_token },
      'confirm_token_invalid',
      'confirm_token_used',
    )
    await fails(
      client,
      'send_message',
      { ...args, confirm_token: 'hct_unknown' },
      'confirm_token_invalid',
      'confirm_token_unknown',
    )
    assert.equal((await outbox(account.accountId)).length, 1, 'a used token sends nothing more')
  })

  test('a confirm_token expires after 10 minutes on the clock, and works only for its credential and tool', async () => {
    const { account, client, contactId } = await ready()
    const args = { contact_id: contactId, text: 'Bis gleich' }
    const first = await ok(client, 'send_message', args)
    harness.clock.advance(10 * 60_000 + 1)
    await fails(
      client,
      'send_message',
      { ...args, confirm_token: first.confirm_token },
      'confirm_token_invalid',
      'confirm_token_expired',
    )

    const second = await ok(client, 'send_message', args)
    const otherKey = await connect(await createKey(harness, account.accountId, [...SCOPES]))
    await fails(
      otherKey,
      'send_message',
      { ...args, confirm_token: second.confirm_token },
      'confirm_token_invalid',
      'confirm_token_credential',
    )
    const stranger = await connect((await createTestAccount(harness)).key)
    await fails(
      stranger,
      'send_message',
      { ...args, confirm_token: second.confirm_token },
      'confirm_token_invalid',
      'confirm_token_unknown',
    )
    assert.equal((await outbox(account.accountId)).length, 0)
    const ran = await ok(client, 'send_message', { ...args, confirm_token: second.confirm_token })
    assert.equal(ran.sent, true)
  })

  test('send_message with idempotency_key sends once; a retry replays; another text with the key is 422', async () => {
    const { account, client, contactId } = await ready()
    const args = { contact_id: contactId, text: 'Einmal bitte', idempotency_key: `order-${counter}-${process.pid}` }
    const first = await confirmed(client, 'send_message', args)
    const again = await call(client, 'send_message', args)
    assert.equal(again.isError, false)
    assert.deepEqual(again.data, first, 'the stored first result, without a new confirmation')
    const result = await client.callTool({ name: 'send_message', arguments: args })
    assert.equal((result._meta as Json | undefined)?.['herold/idempotent_replayed'], true)
    assert.equal((await outbox(account.accountId)).length, 1)
    await fails(client, 'send_message', { ...args, text: 'Anders' }, 'idempotency_key_mismatch')
    await fails(client, 'send_message', { ...args, idempotency_key: 'mit leerzeichen' }, 'bad_request')
  })

  test('send_message: invalid arguments and REST’s errors (no opt-in) reach the assistant as tool errors', async () => {
    const { account, client } = await ready()
    const other = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name: 'Ohne', phone: nextPhone() },
    })
    const noOptin = other.json().contact.id
    await fails(client, 'send_message', { contact_id: noOptin, text: '' }, 'bad_request')
    await fails(client, 'send_message', { contact_id: noOptin, text: 'x'.repeat(4001) }, 'bad_request')
    await fails(client, 'send_message', { text: 'ohne Kontakt' }, 'bad_request')
    await confirmed(client, 'send_message', { contact_id: noOptin, text: 'Hallo' }).then(
      () => assert.fail('must not send'),
      () => {},
    )
    const preview = await ok(client, 'send_message', { contact_id: noOptin, text: 'Hallo' })
    await fails(
      client,
      'send_message',
      { contact_id: noOptin, text: 'Hallo', confirm_token: preview.confirm_token },
      'contact_not_optin',
    )
    assert.equal((await outbox(account.accountId)).length, 0)
  })

  test('send_template and get_send_status: preview, queued send, status; invalid variables and foreign ids', async () => {
    const { account, client, contactId } = await ready()
    const template = await approvedTemplate(account)
    const args = { contact_id: contactId, template_id: template.id, variables: { code: 'A-17' } }
    const preview = await ok(client, 'send_template', args)
    assert.equal(preview.preview.template.id, template.id)
    assert.equal(preview.preview.recipients, 1)
    const queued = await ok(client, 'send_template', { ...args, confirm_token: preview.confirm_token })
    assert.equal(queued.queued, true)
    assert.match(queued.send_id, /^[0-9a-f-]{36}$/)
    const status = await ok(client, 'get_send_status', { send_id: queued.send_id })
    assert.equal(status.status, 'queued')
    await fails(client, 'get_send_status', { send_id: 'nope' }, 'bad_request')
    const stranger = await connect((await createTestAccount(harness)).key)
    await fails(stranger, 'get_send_status', { send_id: queued.send_id }, 'not_found')

    const many = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`v${i}`, 'x']))
    await fails(client, 'send_template', { ...args, variables: many }, 'bad_request')
    await fails(client, 'send_template', { ...args, variables: { code: 'x'.repeat(1025) } }, 'bad_request')
    const unknown = await ok(client, 'send_template', { ...args, variables: { code: 'A', foo: 'b' } })
    await fails(
      client,
      'send_template',
      { ...args, variables: { code: 'A', foo: 'b' }, confirm_token: unknown.confirm_token },
      'invalid_variables',
    )
  })

  test('list_conversations and get_conversation_messages', async () => {
    const { client } = await ready()
    const list = await ok(client, 'list_conversations', { channel: 'chat' })
    assert.equal(list.conversations.length, 1)
    assert.equal(list.limit, 25)
    const messages = await ok(client, 'get_conversation_messages', { conversation_id: list.conversations[0].id })
    assert.equal(messages.messages[0].text, 'Hallo')
    await fails(client, 'list_conversations', { channel: 'sms' }, 'bad_request')
    await fails(client, 'list_conversations', { limit: 101 }, 'bad_request')
    await fails(client, 'list_conversations', { offset: 100001 }, 'bad_request')
    await fails(
      client,
      'get_conversation_messages',
      { conversation_id: '00000000-0000-4000-8000-000000000000' },
      'not_found',
    )
    await fails(
      client,
      'get_conversation_messages',
      { conversation_id: list.conversations[0].id, limit: 0 },
      'bad_request',
    )
  })

  test('list_newsletters and schedule_newsletter (two-step with the recipient count)', async () => {
    const { account, client } = await ready()
    const created = await account.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'Frühling', content: 'Hallo {{name}}, neue Ware ist da!' },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = created.json().newsletter.id
    const list = await ok(client, 'list_newsletters')
    assert.deepEqual(
      list.newsletters.map((n: Json) => n.id),
      [id],
    )
    await fails(client, 'list_newsletters', { limit: 5 }, 'bad_request')

    const at = new Date(harness.clock.now().getTime() + 3 * 86_400_000).toISOString()
    const preview = await ok(client, 'schedule_newsletter', { newsletter_id: id, scheduled_at: at })
    assert.equal(preview.preview.recipients, 1)
    assert.equal(preview.preview.newsletter.status, 'draft')
    const unchanged = await account.request({ method: 'GET', url: `/v1/newsletters/${id}` })
    assert.equal(unchanged.json().newsletter.status, 'draft', 'the preview schedules nothing')
    const done = await ok(client, 'schedule_newsletter', {
      newsletter_id: id,
      scheduled_at: at,
      confirm_token: preview.confirm_token,
    })
    assert.equal(done.newsletter.status, 'scheduled')

    await fails(client, 'schedule_newsletter', { newsletter_id: id, scheduled_at: 'morgen' }, 'bad_request')
    await fails(
      client,
      'schedule_newsletter',
      { newsletter_id: id, scheduled_at: `${at}${' '.repeat(20)}` },
      'bad_request',
    )
    const past = new Date(harness.clock.now().getTime() - 60_000).toISOString()
    const late = await ok(client, 'schedule_newsletter', { newsletter_id: id, scheduled_at: past })
    await fails(
      client,
      'schedule_newsletter',
      { newsletter_id: id, scheduled_at: past, confirm_token: late.confirm_token },
      'scheduled_at_invalid',
    )
  })

  test('list_templates and create_template', async () => {
    const { client } = await ready()
    const created = await ok(client, 'create_template', {
      name: 'Willkommen',
      text: 'Hallo {{name}}, schön dass du da bist!',
      language: 'de',
    })
    assert.equal(created.template.state, 'draft')
    assert.equal(created.template.language, 'de')
    const list = await ok(client, 'list_templates')
    assert.ok(list.templates.some((t: Json) => t.id === created.template.id))
    await fails(client, 'create_template', { name: 'Lang', text: 'x'.repeat(1025) }, 'bad_request')
    await fails(client, 'create_template', { name: '', text: 'Hallo' }, 'bad_request')
    await fails(client, 'create_template', { name: 'Sprache', text: 'Hallo', language: 'd' }, 'bad_request')
  })

  test('scopes as REST: a missing scope is forbidden/apikey_scope_fehlt; schedule needs newsletters:schedule', async () => {
    const account = await createTestAccount(harness, {
      scopes: ['contacts:read', 'newsletters:write', 'newsletters:read'],
    })
    const client = await connect(account.key)
    await ok(client, 'search_contacts')
    await fails(client, 'create_contact', { name: 'X', phone: nextPhone() }, 'forbidden', 'apikey_scope_fehlt')
    await fails(
      client,
      'schedule_newsletter',
      { newsletter_id: '00000000-0000-4000-8000-000000000000', scheduled_at: '2030-01-01T00:00:00Z' },
      'forbidden',
      'apikey_scope_fehlt',
    )
    await fails(client, 'send_message', { contact_id: '00000000-0000-4000-8000-000000000000', text: 'x' }, 'forbidden')
  })

  test('rate limit: tool calls count against the key’s REST budget; over it, rate_limited with retry_after', async () => {
    const account = await createTestAccount(harness)
    const plan = `tools-rate-${process.pid}-${Date.now()}`
    await setPlan(harness.database.orm, {
      name: plan,
      contactsLimit: 100,
      messagesPerMonth: 100,
      webhooksLimit: 1,
      requestsPerMinute: 3,
    })
    await setAccountPlan(harness.database.orm, account.accountId, plan)
    const client = await connect(account.key)
    await client.listTools()
    await ok(client, 'search_contacts')
    await ok(client, 'get_account')
    assert.equal((await account.request({ method: 'GET', url: '/v1/me' })).statusCode, 200)
    const limited = await fails(client, 'search_contacts', {}, 'rate_limited')
    assert.ok(limited.retry_after >= 1)
    assert.equal((await account.request({ method: 'GET', url: '/v1/me' })).statusCode, 429)
  })

  test('isolation: another account’s ids are not_found', async () => {
    const mine = await ready()
    const other = await ready()
    await fails(other.client, 'get_contact', { contact_id: mine.contactId }, 'not_found')
    await fails(other.client, 'update_contact', { contact_id: mine.contactId, name: 'Hack' }, 'not_found')
    await fails(other.client, 'add_contact_tag', { contact_id: mine.contactId, tag: 'x' }, 'not_found')
    await fails(other.client, 'send_message', { contact_id: mine.contactId, text: 'x' }, 'not_found')
    // the whole number: a tail of it that begins with zeros loses them (a national form) and may be part of the
    // other account's own number, whose digits come from the same process id
    const found = await ok(other.client, 'search_contacts', { query: mine.phone })
    assert.equal(found.contacts.length, 0)
    const own = await ok(mine.client, 'search_contacts', { query: mine.phone })
    assert.equal(own.contacts.length, 1, 'the same search finds it in its own account')
  })
})

describe('the tool server’s HTTP rules', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  }
  // node:http, not fetch: fetch does not let a caller set Host
  const post = (headers: Record<string, string>, body: unknown = initialize) =>
    new Promise<{ status: number; headers: Record<string, string>; json(): Json }>((resolve, reject) => {
      const payload = JSON.stringify(body)
      const req = request(
        `${base}/mcp`,
        {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'content-length': String(Buffer.byteLength(payload)),
            ...headers,
          },
        },
        (res) => {
          let text = ''
          res.setEncoding('utf8')
          res.on('data', (chunk) => {
            text += chunk
          })
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              headers: res.headers as Record<string, string>,
              json: () => JSON.parse(text) as Json,
            }),
          )
        },
      )
      req.on('error', reject)
      req.end(payload)
    })

  test('401 without or with an invalid credential, with WWW-Authenticate', async () => {
    const none = await post({})
    assert.equal(none.status, 401)
    assert.match(none.headers['www-authenticate'] ?? '', /^Bearer /)
    assert.equal(none.json().error.code, 'unauthorized')
    const bad = await post({ authorization: 'Bearer hk_nothing' })
    assert.equal(bad.status, 401)
  })

  test('DNS rebinding: a foreign Host or Origin is 403; loopback and the public origin are accepted', async () => {
    const account = await createTestAccount(harness)
    const auth = { authorization: `Bearer ${account.key}` }
    const host = await post({ ...auth, host: 'evil.example' })
    assert.equal(host.status, 403)
    assert.equal(host.json().error.key, 'host_not_allowed')
    const origin = await post({ ...auth, origin: 'https://evil.example' })
    assert.equal(origin.status, 403)
    assert.equal(origin.json().error.key, 'origin_not_allowed')
    assert.equal((await post({ ...auth, origin: 'http://localhost:6274' })).status, 200)
    assert.equal((await post({ ...auth, host: 'herold.test', origin: 'http://herold.test' })).status, 200)
  })

  test('a blocked account is 403 account_blocked', async () => {
    const account = await createTestAccount(harness)
    await blockAccount(harness.database.orm, account.accountId)
    const response = await post({ authorization: `Bearer ${account.key}` })
    assert.equal(response.status, 403)
    assert.equal(response.json().error.code, 'account_blocked')
  })

  test('OAuth access tokens work on the tool server, are refused by REST, and expire', async () => {
    const account = await createTestAccount(harness)
    const { token } = await createOAuthAccessToken(harness.database.orm, {
      accountId: account.accountId,
      scopes: ['contacts:read'],
      expiresAt: new Date(harness.clock.now().getTime() + 3600_000),
    })
    const client = await connect(token)
    await ok(client, 'search_contacts')
    await fails(client, 'create_contact', { name: 'X', phone: nextPhone() }, 'forbidden', 'apikey_scope_fehlt')
    const rest = await harness.app.inject({
      method: 'GET',
      url: '/v1/me',
      headers: { authorization: `Bearer ${token}` },
    })
    assert.equal(rest.statusCode, 401)
    const tool = await harness.app.inject({
      method: 'POST',
      url: '/v1/tools/search_contacts',
      headers: { authorization: `Bearer ${token}` },
      payload: {},
    })
    assert.equal(tool.statusCode, 401, 'the plain-HTTP tools are REST: API keys only')
    harness.clock.advance(3600_000 + 1)
    assert.equal((await post({ authorization: `Bearer ${token}` })).status, 401)
  })

  test('GET and DELETE /mcp answer 405 (stateless server)', async () => {
    const account = await createTestAccount(harness)
    const response = await fetch(`${base}/mcp`, { headers: { authorization: `Bearer ${account.key}` } })
    assert.equal(response.status, 405)
  })
})

describe('POST /v1/tools/{tool_name}', () => {
  const tool = (account: TestAccount, name: string, payload: Json = {}) =>
    account.request({ method: 'POST', url: `/v1/tools/${name}`, payload })

  test('calls the same tools: results, errors with REST statuses, and the two-step rule', async () => {
    const { account, contactId } = await ready('Hildegard Tool')
    const found = await tool(account, 'search_contacts', { query: 'hildegard' })
    assert.equal(found.statusCode, 200, found.body)
    assert.equal(found.json().contacts[0].id, contactId)
    const invalid = await tool(account, 'search_contacts', { limit: 500 })
    assert.equal(invalid.statusCode, 400)
    assert.equal(invalid.json().error.code, 'bad_request')
    const missing = await tool(account, 'get_contact', { contact_id: '00000000-0000-4000-8000-000000000000' })
    assert.equal(missing.statusCode, 404)
    assert.equal((await tool(account, 'no_such_tool')).statusCode, 400)

    const args = { contact_id: contactId, text: 'Per HTTP', idempotency_key: `http-${process.pid}-${counter}` }
    const preview = await tool(account, 'send_message', args)
    assert.equal(preview.statusCode, 200)
    assert.equal(preview.json().confirmation_required, true)
    assert.equal((await outbox(account.accountId)).length, 0)
    const sent = await tool(account, 'send_message', { ...args, confirm_token: preview.json().confirm_token })
    assert.equal(sent.statusCode, 200, sent.body)
    assert.equal(sent.json().sent, true)
    const replay = await tool(account, 'send_message', args)
    assert.equal(replay.headers['idempotent-replayed'], 'true')
    assert.equal((await outbox(account.accountId)).length, 1)
  })

  test('needs an API key and the tool’s scope', async () => {
    const account = await createTestAccount(harness, { scopes: ['inbox:read'] })
    const denied = await tool(account, 'search_contacts')
    assert.equal(denied.statusCode, 403)
    assert.equal(denied.json().error.key, 'apikey_scope_fehlt')
    const anonymous = await harness.app.inject({ method: 'POST', url: '/v1/tools/search_contacts', payload: {} })
    assert.equal(anonymous.statusCode, 401)
  })
})
