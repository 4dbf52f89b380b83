import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { type Database, openDatabase } from '../db/client.ts'
import { CREDENTIALS_CHANNEL, CredentialCache } from './credential-cache.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL || undefined

describe('CredentialCache', () => {
  let database: Database
  before(async () => {
    database = await openDatabase({ databaseUrl, dataDir: 'memory://', poolSize: 2 })
  })
  after(() => database.close())

  test('serves what it loaded until a notification clears it; a load overtaken by a change is not stored', async () => {
    const cache = new CredentialCache<string>()
    await cache.start(database)
    let loads = 0
    const load = async () => `value ${++loads}`
    assert.equal(await cache.get('k', load), 'value 1')
    assert.equal(await cache.get('k', load), 'value 1')
    await database.query(`SELECT pg_notify('${CREDENTIALS_CHANNEL}', 'accounts')`)
    await waitFor(async () => (await cache.get('k', load)) !== 'value 1')
    const overtaken = cache.get('k2', async () => {
      cache.clear()
      return 'read before the change'
    })
    assert.equal(await overtaken, 'read before the change')
    assert.equal(await cache.get('k2', async () => 'read after'), 'read after')
    assert.equal(await cache.get('missing', async () => undefined), undefined)
    await cache.stop()
  })

  test('keeps at most maxEntries, dropping the oldest', async () => {
    const cache = new CredentialCache<number>({ maxEntries: 2 })
    await cache.start(database)
    let loads = 0
    for (const key of ['a', 'b', 'c']) await cache.get(key, async () => ++loads)
    assert.equal(await cache.get('c', async () => ++loads), 3)
    assert.equal(await cache.get('a', async () => ++loads), 4, 'a was dropped')
    await cache.stop()
  })

  test('a lost notification connection falls back to a short TTL counted from the loss, and clears everything when it is back', {
    skip: databaseUrl ? false : 'the embedded database has no connection to lose',
  }, async () => {
    let now = 0
    const cache = new CredentialCache<string>({ fallbackTtlMs: 500, now: () => now })
    await cache.start(database)
    let loads = 0
    const load = async () => `value ${++loads}`
    assert.equal(await cache.get('k', load), 'value 1')
    now = 100
    await database.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND query = 'LISTEN ${CREDENTIALS_CHANNEL}' AND pid <> pg_backend_pid()`,
    )
    await waitFor(async () => !cache.listening)
    // nothing can be heard now: what was read before the loss serves the fallback TTL from the loss, then is read again
    assert.equal(await cache.get('k', load), 'value 1')
    now = 599
    assert.equal(await cache.get('k', load), 'value 1')
    now = 600
    assert.equal(await cache.get('k', load), 'value 2')
    now = 1099
    assert.equal(await cache.get('k', load), 'value 2')
    now = 1100
    assert.equal(await cache.get('k', load), 'value 3')
    await waitFor(async () => cache.listening)
    now += 10_000
    assert.equal(await cache.get('k', load), 'value 4')
    now += 10_000
    assert.equal(await cache.get('k', load), 'value 4', 'listening again: entries serve their full age')
    await cache.stop()
  })
})

async function waitFor(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  assert.fail('the condition never held')
}
