import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { signedInMember } from '../../test/helpers/fixtures.ts'
import { createKey, createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { type Json, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { mcpHarnessPerFile } from '../../test/helpers/mcp-file.ts'
import { approvedAssistantToken } from '../../test/helpers/oauth.ts'
import { SCOPES, type Scope } from '../platform/auth/scopes.ts'

// The team and credential tools: a member's permission decides (owners and admins), as on /app/team and /app/keys.
// Through MCP with an owner's assistant (every call's structuredContent validated by the SDK against the tool's
// outputSchema), and through POST /app/{tool_name} with sessions of other roles.

let harness: Harness
const { mcp } = mcpHarnessPerFile((created) => {
  harness = created
})

async function person(accountId: string, role: 'owner' | 'admin' | 'member' | 'viewer') {
  const email = `p${randomBytes(6).toString('hex')}@example.org`
  const { id, headers } = await signedInMember(harness, {
    accountId,
    email,
    name: 'Pia',
    password: 'long password 12',
    role,
  })
  return { id, email, headers }
}

/** The access token an assistant gets when this member approves these scopes (the consent page's approval). */
const assistantToken = (accountId: string, userId: string, scopes: readonly Scope[]) =>
  approvedAssistantToken(harness, { accountId, userId, scopes, clientName: 'Team assistant' })

const app = (headers: Record<string, string>, tool: string, payload: Json = {}) =>
  harness.app.inject({ method: 'POST', url: `/app/${tool}`, headers, payload })

const me = (key: string) =>
  harness.app.inject({ method: 'GET', url: '/v1/me', headers: { authorization: `Bearer ${key}` } })

test('team tools through MCP and the session: permissions, isolation, the REST rules', async () => {
  const account = await createTestAccount(harness)
  const other = await createTestAccount(harness)
  const owner = await person(account.accountId, 'owner')
  const admin = await person(account.accountId, 'admin')
  const viewer = await person(account.accountId, 'viewer')
  const stranger = await person(other.accountId, 'member')
  const client = await mcp(await assistantToken(account.accountId, owner.id, SCOPES))

  const listed = await toolOk(client, 'list_team_members')
  assert.deepEqual(listed.members.map((m: Json) => m.role).sort(), ['admin', 'owner', 'viewer'])
  assert.equal((await toolOk(client, 'get_team_member', { member_id: viewer.id })).member.email, viewer.email)

  // invite: the preview sends nothing and adds nobody; the confirmed call invites
  const preview = await toolOk(client, 'invite_team_member', { email: 'New@Example.org', role: 'member' })
  assert.equal(preview.executed, false)
  assert.deepEqual(preview.preview.to, { email: 'new@example.org', role: 'member' })
  assert.equal((await toolOk(client, 'list_team_members')).members.length, 3, 'the preview invites nobody')
  const invited = await toolOk(client, 'invite_team_member', {
    email: 'New@Example.org',
    role: 'member',
    confirm_token: preview.confirm_token,
  })
  assert.equal(invited.member.email, 'new@example.org')
  assert.equal(invited.member.status, 'invited')
  assert.equal(typeof invited.email_sent, 'boolean')
  if (!invited.email_sent) assert.match(invited.invite_url, /\/invitations\//)
  await toolFails(client, 'invite_team_member', { email: 'not an address', role: 'member' }, 'bad_request')
  const existing = await toolOk(client, 'invite_team_member', { email: admin.email, role: 'member' })
  const refusedInvite = await toolFails(
    client,
    'invite_team_member',
    { email: admin.email, role: 'member', confirm_token: existing.confirm_token },
    'already_member',
  )
  assert.equal(refusedInvite.key, 'schon_mitglied')

  // role: the viewer becomes a member; the sole owner cannot step down
  const changed = await toolOk(client, 'change_team_member_role', { member_id: viewer.id, role: 'member' })
  assert.equal(changed.member.role, 'member')
  await toolFails(client, 'change_team_member_role', { member_id: owner.id, role: 'admin' }, 'last_owner')
  await toolFails(client, 'change_team_member_role', { member_id: viewer.id, role: 'boss' }, 'bad_request')

  // isolation: another account's member is a 404 everywhere
  await toolFails(client, 'get_team_member', { member_id: stranger.id }, 'not_found')
  await toolFails(client, 'change_team_member_role', { member_id: stranger.id, role: 'viewer' }, 'not_found')
  await toolFails(client, 'remove_team_member', { member_id: stranger.id }, 'not_found')

  // an admin's session: cannot touch owners or make one (the people module's rule)
  const promote = await app(admin.headers, 'change_team_member_role', { member_id: viewer.id, role: 'owner' })
  assert.equal(promote.statusCode, 403, promote.body)
  assert.equal(promote.json().error.key, 'rolle_fehlt')
  const demote = await app(admin.headers, 'change_team_member_role', { member_id: owner.id, role: 'viewer' })
  assert.equal(demote.statusCode, 403)
  // a viewer's (now member's) session cannot manage the team or the keys, but reads the team
  for (const [tool, args] of [
    ['change_team_member_role', { member_id: admin.id, role: 'viewer' }],
    ['remove_team_member', { member_id: admin.id }],
    ['invite_team_member', { email: 'x@example.org', role: 'viewer' }],
    ['list_api_keys', {}],
    ['create_api_key', { name: 'k', scopes: ['contacts:read'] }],
    ['list_connected_assistants', {}],
  ] as const) {
    const refused = await app(viewer.headers, tool, args)
    assert.equal(refused.statusCode, 403, `${tool}: ${refused.body}`)
    assert.equal(refused.json().error.key, 'rolle_fehlt', tool)
  }
  assert.equal((await app(viewer.headers, 'list_team_members')).statusCode, 200)

  // remove: the preview removes nobody; the confirmed call ends the membership and its sessions
  const removal = await toolOk(client, 'remove_team_member', { member_id: viewer.id })
  assert.equal(removal.preview.member.email, viewer.email)
  assert.equal((await app(viewer.headers, 'list_team_members')).statusCode, 200, 'the preview changes nothing')
  const removed = await toolOk(client, 'remove_team_member', {
    member_id: viewer.id,
    confirm_token: removal.confirm_token,
  })
  assert.equal(removed.member.id, viewer.id)
  assert.equal((await app(viewer.headers, 'list_team_members')).statusCode, 401, 'the session ended')
  await toolFails(client, 'get_team_member', { member_id: viewer.id }, 'not_found')
})

test('API keys through tools: the secret once, revocation two-step and at once; only owners and admins', async () => {
  const account = await createTestAccount(harness)
  const other = await createTestAccount(harness)
  const owner = await person(account.accountId, 'owner')
  const admin = await person(account.accountId, 'admin')
  const client = await mcp(await assistantToken(account.accountId, owner.id, SCOPES))

  const created = await toolOk(client, 'create_api_key', { name: 'Shop sync', scopes: ['contacts:read'] })
  assert.match(created.secret, /^hk_/)
  assert.deepEqual(created.key.scopes, ['contacts:read'])
  assert.equal((await me(created.secret)).statusCode, 200, 'the new key works on REST')
  const listed = await toolOk(client, 'list_api_keys')
  const row = listed.keys.find((k: Json) => k.id === created.key.id)
  assert.equal(row.name, 'Shop sync')
  assert.ok(!JSON.stringify(listed).includes(created.secret), 'the secret is never shown again')
  await toolFails(client, 'create_api_key', { name: 'x', scopes: ['contacts:everything'] }, 'bad_request')
  await toolFails(client, 'create_api_key', { name: '', scopes: ['contacts:read'] }, 'bad_request')

  // revoke: the preview leaves the key working; the confirmed call stops it
  const preview = await toolOk(client, 'revoke_api_key', { key_id: created.key.id })
  assert.equal(preview.preview.key.id, created.key.id)
  assert.equal((await me(created.secret)).statusCode, 200, 'the preview revokes nothing')
  const revoked = await toolOk(client, 'revoke_api_key', {
    key_id: created.key.id,
    confirm_token: preview.confirm_token,
  })
  assert.ok(revoked.key.revoked_at)
  assert.equal((await me(created.secret)).statusCode, 401)

  // isolation: another account's key is a 404, and stays working
  const foreign = await createKey(harness, other.accountId, ['contacts:read'])
  const foreignId = (await me(foreign)).json().key.id as string
  await toolFails(client, 'revoke_api_key', { key_id: foreignId }, 'not_found')
  assert.equal((await me(foreign)).statusCode, 200)

  // an admin's session manages keys too; an API key never does, whatever its scopes
  const byAdmin = await app(admin.headers, 'create_api_key', { name: 'Admin key', scopes: ['stats:read'] })
  assert.equal(byAdmin.statusCode, 200, byAdmin.body)
  assert.match(byAdmin.json().secret, /^hk_/)
  const keyClient = await mcp(account.key)
  const refused = await toolFails(keyClient, 'list_api_keys', {}, 'forbidden')
  assert.equal(refused.key, 'rolle_fehlt')
  // an assistant the owner granted only some scopes does not act as the owner here
  const narrow = await mcp(await assistantToken(account.accountId, owner.id, ['team:read', 'contacts:read']))
  assert.equal(
    (await toolFails(narrow, 'create_api_key', { name: 'x', scopes: ['contacts:read'] }, 'forbidden')).key,
    'rolle_fehlt',
  )
  assert.ok((await toolOk(narrow, 'list_team_members')).members.length >= 2, 'it still reads the team')
})

test('connected assistants: listed with who approved them; disconnecting one stops its tokens (two-step)', async () => {
  const account = await createTestAccount(harness)
  const other = await createTestAccount(harness)
  const owner = await person(account.accountId, 'owner')
  const member = await person(account.accountId, 'member')
  const otherOwner = await person(other.accountId, 'owner')
  const client = await mcp(await assistantToken(account.accountId, owner.id, SCOPES))
  const memberToken = await assistantToken(account.accountId, member.id, ['contacts:read'])
  const memberAssistant = await mcp(memberToken)
  await toolOk(memberAssistant, 'search_contacts')
  await assistantToken(other.accountId, otherOwner.id, ['contacts:read'])

  const { assistants } = await toolOk(client, 'list_connected_assistants')
  assert.equal(assistants.length, 2, 'this account’s two assistants, not the other account’s')
  const ofMember = assistants.find((a: Json) => a.approved_by?.id === member.id)
  assert.deepEqual(ofMember.scopes, ['contacts:read'])
  assert.equal(ofMember.client_name, 'Team assistant')
  assert.ok(ofMember.last_token_at)

  const preview = await toolOk(client, 'disconnect_assistant', { assistant_id: ofMember.id })
  assert.equal(preview.preview.live_access_tokens, 1)
  await toolOk(memberAssistant, 'search_contacts')
  await toolOk(client, 'disconnect_assistant', { assistant_id: ofMember.id, confirm_token: preview.confirm_token })
  const status = await harness.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { authorization: `Bearer ${memberToken}`, accept: 'application/json, text/event-stream' },
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  })
  assert.equal(status.statusCode, 401, 'its access token stopped at once')
  assert.equal((await toolOk(client, 'list_connected_assistants')).assistants.length, 1)
  await toolFails(client, 'disconnect_assistant', { assistant_id: ofMember.id }, 'not_found')

  // another account's assistant is a 404
  const otherClient = await mcp(await assistantToken(other.accountId, otherOwner.id, SCOPES))
  const foreign = (await toolOk(otherClient, 'list_connected_assistants')).assistants[0]
  await toolFails(client, 'disconnect_assistant', { assistant_id: foreign.id }, 'not_found')
})
