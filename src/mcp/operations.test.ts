import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, test } from 'node:test'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { createHarness, createKey, createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { type Json, McpClients, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { approvedAssistantToken } from '../../test/helpers/oauth.ts'
import { startReceiver, type WebhookReceiver } from '../../test/helpers/webhook-receiver.ts'
import { createMember } from '../modules/people/index.ts'
import { SCOPES, type Scope } from '../platform/auth/scopes.ts'

// The operations tools: webhook subscriptions (change, disable, a signed test event, one delivery, redelivery, the
// event types), the account's settings and usage, the chat number's state, resending an invitation, one API key and
// narrowing it. Through the SDK's Client against a listening server with the job workers running, so test events and
// redeliveries reach a real receiver on loopback.

let harness: Harness
const mcpClients = new McpClients()
const receivers: WebhookReceiver[] = []

before(async () => {
  harness = await createHarness({ config: { allowPrivateTargets: true }, workers: true })
  await mcpClients.listen(harness)
})
after(async () => {
  await mcpClients.close()
  for (const receiver of receivers) await receiver.close()
  await harness.close()
})

const mcp = (token: string) => mcpClients.connect(token)

async function account(plan: { contacts?: number; messagesPerMonth?: number; webhooks?: number } = {}) {
  const created = await createTestAccount(harness, { plan: { requestsPerMinute: 10_000, ...plan } })
  return { ...created, client: await mcp(created.key) }
}

async function receiver() {
  const r = await startReceiver({ now: () => harness.clock.now() })
  receivers.push(r)
  return r
}

async function confirmed(client: Client, name: string, args: Json) {
  const preview = await toolOk(client, name, args)
  assert.equal(preview.confirmation_required, true, `${name} is two-step`)
  return {
    preview: preview.preview as Json,
    result: await toolOk(client, name, { ...args, confirm_token: preview.confirm_token }),
  }
}

async function waitForDelivery(client: Client, id: string, state: string) {
  for (let i = 0; i < 100; i++) {
    const { delivery } = await toolOk(client, 'get_webhook_delivery', { delivery_id: id })
    if (delivery.state === state && delivery.history.length > 0) return delivery
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`delivery ${id} did not reach ${state}`)
}

test('webhook tools: event types, a signed test event, the delivery with its payload, redelivery, change, disable; isolation and scopes', async () => {
  const { client, accountId } = await account()
  const other = await account()
  const target = await receiver()
  const types = await toolOk(client, 'list_webhook_event_types', {})
  assert.deepEqual(
    types.event_types.map((t: Json) => t.name),
    ['contact.created', 'message.received', 'conversation.created'],
  )
  const created = await toolOk(client, 'create_webhook_subscription', {
    url: target.url,
    events: ['contact.created', 'message.received'],
  })
  target.secret = created.secret
  const id = created.id as string

  // the test event: the preview sends nothing
  const preview = await toolOk(client, 'send_test_webhook_event', { subscription_id: id, event: 'message.received' })
  assert.equal(preview.preview.to, target.url)
  assert.equal(preview.preview.recipients, 1)
  await new Promise((resolve) => setTimeout(resolve, 200))
  assert.equal(target.received.length, 0, 'the preview sends nothing')
  const sent = await toolOk(client, 'send_test_webhook_event', {
    subscription_id: id,
    event: 'message.received',
    confirm_token: preview.confirm_token,
  })
  const [got] = await target.waitFor(1, 10_000)
  assert.equal(got.verified, true, got.reason ?? '')
  assert.equal(got.event, 'message.received')
  assert.equal(got.body.data.test, true)
  assert.equal(got.deliveryId, sent.delivery.event_id)
  const delivery = await waitForDelivery(client, sent.delivery.id, 'succeeded')
  assert.equal(delivery.attempts, 1)
  assert.equal(delivery.payload.id, sent.delivery.event_id)
  assert.equal(delivery.history[0].status_code, 200)
  await toolFails(
    client,
    'send_test_webhook_event',
    { subscription_id: id, event: 'conversation.created' },
    'bad_request',
    'event_not_subscribed',
  )

  // redelivery: same event id again
  const redelivered = await confirmed(client, 'redeliver_webhook_delivery', { delivery_id: sent.delivery.id })
  assert.equal(redelivered.preview.state_now, 'succeeded')
  const [, again] = await target.waitFor(2, 10_000)
  assert.equal(again.deliveryId, got.deliveryId)
  assert.equal(again.verified, true)
  await waitForDelivery(client, sent.delivery.id, 'succeeded')
  await toolFails(other.client, 'get_webhook_delivery', { delivery_id: sent.delivery.id }, 'not_found')
  await toolFails(other.client, 'redeliver_webhook_delivery', { delivery_id: sent.delivery.id }, 'not_found')

  // change and disable
  const changed = await toolOk(client, 'update_webhook_subscription', {
    subscription_id: id,
    events: ['contact.created'],
  })
  assert.deepEqual(changed.events, ['contact.created'])
  assert.equal(changed.url, target.url)
  await toolFails(
    client,
    'update_webhook_subscription',
    { subscription_id: id, url: 'ftp://example.org/x' },
    'bad_request',
  )
  await toolFails(client, 'update_webhook_subscription', { subscription_id: id }, 'bad_request')
  await toolFails(
    other.client,
    'update_webhook_subscription',
    { subscription_id: id, events: ['contact.created'] },
    'not_found',
  )
  const disabled = await toolOk(client, 'disable_webhook_subscription', { subscription_id: id })
  assert.equal(disabled.status, 'disabled')
  assert.equal(disabled.disabled_reason, 'manual')
  await toolFails(
    client,
    'send_test_webhook_event',
    {
      subscription_id: id,
      confirm_token: (await toolOk(client, 'send_test_webhook_event', { subscription_id: id })).confirm_token,
    },
    'subscription_disabled',
  )
  assert.equal((await toolOk(client, 'enable_webhook_subscription', { subscription_id: id })).status, 'enabled')

  const reader = await mcp(await createKey(harness, accountId, ['webhooks:read']))
  await toolFails(reader, 'disable_webhook_subscription', { subscription_id: id }, 'forbidden', 'apikey_scope_fehlt')
  assert.equal(
    (await toolOk(reader, 'get_webhook_delivery', { delivery_id: sent.delivery.id })).delivery.id,
    sent.delivery.id,
  )

  // the REST routes behind them
  const rest = await createTestAccount(harness)
  const listedTypes = await rest.request({ method: 'GET', url: '/v1/webhook-event-types' })
  assert.equal(listedTypes.statusCode, 200)
  const patched = await rest.request({
    method: 'PATCH',
    url: `/v1/webhook-subscriptions/${id}`,
    payload: { events: ['contact.created'] },
  })
  assert.equal(patched.statusCode, 404, 'another account’s subscription')
})

test('account settings and usage: change name and timezone, bad values refused; usage counts contacts and shows the plan', async () => {
  const { client, accountId } = await account({ contacts: 50, messagesPerMonth: 300, webhooks: 4 })
  const before = (await toolOk(client, 'get_account_settings', {})).account
  assert.equal(before.id, accountId)
  const changed = await toolOk(client, 'update_account_settings', {
    name: 'Bäckerei Sonne',
    timezone: 'America/New_York',
  })
  assert.equal(changed.account.name, 'Bäckerei Sonne')
  assert.equal(changed.account.timezone, 'America/New_York')
  assert.equal(changed.account.language, before.language)
  assert.equal((await toolOk(client, 'get_account', {})).account.name, 'Bäckerei Sonne')
  await toolFails(client, 'update_account_settings', { timezone: 'Mars/Olympus' }, 'bad_request', 'timezone_invalid')
  await toolFails(client, 'update_account_settings', { language: 'deutsch' }, 'bad_request')
  await toolFails(client, 'update_account_settings', {}, 'bad_request')
  await toolFails(client, 'update_account_settings', { name: 'x'.repeat(121) }, 'bad_request')

  await toolOk(client, 'create_contact', { name: 'A', email: 'a@example.org' })
  await toolOk(client, 'create_contact', { name: 'B', email: 'b@example.org' })
  const usage = await toolOk(client, 'get_usage', {})
  assert.deepEqual(usage.contacts, { used: 2, limit: 50, left: 48 })
  assert.deepEqual(usage.messages, { used: 0, limit: 300, left: 300 })
  assert.deepEqual(usage.webhook_subscriptions, { used: 0, limit: 4, left: 4 })
  assert.equal(usage.requests_per_minute, 10_000)
  assert.match(usage.month, /^\d{4}-\d{2}$/)

  const other = await account()
  assert.notEqual((await toolOk(other.client, 'get_account_settings', {})).account.name, 'Bäckerei Sonne')
  const reader = await mcp(await createKey(harness, accountId, ['settings:read']))
  await toolFails(reader, 'update_account_settings', { name: 'X' }, 'forbidden', 'apikey_scope_fehlt')
  const contactsOnly = await mcp(await createKey(harness, accountId, ['contacts:read']))
  await toolFails(contactsOnly, 'get_usage', {}, 'forbidden', 'apikey_scope_fehlt')
})

test('get_chat_channel_status: not connected, then the sandbox number with its daily limit', async () => {
  const { client, accountId } = await account()
  const none = await toolOk(client, 'get_chat_channel_status', {})
  assert.equal(none.connected, false)
  assert.equal(none.daily_limit.limit, null)
  await harness.services.channels.connect(accountId, { channel: 'chat', provider: 'sandbox' })
  const status = await toolOk(client, 'get_chat_channel_status', {})
  assert.equal(status.connected, true)
  assert.equal(status.provider, 'sandbox')
  assert.equal(status.sending_possible, true)
  assert.equal(status.daily_limit.used_last_24h, 0)
  assert.equal(none.pace.current, null)
  assert.deepEqual(status.pace, { current: 80, lowered_reason: null, lowered_since: null, last_refusal_at: null })
  const narrow = await mcp(await createKey(harness, accountId, ['inbox:read']))
  await toolFails(narrow, 'get_chat_channel_status', {}, 'forbidden', 'apikey_scope_fehlt')
})

const REDIRECT = 'http://127.0.0.1:33419/callback'

/** An assistant signed in by this member with these scopes (the consent page's approval). */
const assistantToken = (accountId: string, userId: string, scopes: readonly Scope[]) =>
  approvedAssistantToken(harness, { accountId, userId, scopes, clientName: 'Ops assistant', redirect: REDIRECT })

async function owner(accountId: string) {
  return createMember(harness.database.orm, {
    accountId,
    email: `o${randomBytes(5).toString('hex')}@example.org`,
    name: 'Olga',
    password: 'long password 12',
    role: 'owner',
  })
}

test('resend_invitation, get_api_key and update_api_key: owners’ assistants; a key never gains scopes; isolation', async () => {
  const { accountId, key: apiKey } = await account()
  const other = await account()
  const olga = await owner(accountId)
  const client = await mcp(await assistantToken(accountId, olga.id, SCOPES))

  // resend: a new link, the preview sends nothing
  const invited = await toolOk(client, 'invite_team_member', { email: 'neu@example.org', role: 'member' })
  const first = await toolOk(client, 'invite_team_member', {
    email: 'neu@example.org',
    role: 'member',
    confirm_token: invited.confirm_token,
  })
  const memberId = first.member.id as string
  const { preview, result } = await confirmed(client, 'resend_invitation', { member_id: memberId })
  assert.deepEqual(preview.to, { email: 'neu@example.org', role: 'member' })
  assert.equal(result.member.status, 'invited')
  if (!result.email_sent) {
    assert.match(result.invite_url, /\/invitations\//)
    if (!first.email_sent) {
      // the earlier link stops working
      const oldToken = first.invite_url.split('/invitations/')[1]
      const oldLink = await harness.app.inject({ method: 'GET', url: `/app/invitations/${oldToken}` })
      assert.equal(oldLink.statusCode, 410, oldLink.body)
      const newToken = result.invite_url.split('/invitations/')[1]
      assert.equal((await harness.app.inject({ method: 'GET', url: `/app/invitations/${newToken}` })).statusCode, 200)
    }
  }
  await toolFails(client, 'resend_invitation', { member_id: olga.id }, 'already_member')
  await toolFails(client, 'resend_invitation', { member_id: (await owner(other.accountId)).id }, 'not_found')

  // one key; narrowing its scopes takes effect at once; widening is refused
  const keys = (await toolOk(client, 'list_api_keys', {})).keys
  const keyId = keys[0].id as string
  assert.equal((await toolOk(client, 'get_api_key', { key_id: keyId })).key.name, 'test key')
  const renamed = await toolOk(client, 'update_api_key', { key_id: keyId, name: 'Zapier', scopes: ['contacts:read'] })
  assert.deepEqual(renamed.key.scopes, ['contacts:read'])
  assert.equal(renamed.key.name, 'Zapier')
  const viaKey = await harness.app.inject({
    method: 'GET',
    url: '/v1/team',
    headers: { authorization: `Bearer ${apiKey}` },
  })
  assert.equal(viaKey.statusCode, 403, 'the narrowed key lost team:read at once')
  const widened = await toolFails(
    client,
    'update_api_key',
    { key_id: keyId, scopes: ['contacts:read', 'contacts:write'] },
    'forbidden',
  )
  assert.equal(widened.key, 'apikey_scope_erweiterung')
  await toolFails(client, 'update_api_key', { key_id: keyId, scopes: ['contacts:everything'] }, 'bad_request')
  await toolFails(client, 'update_api_key', { key_id: keyId }, 'bad_request')
  await toolFails(client, 'get_api_key', { key_id: other.keyId }, 'not_found')
  await toolFails(client, 'update_api_key', { key_id: other.keyId, name: 'mine' }, 'not_found')
  const revoke = await toolOk(client, 'revoke_api_key', { key_id: keyId })
  await toolOk(client, 'revoke_api_key', { key_id: keyId, confirm_token: revoke.confirm_token })
  await toolFails(client, 'update_api_key', { key_id: keyId, name: 'again' }, 'key_revoked')

  // an API key is no member
  await toolFails(other.client, 'get_api_key', { key_id: other.keyId }, 'forbidden', 'rolle_fehlt')
  await toolFails(other.client, 'resend_invitation', { member_id: memberId }, 'forbidden', 'rolle_fehlt')
})
