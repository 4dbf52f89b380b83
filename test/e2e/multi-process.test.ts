import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createAccount, createApiKey } from '../../src/platform/auth/accounts.service.ts'
import { SCOPES } from '../../src/platform/auth/scopes.ts'
import { type Database, openDatabase } from '../../src/platform/db/client.ts'
import { migrate } from '../../src/platform/db/migrate.ts'
import { childEnv, freePort, listeningAt, runCli, type ServerProcess, startProcess } from '../helpers/process.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL
const redisUrl = process.env.HEROLD_TEST_REDIS_URL
// Every process of one deployment shares the key that seals secrets at rest.
const secretKey = randomBytes(32).toString('base64')
const skip = !(databaseUrl && redisUrl) && 'needs HEROLD_TEST_DATABASE_URL and HEROLD_TEST_REDIS_URL'

describe('two API processes on one PostgreSQL', { skip }, () => {
  let database: Database
  const servers: ServerProcess[] = []

  before(async () => {
    database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: 2 })
    await migrate(database)
    // Both start at once: migrations take turns under the advisory lock.
    const started = await Promise.all(
      [0, 1].map(async () =>
        startProcess(
          process.execPath,
          ['src/cli/main.ts', 'serve', '--role', 'api'],
          childEnv({
            DATABASE_URL: databaseUrl,
            REDIS_URL: redisUrl,
            HEROLD_SECRET_KEY: secretKey,
            PORT: String(await freePort()),
          }),
          listeningAt,
        ),
      ),
    )
    servers.push(...started)
  })

  after(async () => {
    await Promise.all(servers.map((s) => s.stop()))
    await database?.close()
  })

  test('the rate limit of 120 per minute per key holds across both processes', async () => {
    const account = await createAccount(database.orm, { name: 'Two processes' })
    const key = await createApiKey(database.orm, { accountId: account.id, name: 'k', scopes: [...SCOPES] })
    const headers = { authorization: `Bearer ${key.key}` }
    for (let i = 0; i < 120; i++) {
      const response = await fetch(`${servers[i % 2].url}/v1/me`, { headers })
      assert.equal(response.status, 200, `request ${i + 1}`)
      await response.arrayBuffer()
    }
    for (const server of servers) {
      const limited = await fetch(`${server.url}/v1/me`, { headers })
      assert.equal(limited.status, 429)
      assert.ok(Number(limited.headers.get('retry-after')) >= 1)
      assert.equal(((await limited.json()) as { error: { code: string } }).error.code, 'rate_limited')
    }
  })

  test('a key revoked with the CLI, an account blocked with it: both processes refuse within a second', async () => {
    const account = await createAccount(database.orm, { name: 'Revoked across processes' })
    const key = await createApiKey(database.orm, { accountId: account.id, name: 'k', scopes: [...SCOPES] })
    const other = await createApiKey(database.orm, { accountId: account.id, name: 'other', scopes: [...SCOPES] })
    const status = async (server: ServerProcess, secret: string) => {
      const response = await fetch(`${server.url}/v1/me`, { headers: { authorization: `Bearer ${secret}` } })
      await response.arrayBuffer()
      return response.status
    }
    // both processes have the keys in their caches
    for (const server of servers) {
      assert.equal(await status(server, key.key), 200)
      assert.equal(await status(server, other.key), 200)
    }
    const cli = childEnv({ DATABASE_URL: databaseUrl, HEROLD_SECRET_KEY: secretKey })
    const revoked = await runCli(['keys', 'revoke', key.id], cli)
    assert.equal(revoked.code, 0, revoked.stderr)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    for (const server of servers) assert.equal(await status(server, key.key), 401)
    for (const server of servers) assert.equal(await status(server, other.key), 200)
    const blocked = await runCli(['accounts', 'block', account.id], cli)
    assert.equal(blocked.code, 0, blocked.stderr)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    for (const server of servers) assert.equal(await status(server, other.key), 403)
  })

  test('idempotency_in_progress holds across processes: the second process answers 409 while the first still runs', async () => {
    const account = await createAccount(database.orm, { name: 'Idempotency across processes' })
    const key = await createApiKey(database.orm, { accountId: account.id, name: 'k', scopes: [...SCOPES] })
    const post = (server: ServerProcess) =>
      fetch(`${server.url}/v1/contacts`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key.key}`,
          'content-type': 'application/json',
          'idempotency-key': 'create-ada',
        },
        body: JSON.stringify({ name: 'Ada', email: 'ada@example.com' }),
      })
    // Hold the account's contact counter row in an open transaction: the first create waits on it.
    await database.withSession(async (session) => {
      await session.query('BEGIN')
      await session.query('INSERT INTO contact_counts (account_id, count) VALUES ($1, 0)', [account.id])
      const first = post(servers[0])
      await waitForWaitingQuery(database)
      const second = await post(servers[1])
      assert.equal(second.status, 409)
      assert.equal(second.headers.get('retry-after'), '1')
      const body = (await second.json()) as { error: { code: string } }
      assert.equal(body.error.code, 'idempotency_in_progress')
      await session.query('COMMIT')
      const created = await first
      assert.equal(created.status, 201)
      const original = await created.text()
      const replay = await post(servers[1])
      assert.equal(replay.status, 201)
      assert.equal(replay.headers.get('idempotent-replayed'), 'true')
      assert.equal(await replay.text(), original)
    })
    const rows = await database.query('SELECT id FROM contacts WHERE account_id = $1', [account.id])
    assert.equal(rows.length, 1)
  })
})

/** Waits until some backend blocks on a lock (the first request reached its insert). */
async function waitForWaitingQuery(database: Database): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const rows = await database.query(
      "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
    )
    if (rows.length > 0) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error('the first request never reached the locked row')
}
