import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { recordOptinChange } from '../../src/modules/contacts/index.ts'
import { createOAuthAccessToken } from '../../src/platform/auth/accounts.service.ts'
import { churnTables, databaseLooksAfterItself, runIfDue } from '../../src/platform/db/maintenance.ts'
import { declaredRetention } from '../../src/retention.ts'
import { createHarness, createTestAccount, type Harness } from '../helpers/harness.ts'

let harness: Harness
const DAY = 24 * 3600_000

before(async () => {
  // workers: a database of its own on PostgreSQL, so retention on the moved clock touches no other test's rows
  harness = await createHarness({ workers: true, config: { retentionDays: 30, sandboxRetentionDays: 7 } })
  await harness.jobs!.stop()
})
after(() => harness.close())

const count = async (sql: string, params: unknown[]) =>
  Number((await harness.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${sql}`, params))[0].n)
const deps = () => ({
  database: harness.database,
  clock: harness.clock,
  config: harness.config,
  retention: declaredRetention,
})

describe('maintenance: retention and upkeep', () => {
  test('finished records go after their periods on the test clock; consent records and recent rows stay', async () => {
    const account = await createTestAccount(harness)
    const id = account.accountId
    const contact = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name: 'Ria', phone: '+4915150001111' },
      headers: { 'idempotency-key': 'retention-1' },
    })
    assert.equal(contact.statusCode, 201)
    const contactId = contact.json().contact.id
    await harness.database.orm.transaction((tx) =>
      recordOptinChange(tx, harness.clock, {
        accountId: id,
        contactId,
        channel: 'chat',
        to: 'confirmed',
        source: 'test',
      }),
    )
    const now = harness.clock.now()
    const old = new Date(now.getTime() - 31 * DAY).toISOString()
    await harness.database.query(
      `INSERT INTO jobs (account_id, id, queue, payload, state, run_at, created_at) VALUES
        ($1, $2, 'x.dead', '{}', 'dead', $3, $3), ($1, $4, 'x.dead', '{}', 'dead', $5, $5), ($1, $6, 'x.live', '{}', 'queued', $3, $3)`,
      [id, randomUUID(), old, randomUUID(), now.toISOString(), randomUUID()],
    )
    await harness.database.query(
      `INSERT INTO sandbox_outbox (account_id, id, channel, recipient, payload, created_at) VALUES
        ($1, $2, 'chat', '+49', '{}', $3), ($1, $4, 'chat', '+49', '{}', $5)`,
      [id, randomUUID(), new Date(now.getTime() - 8 * DAY).toISOString(), randomUUID(), now.toISOString()],
    )
    await createOAuthAccessToken(harness.database.orm, {
      accountId: id,
      scopes: ['contacts:read'],
      expiresAt: new Date(now.getTime() + 3600_000),
    })

    // nothing is old enough yet: only the run's own bookkeeping
    const first = await runIfDue(deps(), { vacuum: true, everything: true, force: true })
    assert.ok(first)
    assert.equal(first.deleted.jobs, 1, 'the dead job older than 30 days')
    assert.equal(first.deleted.sandbox_outbox, 1, 'the outbox row older than 7 days')
    assert.equal(first.deleted.idempotency_keys, 0)
    assert.equal(first.deleted.oauth_access_tokens, 0)
    assert.deepEqual(first.vacuumed, churnTables(declaredRetention))

    harness.clock.advance(32 * DAY)
    const later = await runIfDue(deps(), { vacuum: false, force: true })
    assert.ok(later)
    assert.equal(later.deleted.jobs, 1, 'the other dead job, now old')
    assert.equal(later.deleted.idempotency_keys, 1, 'the key past its 24-hour window')
    assert.equal(later.deleted.oauth_access_tokens, 1)
    assert.equal(later.deleted.sandbox_outbox, 1)
    assert.deepEqual(later.vacuumed, [])
    assert.equal(await count("jobs WHERE account_id = $1 AND queue = 'x.live'", [id]), 1, 'work still owed stays')
    assert.equal(await count('consent_records WHERE account_id = $1', [id]), 1, 'consent records are never deleted')
    assert.equal(await count('contacts WHERE account_id = $1', [id]), 1)
  })

  test('one run per period across processes: a second call before it is due does nothing', async () => {
    await runIfDue(deps(), { vacuum: false, force: true })
    assert.equal(await runIfDue(deps(), { vacuum: false }), null)
    harness.clock.advance(11 * 60_000)
    assert.ok(await runIfDue(deps(), { vacuum: false }))
  })

  test('the embedded database never looks after itself; a server does when autovacuum is on', async () => {
    const own = await databaseLooksAfterItself(harness.database)
    if (harness.database.kind === 'pglite') assert.equal(own, false)
    else {
      const [row] = await harness.database.query<{ autovacuum: string }>('SHOW autovacuum')
      assert.equal(own, row.autovacuum === 'on')
    }
  })
})
