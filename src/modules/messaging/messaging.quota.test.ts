import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { createTestAccount, type Harness } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { releaseUnits, reserveUnit, reserveUnitsAndMarkSending, usedIn } from './messaging.quota.ts'
import { insertSends, lockSends } from './messaging.repository.ts'

let harness: Harness

harnessPerFile((created) => {
  harness = created
})

const MONTH = '2026-11'

/** Queued send records of a fresh account (the quota reads only the account and the records). */
async function queuedSends(accountId: string, count: number): Promise<string[]> {
  const now = harness.clock.now()
  const rows = Array.from({ length: count }, () => ({
    accountId,
    id: randomUUID(),
    contactId: randomUUID(),
    templateId: randomUUID(),
    status: 'queued' as const,
    createdAt: now,
    updatedAt: now,
  }))
  await insertSends(harness.database.orm, rows)
  return rows.map((r) => r.id)
}

/** One worker's batch: its sends locked, then their units reserved and the granted ones marked, in one commit. */
function batch(accountId: string, ids: string[]): Promise<Set<string>> {
  return harness.database.orm.transaction(async (tx) => {
    await lockSends(tx, accountId, ids)
    return reserveUnitsAndMarkSending(
      tx,
      accountId,
      ids.map((id) => ({ id, token: randomUUID() })),
      { month: MONTH, at: harness.clock.now() },
    )
  })
}

describe('the monthly quota, reserved for a batch of sends in one statement', () => {
  test('concurrent batches and single sends never take more units than the plan has; every unit is one send', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 20 }),
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 0, max: 4 }),
        async (limit, usedBefore, batchSizes, singles, released) => {
          const account = await createTestAccount(harness, { plan: { messagesPerMonth: limit } })
          const { accountId } = account
          // units already taken this month (earlier sends), some of them given back
          const taken = Math.min(usedBefore, limit)
          for (let i = 0; i < taken; i++) assert.equal(await reserveUnit(harness.database.orm, accountId, MONTH), true)
          await releaseUnits(harness.database.orm, accountId, MONTH, Math.min(released, taken))
          const start = await usedIn(harness.database.orm, accountId, MONTH)
          const ids = await queuedSends(
            accountId,
            batchSizes.reduce((a, b) => a + b, 0),
          )
          const batches: string[][] = []
          let at = 0
          for (const size of batchSizes) {
            batches.push(ids.slice(at, at + size))
            at += size
          }
          const [marked, granted] = await Promise.all([
            Promise.all(batches.map((b) => batch(accountId, b))),
            Promise.all(Array.from({ length: singles }, () => reserveUnit(harness.database.orm, accountId, MONTH))),
          ])
          const markedIds = marked.flatMap((m) => [...m])
          const singlesGranted = granted.filter(Boolean).length
          const used = await usedIn(harness.database.orm, accountId, MONTH)
          const wanted = ids.length + singles
          assert.ok(used <= limit, `used ${used} of ${limit}`)
          assert.equal(used, Math.min(limit, start + wanted), 'every free unit is taken while some send wants one')
          assert.equal(used - start, markedIds.length + singlesGranted, 'every unit taken belongs to one send')
          assert.equal(new Set(markedIds).size, markedIds.length)
          for (const [i, b] of batches.entries()) {
            // a batch gets its units for its first sends, in order
            const got = b.filter((id) => marked[i].has(id))
            assert.deepEqual(got, b.slice(0, got.length))
          }
          const rows = await harness.database.query<{ id: string; status: string; quota_month: string | null }>(
            'SELECT id, status, quota_month FROM template_sends WHERE account_id = $1',
            [accountId],
          )
          const sending = rows.filter((r) => r.status === 'sending')
          assert.deepEqual(sending.map((r) => r.id).sort(), [...markedIds].sort())
          for (const row of sending) assert.equal(row.quota_month, MONTH)
          assert.equal(rows.filter((r) => r.status === 'queued').length, ids.length - markedIds.length)
        },
      ),
      { numRuns: 25 },
    )
  })
})
