import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { signIn as signInToApp } from '../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { type Json, McpClients, toolFails, toolOk } from '../../test/helpers/mcp-client.ts'
import { harnessPerFile } from '../../test/helpers/test-file.ts'
import { createMember, listMembers, removeMember, setRole } from '../modules/people/index.ts'
import { hashSecret } from '../platform/auth/credentials.ts'
import { approveAuthorization, checkAuthorizationRequest, oauthUrls } from './oauth.ts'

let harness: Harness
const mcpClients = new McpClients()

harnessPerFile({ mcp: mcpClients }, (created) => {
  harness = created
})

const urls = () => oauthUrls(harness.config.publicUrl)
const REDIRECT = 'http://127.0.0.1:33418/callback'

const form = (url: string, fields: Record<string, string>) =>
  harness.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(fields).toString(),
  })

/** The code of an approval's redirect (`back`) exchanged for tokens, without a resource indicator. */
const tokensFor = (back: URL, clientId: string, verifier: string) =>
  form('/oauth/token', {
    grant_type: 'authorization_code',
    code: back.searchParams.get('code') as string,
    redirect_uri: REDIRECT,
    client_id: clientId,
    code_verifier: verifier,
  })

async function register(): Promise<string> {
  const response = await harness.app.inject({
    method: 'POST',
    url: '/oauth/register',
    payload: { client_name: 'Test assistant', redirect_uris: [REDIRECT] },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().client_id
}

function pkce() {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

/** Register, authorize (the approval the consent page gives, called directly), exchange the code: the token response. */
async function signIn(accountId: string, scope = 'contacts:read contacts:write') {
  const clientId = await register()
  const { verifier, challenge } = pkce()
  const request = await checkAuthorizationRequest(harness.database.orm, urls(), {
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: urls().resource,
    scope,
    state: 'xyz',
  })
  const { redirectTo } = await approveAuthorization(harness.database.orm, harness.clock, urls(), {
    ...request,
    accountId,
  })
  const back = new URL(redirectTo)
  assert.equal(back.searchParams.get('state'), 'xyz')
  const code = back.searchParams.get('code') as string
  const exchange = (verifierUsed: string) =>
    form('/oauth/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifierUsed,
      resource: urls().resource,
    })
  return { clientId, code, verifier, exchange }
}

const mcpWith = (token: string) => mcpClients.connect(token)

const mcpStatus = async (token: string) =>
  (
    await harness.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream' },
      payload: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      },
    })
  ).statusCode

test('discovery: 401 names the protected-resource metadata, which names the authorization server', async () => {
  const unauthorized = await harness.app.inject({ method: 'POST', url: '/mcp', payload: {} })
  assert.equal(unauthorized.statusCode, 401)
  const header = String(unauthorized.headers['www-authenticate'])
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(header)?.[1]
  assert.equal(metadataUrl, 'http://herold.test/.well-known/oauth-protected-resource/mcp')
  const resource = (
    await harness.app.inject({ method: 'GET', url: new URL(metadataUrl as string).pathname })
  ).json() as Json
  assert.equal(resource.resource, 'http://herold.test/mcp')
  assert.deepEqual(resource.authorization_servers, ['http://herold.test'])
  const server = (await harness.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json()
  assert.equal(server.issuer, 'http://herold.test')
  assert.deepEqual(server.code_challenge_methods_supported, ['S256'])
  assert.deepEqual(server.grant_types_supported, ['authorization_code', 'refresh_token'])
  assert.equal(server.registration_endpoint, 'http://herold.test/oauth/register')
  assert.equal(server.revocation_endpoint, 'http://herold.test/oauth/revoke')
})

test('registration refuses unsafe redirect addresses and confidential clients', async () => {
  const bad = await harness.app.inject({
    method: 'POST',
    url: '/oauth/register',
    payload: { redirect_uris: ['http://evil.example/cb'] },
  })
  assert.equal(bad.statusCode, 400)
  assert.equal(bad.json().error, 'invalid_redirect_uri')
  const secret = await harness.app.inject({
    method: 'POST',
    url: '/oauth/register',
    payload: { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' },
  })
  assert.equal(secret.json().error, 'invalid_client_metadata')
  assert.match(await register(), /^hoc_/)
})

test('/oauth/authorize checks the request and sends the browser to the consent page with it', async () => {
  const clientId = await register()
  const { challenge } = pkce()
  const query = (fields: Record<string, string>) =>
    harness.app.inject({ method: 'GET', url: `/oauth/authorize?${new URLSearchParams(fields)}` })
  const valid = {
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: 'http://herold.test/mcp',
    state: 's1',
  }
  const unknown = await query({ ...valid, client_id: 'hoc_nope' })
  assert.equal(unknown.statusCode, 400, 'an unknown client is not redirected')
  const foreignRedirect = await query({ ...valid, redirect_uri: 'https://evil.example/cb' })
  assert.equal(foreignRedirect.statusCode, 400, 'an unregistered redirect is not followed')
  const plain = new URL(String((await query({ ...valid, code_challenge_method: 'plain' })).headers.location))
  assert.equal(plain.searchParams.get('error'), 'invalid_request')
  assert.equal(plain.searchParams.get('state'), 's1')
  const target = new URL(String((await query({ ...valid, resource: 'https://other.example/mcp' })).headers.location))
  assert.equal(target.searchParams.get('error'), 'invalid_target')
  const answered = await query(valid)
  assert.equal(answered.statusCode, 302)
  const consent = new URL(String(answered.headers.location), 'http://herold.test')
  assert.equal(consent.pathname, '/consent')
  assert.deepEqual(Object.fromEntries(consent.searchParams), valid, 'the consent page gets the request as it came')
  assert.equal(consent.searchParams.get('code'), null, 'no code without a member’s approval')
})

/** A member with a session in the first account and active memberships in the others; cookie and CSRF token. */
async function member(roles: Array<[string, 'owner' | 'admin' | 'member' | 'viewer']>) {
  const email = `m${randomBytes(6).toString('hex')}@example.org`
  for (const [accountId, role] of roles) {
    await createMember(harness.database.orm, { accountId, email, name: 'Mia', password: 'long password 12', role })
  }
  const { cookie, csrf, accountId } = await signInToApp(harness, { email, password: 'long password 12' })
  return { cookie, csrf, accountId, email }
}

test('the consent step under /app: session and CSRF token required, accounts of the member, scopes of the role', async () => {
  const bakery = await createTestAccount(harness, { name: 'Bakery' })
  const florist = await createTestAccount(harness, { name: 'Florist' })
  const stranger = await createTestAccount(harness, { name: 'Stranger' })
  const mia = await member([
    [bakery.accountId, 'admin'],
    [florist.accountId, 'viewer'],
  ])
  const clientId = await register()
  const { verifier, challenge } = pkce()
  const request = {
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    scope: 'contacts:read contacts:write',
    state: 'st',
    resource: urls().resource,
  }
  const view = (headers: Record<string, string>, fields: Record<string, string> = request) =>
    harness.app.inject({ method: 'GET', url: `/app/oauth/authorization?${new URLSearchParams(fields)}`, headers })
  const decide = (headers: Record<string, string>, body: Record<string, unknown>) =>
    harness.app.inject({ method: 'POST', url: '/app/oauth/authorization', headers, payload: { ...request, ...body } })
  const session = { cookie: mia.cookie, 'x-csrf-token': mia.csrf }

  assert.equal((await view({})).statusCode, 401, 'no session')
  const shown = await view({ cookie: mia.cookie })
  assert.equal(shown.statusCode, 200, shown.body)
  const body = shown.json()
  assert.equal(body.client.client_name, 'Test assistant')
  assert.deepEqual(body.requested_scopes, ['contacts:read', 'contacts:write'])
  assert.deepEqual(
    body.accounts.map((a: { id: string; role: string; scopes: string[] }) => [a.id, a.role, a.scopes]),
    [
      [bakery.accountId, 'admin', ['contacts:read', 'contacts:write']],
      [florist.accountId, 'viewer', ['contacts:read']],
    ],
    'only the member’s own accounts, each with what its role allows',
  )
  const tampered = await view({ cookie: mia.cookie }, { ...request, code_challenge_method: 'plain' })
  assert.equal(tampered.statusCode, 400)
  assert.equal(tampered.json().error.key, 'oauth_invalid_request')

  const withoutCsrf = await decide({ cookie: mia.cookie }, { account_id: bakery.accountId, decision: 'approve' })
  assert.equal(withoutCsrf.statusCode, 403)
  assert.equal(withoutCsrf.json().error.code, 'csrf_invalid')
  const foreign = await decide(session, { account_id: stranger.accountId, decision: 'approve' })
  assert.equal(foreign.statusCode, 404, 'an account the member does not belong to')
  const noneAllowed = await decide(session, {
    account_id: florist.accountId,
    decision: 'approve',
    scope: 'contacts:write',
  })
  assert.equal(noneAllowed.statusCode, 403)
  assert.equal(noneAllowed.json().error.key, 'rolle_fehlt')

  const denied = await decide(session, { account_id: bakery.accountId, decision: 'deny' })
  assert.equal(denied.statusCode, 200)
  const deniedBack = new URL(denied.json().redirect_to)
  assert.equal(deniedBack.searchParams.get('error'), 'access_denied')
  assert.equal(deniedBack.searchParams.get('state'), 'st')

  const approved = await decide(session, { account_id: florist.accountId, decision: 'approve' })
  assert.equal(approved.statusCode, 200, approved.body)
  const back = new URL(approved.json().redirect_to)
  assert.equal(back.origin + back.pathname, REDIRECT)
  const tokens = await tokensFor(back, clientId, verifier)
  assert.equal(tokens.statusCode, 200, tokens.body)
  assert.equal(tokens.json().scope, 'contacts:read', 'a viewer grants only what a viewer may')
  const client = await mcpWith(tokens.json().access_token)
  assert.equal((await toolOk(client, 'get_account')).account.id, florist.accountId)

  // the grant follows the member who approved it: a lowered role lowers the token's scopes at once, and a member
  // who leaves the account takes the assistant's access along (the tokens and the refresh token stop working)
  const forBakery = await decide(session, { account_id: bakery.accountId, decision: 'approve' })
  const bakeryBack = new URL(forBakery.json().redirect_to)
  const bakeryTokens = await tokensFor(bakeryBack, clientId, verifier)
  assert.equal(bakeryTokens.statusCode, 200, bakeryTokens.body)
  const bakeryClient = await mcpWith(bakeryTokens.json().access_token)
  await toolOk(bakeryClient, 'create_contact', { name: 'Erika', email: 'erika@example.org' })
  const userId = (await getMemberByEmail(bakery.accountId, mia.email)) as string
  await setRole(harness.database.orm, { accountId: bakery.accountId, userId, role: 'viewer', actorRole: 'owner' })
  await toolFails(bakeryClient, 'create_contact', { name: 'Max', email: 'max@example.org' }, 'forbidden')
  await toolOk(bakeryClient, 'search_contacts', { query: 'erika' })
  await removeMember(harness.database.orm, harness.clock, {
    accountId: bakery.accountId,
    userId,
    actorRole: 'owner',
  })
  assert.equal(await mcpStatus(bakeryTokens.json().access_token), 401)
  const refreshed = await form('/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: bakeryTokens.json().refresh_token,
    client_id: clientId,
  })
  assert.equal(refreshed.statusCode, 400)
  assert.equal(refreshed.json().error, 'invalid_grant')
  // the florist's grant is untouched
  assert.equal((await toolOk(client, 'get_account')).account.id, florist.accountId)
})

async function getMemberByEmail(accountId: string, email: string): Promise<string | undefined> {
  const { items } = await listMembers(harness.database.orm, accountId, 50, 0)
  return items.find((m) => m.email === email)?.id
}

test('code with PKCE → tokens for the tool server only; refresh rotates; a reused refresh token revokes the grant', async () => {
  const account = await createTestAccount(harness)
  const flow = await signIn(account.accountId)
  const wrong = await flow.exchange(pkce().verifier)
  assert.equal(wrong.statusCode, 400)
  assert.equal(wrong.json().error, 'invalid_grant')
  const exchanged = await flow.exchange(flow.verifier)
  assert.equal(exchanged.statusCode, 200, exchanged.body)
  assert.equal(exchanged.headers['cache-control'], 'no-store')
  const tokens = exchanged.json()
  assert.equal(tokens.token_type, 'Bearer')
  assert.equal(tokens.scope, 'contacts:read contacts:write')
  const stored = await harness.database.query('SELECT 1 FROM oauth_refresh_tokens WHERE token_hash = $1', [
    hashSecret(tokens.refresh_token),
  ])
  assert.equal(stored.length, 1, 'the refresh token is stored as its hash')

  const client = await mcpWith(tokens.access_token)
  assert.equal((await toolOk(client, 'get_account')).auth_type, 'oauth')
  assert.equal((await toolOk(client, 'get_account')).key, null)
  await toolOk(client, 'create_contact', { name: 'Per OAuth', phone: '+4915112340000' })
  await toolFails(client, 'list_templates', {}, 'forbidden', 'apikey_scope_fehlt')
  const rest = await harness.app.inject({
    method: 'GET',
    url: '/v1/me',
    headers: { authorization: `Bearer ${tokens.access_token}` },
  })
  assert.equal(rest.statusCode, 401, 'REST refuses OAuth access tokens')

  const refresh = (token: string) =>
    form('/oauth/token', { grant_type: 'refresh_token', refresh_token: token, client_id: flow.clientId })
  const rotated = await refresh(tokens.refresh_token)
  assert.equal(rotated.statusCode, 200, rotated.body)
  const next = rotated.json()
  assert.notEqual(next.refresh_token, tokens.refresh_token)
  assert.equal(await mcpStatus(next.access_token), 200)

  const reused = await refresh(tokens.refresh_token)
  assert.equal(reused.statusCode, 400)
  assert.equal(reused.json().error, 'invalid_grant')
  assert.equal(await mcpStatus(next.access_token), 401, 'reuse revokes every token of the grant')
  assert.equal((await refresh(next.refresh_token)).json().error, 'invalid_grant')
})

test('a code works once (a second exchange revokes the first tokens); revocation ends a grant; tokens expire', async () => {
  const account = await createTestAccount(harness)
  const flow = await signIn(account.accountId, 'contacts:read')
  const first = (await flow.exchange(flow.verifier)).json()
  assert.equal(await mcpStatus(first.access_token), 200)
  const second = await flow.exchange(flow.verifier)
  assert.equal(second.json().error, 'invalid_grant')
  assert.equal(await mcpStatus(first.access_token), 401)

  const other = await signIn(account.accountId, 'contacts:read')
  const tokens = (await other.exchange(other.verifier)).json()
  assert.equal(
    (await form('/oauth/revoke', { token: tokens.refresh_token, client_id: other.clientId })).statusCode,
    200,
  )
  assert.equal(await mcpStatus(tokens.access_token), 401, 'revoking the refresh token ends the grant')
  assert.equal((await form('/oauth/revoke', { token: 'unknown' })).statusCode, 200)

  const late = await signIn(account.accountId, 'contacts:read')
  const lateTokens = (await late.exchange(late.verifier)).json()
  assert.equal(await mcpStatus(lateTokens.access_token), 200)
  harness.clock.advance(lateTokens.expires_in * 1000 + 1)
  assert.equal(await mcpStatus(lateTokens.access_token), 401, 'access tokens are short-lived')
  const expiredCode = await signIn(account.accountId, 'contacts:read')
  harness.clock.advance(5 * 60_000 + 1)
  assert.equal((await expiredCode.exchange(expiredCode.verifier)).json().error, 'invalid_grant')
})
