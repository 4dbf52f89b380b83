import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, test } from 'node:test'
import { eq } from 'drizzle-orm'
import { createHarness, createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { connectMcp, toolOk } from '../../test/helpers/mcp-client.ts'
import { exchangeCode } from '../../test/helpers/oauth.ts'
import { CLIENT_METADATA_MAX_BYTES, isClientMetadataUrl } from './client-metadata.ts'
import { oauthClients } from './mcp.tables.ts'
import { approveAuthorization, checkAuthorizationRequest, oauthUrls } from './oauth.ts'

// Client ID metadata documents: the client_id is the address of a JSON document the server fetches. A loopback HTTP
// server serves the documents; the harness runs with the development setting that allows http://127.0.0.1 for them
// (HEROLD_DEV_OAUTH_CLIENT_METADATA_HTTP_LOOPBACK), and a second harness without it shows that only https counts.

let harness: Harness
let strict: Harness
let documents: Server
let docBase: string
const served = new Map<string, { status?: number; body: string; hang?: boolean }>()
const REDIRECT = 'http://127.0.0.1:33418/callback'

before(async () => {
  harness = await createHarness({ config: { devOAuthClientMetadataOverHttpLoopback: true } })
  await harness.app.listen({ port: 0, host: '127.0.0.1' })
  strict = await createHarness()
  documents = createServer((request, response) => {
    const doc = served.get(request.url ?? '')
    if (doc?.hang) return // never answers: the fetch's time limit ends it
    if (!doc) return response.writeHead(404).end('not found')
    response.writeHead(doc.status ?? 200, { 'content-type': 'application/json' }).end(doc.body)
  })
  await new Promise<void>((resolve) => documents.listen(0, '127.0.0.1', resolve))
  docBase = `http://127.0.0.1:${(documents.address() as AddressInfo).port}`
})
after(async () => {
  documents.closeAllConnections()
  await new Promise((resolve) => documents.close(resolve))
  await harness.close()
  await strict.close()
})

/** Serves a document at a new path; its address, which is the client_id. */
function serve(make: (clientId: string) => Record<string, unknown> | string, extra: { status?: number } = {}) {
  const path = `/clients/${randomBytes(6).toString('hex')}.json`
  const clientId = `${docBase}${path}`
  const document = make(clientId)
  served.set(path, { body: typeof document === 'string' ? document : JSON.stringify(document), ...extra })
  return clientId
}

const goodDocument = (clientId: string) => ({
  client_id: clientId,
  client_name: 'Metadata assistant',
  redirect_uris: [REDIRECT],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
})

function pkce() {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

function authorize(on: Harness, clientId: string, challenge: string, redirectUri = REDIRECT) {
  const query = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: oauthUrls(on.config.publicUrl).resource,
    scope: 'contacts:read',
    state: 'st',
  })
  return on.app.inject({ method: 'GET', url: `/oauth/authorize?${query}` })
}

test('the authorization server advertises client ID metadata documents', async () => {
  const response = await harness.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })
  assert.equal(response.json().client_id_metadata_document_supported, true)
})

test('only an https address with a path is a metadata client_id; http only from 127.0.0.1 with the dev setting', () => {
  assert.equal(isClientMetadataUrl('https://assistant.example/oauth/client.json', { httpLoopback: false }), true)
  assert.equal(isClientMetadataUrl('https://assistant.example/', { httpLoopback: false }), false)
  assert.equal(isClientMetadataUrl('hoc_abc', { httpLoopback: false }), false)
  assert.equal(isClientMetadataUrl('http://127.0.0.1:9/client.json', { httpLoopback: false }), false)
  assert.equal(isClientMetadataUrl('http://127.0.0.1:9/client.json', { httpLoopback: true }), true)
  assert.equal(isClientMetadataUrl('http://assistant.example/client.json', { httpLoopback: true }), false)
})

test('a metadata client authorizes without registering: fetched, checked, exchanged, and its token calls tools', async () => {
  const account = await createTestAccount(harness)
  const clientId = serve(goodDocument)
  const { verifier, challenge } = pkce()
  const response = await authorize(harness, clientId, challenge)
  assert.equal(response.statusCode, 302, response.body)
  assert.match(String(response.headers.location), /^\/consent\?/)
  const [stored] = await harness.database.orm.select().from(oauthClients).where(eq(oauthClients.clientId, clientId))
  assert.equal(stored.clientName, 'Metadata assistant')
  assert.deepEqual(stored.redirectUris, [REDIRECT])

  // the consent page's approval, then the code exchange with the metadata client_id
  const urls = oauthUrls(harness.config.publicUrl)
  const request = await checkAuthorizationRequest(harness.database.orm, urls, {
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: urls.resource,
    scope: 'contacts:read',
  })
  const { redirectTo } = await approveAuthorization(harness.database.orm, harness.clock, urls, {
    ...request,
    accountId: account.accountId,
  })
  const code = new URL(redirectTo).searchParams.get('code') as string
  const exchanged = await exchangeCode(harness, { code, clientId, verifier, redirect: REDIRECT })
  assert.equal(exchanged.statusCode, 200, exchanged.body)
  const base = `http://127.0.0.1:${(harness.app.server.address() as AddressInfo).port}`
  const client = await connectMcp(base, exchanged.json().access_token)
  assert.equal((await toolOk(client, 'get_account')).account.id, account.accountId)
  await client.close()

  // the document is fetched again at the next request: a redirect it no longer lists is refused
  served.set(new URL(clientId).pathname, {
    body: JSON.stringify({ ...goodDocument(clientId), redirect_uris: ['http://127.0.0.1:33419/other'] }),
  })
  const moved = await authorize(harness, clientId, pkce().challenge)
  assert.equal(moved.statusCode, 400)
  assert.equal(moved.json().error, 'invalid_request')
})

test('a document that is wrong is refused as invalid_client, and nothing is stored', async () => {
  const cases: Array<[string, string]> = [
    [serve((id) => ({ ...goodDocument(id), client_id: `${id}?other` })), 'its client_id is not the address'],
    [serve((id) => ({ ...goodDocument(id), redirect_uris: [] })), 'redirect_uris'],
    [serve((id) => ({ ...goodDocument(id), redirect_uris: ['http://evil.example/cb'] })), 'redirect_uris'],
    [serve((id) => ({ ...goodDocument(id), token_endpoint_auth_method: 'private_key_jwt' })), 'public clients'],
    [serve((id) => ({ ...goodDocument(id), client_secret: 'shh' })), 'client_secret'],
    [serve(() => 'not json {'), 'not JSON'],
    [serve(() => '[1, 2]'), 'not a JSON object'],
    [serve(goodDocument, { status: 500 }), 'answered 500'],
    [`${docBase}/clients/missing.json`, 'answered 404'],
    [
      serve((id) => ({ ...goodDocument(id), client_name: 'x'.repeat(CLIENT_METADATA_MAX_BYTES) })),
      `larger than ${CLIENT_METADATA_MAX_BYTES} bytes`,
    ],
    [`${docBase}/clients/a/../b.json`, '. or .. segments'],
  ]
  for (const [clientId, why] of cases) {
    const response = await authorize(harness, clientId, pkce().challenge)
    assert.equal(response.statusCode, 400, `${clientId}: ${response.body}`)
    assert.equal(response.json().error, 'invalid_client', clientId)
    assert.ok(response.json().error_description.includes(why), `${why}: ${response.json().error_description}`)
    const rows = await harness.database.orm.select().from(oauthClients).where(eq(oauthClients.clientId, clientId))
    assert.equal(rows.length, 0, `${clientId} is not kept`)
  }
  // a redirect the document does not list
  const clientId = serve(goodDocument)
  const response = await authorize(harness, clientId, pkce().challenge, 'http://127.0.0.1:33418/elsewhere')
  assert.equal(response.statusCode, 400)
  assert.equal(response.json().error, 'invalid_request')
})

test('a document that never answers is refused when the fetch’s time limit ends it', async () => {
  const path = '/clients/hangs.json'
  served.set(path, { body: '', hang: true })
  const response = await authorize(harness, `${docBase}${path}`, pkce().challenge)
  assert.equal(response.statusCode, 400)
  assert.match(response.json().error_description, /could not be fetched \(timeout\)/)
})

test('without the development setting an http client_id is no document: an unknown client', async () => {
  const clientId = serve(goodDocument)
  const response = await authorize(strict, clientId, pkce().challenge)
  assert.equal(response.statusCode, 400)
  assert.equal(response.json().error, 'invalid_client')
  assert.equal(response.json().error_description, 'Unknown client_id')
  // an https document on a loopback address is refused by the outbound guard (no request reaches it)
  const https = `https://127.0.0.1:${new URL(docBase).port}/clients/any.json`
  const guarded = await authorize(strict, https, pkce().challenge)
  assert.equal(guarded.statusCode, 400)
  assert.match(guarded.json().error_description, /could not be fetched \(blocked_target\)/)
})
