import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import { createTestAccount, type Harness } from '../../test/helpers/harness.ts'
import { harnessPerFile } from '../../test/helpers/test-file.ts'
import { applyRetention } from '../platform/db/maintenance.ts'
import { declaredRetention } from '../retention.ts'
import { approveAuthorization, checkAuthorizationRequest, oauthUrls } from './oauth.ts'

// Dynamic client registration needs no sign-in: it is bounded per address, in size and per field, and what nobody
// used is removed (issue 51, finding 10).

let harness: Harness

harnessPerFile((created) => {
  harness = created
})

/** what one address may register in an hour (REGISTRATION.perAddress in oauth.ts) */
const PER_ADDRESS = 25
const REDIRECT = 'http://127.0.0.1:33418/callback'

const register = (payload: unknown, remoteAddress = '127.0.0.1') =>
  harness.app.inject({ method: 'POST', url: '/oauth/register', payload: payload as object, remoteAddress })

describe('OAuth dynamic client registration', () => {
  test('the 26th registration from one address within the hour is 429; another address still registers', async () => {
    const address = '198.51.100.7'
    for (let i = 0; i < PER_ADDRESS; i++) {
      const ok = await register({ client_name: `Assistant ${i}`, redirect_uris: [REDIRECT] }, address)
      assert.equal(ok.statusCode, 201, ok.body)
    }
    const refused = await register({ client_name: 'One too many', redirect_uris: [REDIRECT] }, address)
    assert.equal(refused.statusCode, 429, refused.body)
    assert.equal(refused.json().error, 'temporarily_unavailable')
    assert.ok(Number(refused.headers['retry-after']) > 0)
    const other = await register({ client_name: 'Elsewhere', redirect_uris: [REDIRECT] }, '198.51.100.8')
    assert.equal(other.statusCode, 201, other.body)
  })

  test('a 19 KB registration is refused (413 invalid_client_metadata) and stores nothing', async () => {
    const before = await countClients()
    const big = await register(
      {
        client_name: 'Big',
        redirect_uris: [REDIRECT],
        logo_uri: `https://example.org/${'x'.repeat(19 * 1024)}`,
      },
      '198.51.100.9',
    )
    assert.equal(big.statusCode, 413, big.body)
    assert.equal(big.json().error, 'invalid_client_metadata')
    assert.equal(await countClients(), before)
  })

  test('each field is bounded, in RFC 7591 error codes', async () => {
    const address = '198.51.100.10'
    const tooMany = await register({ redirect_uris: Array.from({ length: 11 }, (_, i) => `${REDIRECT}${i}`) }, address)
    assert.equal(tooMany.statusCode, 400, tooMany.body)
    assert.equal(tooMany.json().error, 'invalid_redirect_uri')
    const tooLong = await register({ redirect_uris: [`https://example.org/${'a'.repeat(600)}`] }, address)
    assert.equal(tooLong.json().error, 'invalid_redirect_uri', tooLong.body)
    const longName = await register({ client_name: 'n'.repeat(201), redirect_uris: [REDIRECT] }, address)
    assert.equal(longName.statusCode, 400, longName.body)
    assert.equal(longName.json().error, 'invalid_client_metadata')
    const badName = await register({ client_name: { a: 1 }, redirect_uris: [REDIRECT] }, address)
    assert.equal(badName.json().error, 'invalid_client_metadata', badName.body)
    const notObject = await register([REDIRECT], address)
    assert.equal(notObject.statusCode, 400, notObject.body)
    assert.equal(notObject.json().error, 'invalid_client_metadata')
    const notJson = await harness.app.inject({
      method: 'POST',
      url: '/oauth/register',
      payload: '{"redirect_uris": [',
      headers: { 'content-type': 'application/json' },
      remoteAddress: address,
    })
    assert.equal(notJson.statusCode, 400, notJson.body)
    assert.equal(notJson.json().error, 'invalid_client_metadata')
  })

  test('the retention run removes a client unused for 7 days and keeps a used one and a new one', async () => {
    const address = '198.51.100.11'
    const ids: string[] = []
    for (const name of ['Unused', 'Used', 'Fresh']) {
      const response = await register({ client_name: name, redirect_uris: [REDIRECT] }, address)
      assert.equal(response.statusCode, 201, response.body)
      ids.push(response.json().client_id)
    }
    const [unused, used, fresh] = ids
    const account = await createTestAccount(harness)
    const urls = oauthUrls(harness.config.publicUrl)
    const challenge = createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url')
    const request = await checkAuthorizationRequest(harness.database.orm, urls, {
      client_id: used,
      redirect_uri: REDIRECT,
      response_type: 'code',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      resource: urls.resource,
    })
    await approveAuthorization(harness.database.orm, harness.clock, urls, { ...request, accountId: account.accountId })
    const old = new Date(harness.clock.now().getTime() - 8 * 24 * 3600_000)
    await harness.database.query('UPDATE oauth_clients SET created_at = $1 WHERE client_id = ANY($2)', [
      old.toISOString(),
      [unused, used],
    ])
    const deleted = await harness.database.withSession((session) =>
      applyRetention(session, harness.clock, harness.config, declaredRetention),
    )
    assert.ok((deleted.oauth_clients ?? 0) >= 1, JSON.stringify(deleted))
    const left = await harness.database.query<{ client_id: string }>(
      'SELECT client_id FROM oauth_clients WHERE client_id = ANY($1)',
      [ids],
    )
    assert.deepEqual(left.map((r) => r.client_id).sort(), [used, fresh].sort())
  })
})

async function countClients(): Promise<number> {
  const [row] = await harness.database.query<{ n: number }>('SELECT count(*)::int AS n FROM oauth_clients')
  return Number(row.n)
}
