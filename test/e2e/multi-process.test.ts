import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { createAccount, createApiKey } from '../../src/platform/auth/accounts.service.ts'
import { SCOPES } from '../../src/platform/auth/scopes.ts'
import { type Database, openDatabase } from '../../src/platform/db/client.ts'
import { migrate } from '../../src/platform/db/migrate.ts'
import { childEnv, freePort, listeningAt, type ServerProcess, startProcess } from '../helpers/process.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL
const redisUrl = process.env.HEROLD_TEST_REDIS_URL
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
          childEnv({ DATABASE_URL: databaseUrl, REDIS_URL: redisUrl, PORT: String(await freePort()) }),
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
})
