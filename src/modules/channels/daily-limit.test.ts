import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { createHarness, createTestAccount, type Harness } from '../../../test/helpers/harness.ts'
import { rows } from '../../platform/db/rows.ts'
import { claimConversation, claimConversations, DAILY_WINDOW_MS } from './daily-limit.ts'

const HOUR = 3600_000

describe("the number's daily limit, claimed for a batch", () => {
  let harness: Harness
  before(async () => {
    harness = await createHarness()
  })
  after(() => harness.close())

  /** The account's starts as [contact index, started_at ms] sorted, for comparing two accounts. */
  async function startsOf(accountId: string, contacts: string[]) {
    const found = rows<{ contact_id: string; started_at: Date | string }>(
      await harness.database.orm.execute(
        sql`SELECT contact_id, started_at FROM conversation_starts WHERE account_id = ${accountId}`,
      ),
    )
    return found
      .map((row) => [contacts.indexOf(row.contact_id), new Date(row.started_at).getTime()] as const)
      .sort((a, b) => a[0] - b[0])
  }

  test('answers and records what claiming each contact in turn does (any window, limit and batch, duplicates too)', async () => {
    const now = new Date('2026-11-30T12:00:00Z')
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        // contacts that already started a conversation, and how many hours ago (some outside the window)
        fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 30 })), { maxLength: 8 }),
        fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 12 }),
        async (limit, earlier, batch) => {
          const one = await createTestAccount(harness)
          const other = await createTestAccount(harness)
          const contacts = Array.from({ length: 10 }, () => randomUUID())
          for (const accountId of [one.accountId, other.accountId]) {
            for (const [contact, hoursAgo] of earlier) {
              await harness.database.orm.execute(sql`INSERT INTO conversation_starts (account_id, contact_id, started_at)
                VALUES (${accountId}, ${contacts[contact]}, ${new Date(now.getTime() - hoursAgo * HOUR).toISOString()}::timestamptz)
                ON CONFLICT (account_id, contact_id) DO UPDATE SET started_at = excluded.started_at`)
            }
          }
          const ids = batch.map((at) => contacts[at])
          const oneByOne = await harness.database.orm.transaction(async (tx) => {
            const claims = []
            for (const contactId of ids) {
              claims.push(await claimConversation(tx, { accountId: one.accountId, contactId, limit, now }))
            }
            return claims
          })
          const together = await harness.database.orm.transaction((tx) =>
            claimConversations(tx, { accountId: other.accountId, contactIds: ids, limit, now }),
          )
          assert.deepEqual(together, oneByOne)
          assert.deepEqual(await startsOf(other.accountId, contacts), await startsOf(one.accountId, contacts))
        },
      ),
      { numRuns: 40, seed: 4921 },
    )
  })

  test('without a limit nothing is recorded; a full window says when its oldest start leaves it', async () => {
    const account = await createTestAccount(harness)
    const now = new Date('2026-11-30T12:00:00Z')
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()]
    const unlimited = await harness.database.orm.transaction((tx) =>
      claimConversations(tx, { accountId: account.accountId, contactIds: [a, b], limit: null, now }),
    )
    assert.deepEqual(unlimited, [{ ok: true }, { ok: true }])
    assert.deepEqual(await startsOf(account.accountId, [a, b, c]), [])
    const limited = await harness.database.orm.transaction((tx) =>
      claimConversations(tx, { accountId: account.accountId, contactIds: [a, b, a, c], limit: 2, now }),
    )
    assert.deepEqual(limited, [
      { ok: true },
      { ok: true },
      { ok: true },
      { ok: false, limit: 2, resumesAt: new Date(now.getTime() + DAILY_WINDOW_MS) },
    ])
  })
})
