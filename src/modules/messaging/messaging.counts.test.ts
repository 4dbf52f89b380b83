import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, test } from 'node:test'
import { sql } from 'drizzle-orm'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { countSends } from './messaging.counts.ts'
import { templateSends } from './messaging.tables.ts'

let harness: Harness
let account: TestAccount
let other: TestAccount
const stepA = randomUUID()
const stepB = randomUUID()
const templateId = randomUUID()
const otherTemplate = randomUUID()

before(async () => {
  harness = await createHarness()
  account = await createTestAccount(harness)
  other = await createTestAccount(harness)
  const at = (iso: string) => new Date(iso)
  const send = (
    accountId: string,
    origin: 'api' | 'followup' | 'newsletter',
    originId: string | null,
    status: 'queued' | 'sent' | 'skipped' | 'failed',
    reason: string | null,
    created: string,
    template = templateId,
  ) => ({
    accountId,
    id: randomUUID(),
    contactId: randomUUID(),
    templateId: template,
    status,
    reason,
    origin,
    originId,
    createdAt: at(created),
    updatedAt: at(created),
  })
  await harness.database.orm.insert(templateSends).values([
    send(account.accountId, 'followup', stepA, 'sent', null, '2026-01-01T00:00:00Z'),
    send(account.accountId, 'followup', stepA, 'sent', null, '2026-02-01T00:00:00Z'),
    send(account.accountId, 'followup', stepA, 'skipped', 'no_consent', '2026-02-01T00:00:00Z'),
    send(account.accountId, 'followup', stepB, 'failed', 'provider_error', '2026-02-02T00:00:00Z'),
    send(account.accountId, 'newsletter', stepB, 'queued', null, '2026-02-02T00:00:00Z', otherTemplate),
    send(account.accountId, 'api', null, 'sent', null, '2026-02-03T00:00:00Z'),
    // another account's sends are never counted
    send(other.accountId, 'followup', stepA, 'sent', null, '2026-02-01T00:00:00Z'),
  ])
})
after(() => harness.close())

const sorted = <T>(list: T[]) => [...list].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))

test('counts one origin by origin id and status, only of the account', async () => {
  const counts = await countSends(
    harness.database.orm,
    { accountId: account.accountId, origin: 'followup', originIds: [stepA, stepB] },
    ['origin_id', 'status'],
  )
  assert.deepEqual(
    sorted(counts),
    sorted([
      { origin_id: stepA, status: 'sent', n: 2 },
      { origin_id: stepA, status: 'skipped', n: 1 },
      { origin_id: stepB, status: 'failed', n: 1 },
    ]),
  )
})

test('narrows by template and creation time, groups by origin and reason', async () => {
  const byOrigin = await countSends(
    harness.database.orm,
    { accountId: account.accountId, templateId, since: new Date('2026-02-01T00:00:00Z') },
    ['origin', 'status'],
  )
  assert.deepEqual(
    sorted(byOrigin),
    sorted([
      { origin: 'api', status: 'sent', n: 1 },
      { origin: 'followup', status: 'failed', n: 1 },
      { origin: 'followup', status: 'sent', n: 1 },
      { origin: 'followup', status: 'skipped', n: 1 },
    ]),
  )
  const reasons = await countSends(harness.database.orm, { accountId: account.accountId, origin: 'followup' }, [
    'reason',
  ])
  assert.deepEqual(
    sorted(reasons),
    sorted([
      { reason: null, n: 2 },
      { reason: 'no_consent', n: 1 },
      { reason: 'provider_error', n: 1 },
    ]),
  )
})

test('takes the origin ids from a subquery of the caller, and counts all without grouping', async () => {
  const counts = await countSends(
    harness.database.orm,
    { accountId: account.accountId, originIds: sql`SELECT ${stepB}::uuid` },
    ['origin', 'status'],
  )
  assert.deepEqual(
    sorted(counts),
    sorted([
      { origin: 'followup', status: 'failed', n: 1 },
      { origin: 'newsletter', status: 'queued', n: 1 },
    ]),
  )
  const [total] = await countSends(harness.database.orm, { accountId: account.accountId }, [])
  assert.deepEqual(total, { n: 6 })
  const none = await countSends(harness.database.orm, { accountId: account.accountId, originIds: [] }, ['status'])
  assert.deepEqual(none, [])
})
