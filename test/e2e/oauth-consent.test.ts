import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import * as oauth from 'oauth4webapi'
import type { Browser, Page } from 'playwright-core'
import { browserWithPage } from '../helpers/browser.ts'
import { connectMcp, toolFails, toolOk } from '../helpers/mcp-client.ts'
import { pageChecks } from '../helpers/pages.ts'
import { childEnv, freePort, npmStart, runCli, type ServerProcess, tempDataDir } from '../helpers/process.ts'

// OAuth 2.1 for assistants end to end, as an assistant does it: with oauth4webapi (a certified OAuth client) against
// a server started as `npm start` starts it, the consent step in a real headless Chromium. A screenshot of the
// consent page is left in test-results/oauth/ (HEROLD_TEST_OUTPUT overrides).

const { accessibleShot } = pageChecks('oauth')
const MIA = { name: 'Mia Member', email: 'mia@example.org', password: 'a long password 1' }

let server: ServerProcess
let browser: Browser
let page: Page
let callback: Server
let redirectUri: string
let metadataClientId: string
const arrived: URL[] = []
let as: oauth.AuthorizationServer
let client: oauth.Client
const auth = oauth.None()
const http = { [oauth.allowInsecureRequests]: true }
let resource: string
let bakeryId: string
let floristId: string

async function cli(args: string[], env: NodeJS.ProcessEnv, input = '') {
  const result = await runCli([...args, '--json'], env, input)
  assert.equal(result.code, 0, result.stderr)
  return JSON.parse(result.stdout) as Record<string, string>
}

before(async () => {
  // two accounts: Mia owns the bakery and may only read in the florist's
  // the development setting that lets a client ID metadata document live on loopback http (the test's callback server)
  const env = childEnv({ HEROLD_DATA_DIR: tempDataDir(), HEROLD_DEV_OAUTH_CLIENT_METADATA_HTTP_LOOPBACK: 'true' })
  bakeryId = (await cli(['accounts', 'create', '--name', 'Bakery Becker', '--language', 'en'], env)).id
  floristId = (await cli(['accounts', 'create', '--name', 'Florist Frey', '--language', 'en'], env)).id
  for (const [account, role] of [
    [bakeryId, 'owner'],
    [floristId, 'viewer'],
  ]) {
    const args = ['users', 'create', '--account', account, '--email', MIA.email, '--role', role]
    await cli([...args, '--name', MIA.name, '--password-stdin'], env, `${MIA.password}\n`)
  }
  const port = await freePort()
  server = await npmStart({ ...env, PORT: String(port) })

  // the assistant's loopback redirect (RFC 8252): it records where the browser comes back
  callback = createServer((request, response) => {
    if (request.url === '/client.json') {
      // the assistant's client ID metadata document: its address is its client_id
      const document = {
        client_id: metadataClientId,
        client_name: 'Herold test assistant',
        redirect_uris: [redirectUri],
        token_endpoint_auth_method: 'none',
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(document))
      return
    }
    arrived.push(new URL(request.url ?? '/', redirectUri))
    response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>back</title><p>done</p>')
  })
  await new Promise<void>((resolve) => callback.listen(0, '127.0.0.1', resolve))
  redirectUri = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/callback`
  metadataClientId = `http://127.0.0.1:${(callback.address() as AddressInfo).port}/client.json`

  ;({ browser, page } = await browserWithPage())
})

after(async () => {
  await browser?.close()
  await server?.stop()
  await new Promise((resolve) => callback?.close(resolve))
})

/** The browser part: open the authorization URL, sign in if asked, choose the account, decide; the callback URL. */
async function authorize(options: {
  scope: string
  account?: string
  decision?: 'Approve' | 'Deny'
  signIn?: boolean
  check?: (page: Page) => Promise<void>
  client?: oauth.Client
}) {
  const asClient = options.client ?? client
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const url = new URL(as.authorization_endpoint as string)
  for (const [name, value] of Object.entries({
    client_id: asClient.client_id,
    redirect_uri: redirectUri,
    response_type: 'code',
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    scope: options.scope,
    state,
    resource,
  }))
    url.searchParams.set(name, value)
  const before = arrived.length
  await page.goto(url.href)
  if (options.signIn) {
    await page.getByRole('heading', { name: 'Connect an assistant' }).waitFor()
    await page.getByLabel('E-mail address').fill(MIA.email)
    await page.getByLabel('Password').fill(MIA.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
  }
  await page.getByText('“Herold test assistant” wants to work with your Herold access.').waitFor()
  if (options.account) await page.getByRole('radio', { name: new RegExp(options.account) }).check()
  await options.check?.(page)
  await page.getByRole('button', { name: options.decision ?? 'Approve' }).click()
  await page.waitForURL((current) => current.href.startsWith(redirectUri))
  assert.equal(arrived.length, before + 1)
  return { back: arrived[arrived.length - 1], verifier, state }
}

async function exchange(back: URL, verifier: string, state: string, asClient: oauth.Client = client) {
  const params = oauth.validateAuthResponse(as, asClient, back, state)
  const response = await oauth.authorizationCodeGrantRequest(as, asClient, auth, params, redirectUri, verifier, {
    ...http,
    additionalParameters: { resource },
  })
  return oauth.processAuthorizationCodeResponse(as, asClient, response)
}

const refresh = async (token: string) =>
  oauth.processRefreshTokenResponse(
    as,
    client,
    await oauth.refreshTokenGrantRequest(as, client, auth, token, { ...http, additionalParameters: { resource } }),
  )

/** The status /mcp answers a token with (initialize). */
async function mcpStatus(token: string): Promise<number> {
  const response = await fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    }),
  })
  await response.body?.cancel()
  return response.status
}

test('an assistant signs in with OAuth: discovery, registration, PKCE, consent in the browser, tokens, refresh, reuse detection, revocation', async () => {
  // discovery from the tool server's 401 (RFC 9728), then the authorization server's metadata (RFC 8414)
  const unauthorized = await fetch(`${server.url}/mcp`, { method: 'POST', body: '{}' })
  assert.equal(unauthorized.status, 401)
  const challenge = unauthorized.headers.get('www-authenticate') ?? ''
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)?.[1]
  assert.ok(metadataUrl, challenge)
  const protectedResource = (await (await fetch(metadataUrl)).json()) as {
    resource: string
    authorization_servers: string[]
  }
  resource = protectedResource.resource
  assert.equal(resource, `${server.url}/mcp`)
  const issuer = new URL(protectedResource.authorization_servers[0])
  as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { ...http, algorithm: 'oauth2' }),
  )
  assert.deepEqual(as.code_challenge_methods_supported, ['S256'])

  // dynamic client registration (RFC 7591): a public client
  client = await oauth.processDynamicClientRegistrationResponse(
    await oauth.dynamicClientRegistrationRequest(
      as,
      { client_name: 'Herold test assistant', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' },
      http,
    ),
  )
  assert.match(client.client_id, /^hoc_/)

  // not signed in: the consent page asks for the sign-in first, then shows the client, the accounts and the scopes
  const first = await authorize({
    scope: 'contacts:read contacts:write',
    signIn: true,
    account: 'Bakery Becker',
    async check(consent) {
      await consent.getByRole('radio', { name: /Florist Frey/ }).waitFor()
      const scopes = consent.getByRole('list', { name: 'What the assistant may do in this account' })
      assert.deepEqual(await scopes.getByRole('listitem').allTextContents(), ['contacts:read', 'contacts:write'])
      await consent.getByText(`After your decision you return to ${new URL(redirectUri).origin}.`).waitFor()
      await accessibleShot(consent, 'the consent page', 'consent')
    },
  })
  assert.equal(first.back.searchParams.get('iss'), as.issuer)
  const tokens = await exchange(first.back, first.verifier, first.state)
  assert.match(tokens.access_token, /^hoa_/)
  assert.equal(tokens.scope, 'contacts:read contacts:write')
  assert.ok(tokens.refresh_token)

  // the access token works on the tool server through the SDK's Client, for the bakery, as OAuth
  const mcp = await connectMcp(server.url, tokens.access_token)
  const me = await toolOk(mcp, 'get_account')
  assert.equal(me.account.id, bakeryId)
  assert.equal(me.auth_type, 'oauth')
  assert.equal(me.key, null)
  const created = await toolOk(mcp, 'create_contact', { name: 'Erika Muster', email: 'erika@example.org' })
  assert.equal(created.contact.name, 'Erika Muster')
  await toolFails(mcp, 'list_templates', {}, 'forbidden', 'apikey_scope_fehlt')
  await mcp.close()

  // the REST API refuses OAuth access tokens
  const rest = await fetch(`${server.url}/v1/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
  assert.equal(rest.status, 401)
  assert.equal(((await rest.json()) as { error: { code: string } }).error.code, 'unauthorized')

  // refresh rotates: a new pair; the old refresh token presented again revokes the whole family
  const rotated = await refresh(tokens.refresh_token as string)
  assert.notEqual(rotated.refresh_token, tokens.refresh_token)
  assert.equal(await mcpStatus(rotated.access_token), 200)
  await assert.rejects(refresh(tokens.refresh_token as string), (error: unknown) => {
    assert.ok(error instanceof oauth.ResponseBodyError)
    assert.equal(error.error, 'invalid_grant')
    return true
  })
  assert.equal(await mcpStatus(rotated.access_token), 401)
  assert.equal(await mcpStatus(tokens.access_token), 401)
  await assert.rejects(refresh(rotated.refresh_token as string), oauth.ResponseBodyError)

  // signed in already: straight to the consent page; the florist account grants only what a viewer may
  const second = await authorize({
    scope: 'contacts:read contacts:write',
    account: 'Florist Frey',
    async check(consent) {
      const scopes = consent.getByRole('list', { name: 'What the assistant may do in this account' })
      assert.deepEqual(await scopes.getByRole('listitem').allTextContents(), ['contacts:read'])
      await consent.getByText('Not granted (your role does not allow it): contacts:write').waitFor()
    },
  })
  const florist = await exchange(second.back, second.verifier, second.state)
  assert.equal(florist.scope, 'contacts:read')
  const floristMcp = await connectMcp(server.url, florist.access_token)
  assert.equal((await toolOk(floristMcp, 'get_account')).account.id, floristId)
  await toolFails(floristMcp, 'create_contact', { name: 'Nope', email: 'nope@example.org' }, 'forbidden')
  await floristMcp.close()

  // revocation (RFC 7009): the access token ends itself; the refresh token ends the grant
  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth, florist.access_token, http))
  assert.equal(await mcpStatus(florist.access_token), 401)
  await oauth.processRevocationResponse(
    await oauth.revocationRequest(as, client, auth, florist.refresh_token as string, http),
  )
  await assert.rejects(refresh(florist.refresh_token as string), oauth.ResponseBodyError)

  // a denial goes back to the client as access_denied, with no code
  const denied = await authorize({ scope: 'contacts:read', decision: 'Deny' })
  assert.equal(denied.back.searchParams.get('error'), 'access_denied')
  assert.equal(denied.back.searchParams.get('code'), null)
  assert.equal(denied.back.searchParams.get('state'), denied.state)
})

test('an assistant identified by a client ID metadata document: no registration; consent, tokens, refresh, tools', async () => {
  // the first test discovered the server and signed Mia in in this browser
  assert.equal(as.client_id_metadata_document_supported, true)
  const metadataClient: oauth.Client = { client_id: metadataClientId, token_endpoint_auth_method: 'none' }
  const { back, verifier, state } = await authorize({
    scope: 'contacts:read',
    account: 'Bakery Becker',
    client: metadataClient,
    async check(consent) {
      await consent.getByText(`After your decision you return to ${new URL(redirectUri).origin}.`).waitFor()
    },
  })
  assert.equal(back.searchParams.get('iss'), as.issuer)
  const tokens = await exchange(back, verifier, state, metadataClient)
  assert.match(tokens.access_token, /^hoa_/)
  assert.equal(tokens.scope, 'contacts:read')
  const mcp = await connectMcp(server.url, tokens.access_token)
  assert.equal((await toolOk(mcp, 'get_account')).account.id, bakeryId)
  const found = await toolOk(mcp, 'search_contacts', { query: 'erika' })
  assert.deepEqual(
    found.contacts.map((c: { name: string }) => c.name),
    ['Erika Muster'],
    'the contact the first assistant created in the bakery',
  )
  await toolFails(mcp, 'create_contact', { name: 'Nope', email: 'nope@example.org' }, 'forbidden')
  await mcp.close()
  const rotated = await oauth.processRefreshTokenResponse(
    as,
    metadataClient,
    await oauth.refreshTokenGrantRequest(as, metadataClient, auth, tokens.refresh_token as string, {
      ...http,
      additionalParameters: { resource },
    }),
  )
  assert.equal(await mcpStatus(rotated.access_token), 200)
  // a redirect address the document does not list is refused before any consent
  const url = new URL(as.authorization_endpoint as string)
  url.searchParams.set('client_id', metadataClientId)
  url.searchParams.set('redirect_uri', `${new URL(redirectUri).origin}/not-listed`)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()))
  url.searchParams.set('code_challenge_method', 'S256')
  const refused = await fetch(url, { redirect: 'manual' })
  assert.equal(refused.status, 400)
  assert.equal(((await refused.json()) as { error: string }).error, 'invalid_request')
})
