import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createTestAccount } from '../helpers/harness.ts'
import {
  countEach,
  insertConfirmedContacts,
  killScene,
  needsSharedDatabase,
  newsletterStatus,
  scheduleNewsletter,
} from '../helpers/kill.ts'

const RECIPIENTS = 900
const PACE = 40
const REFUSE_ABOVE = 30

describe(
  'a worker process sending a newsletter through a sandbox that refuses above 30 a second',
  needsSharedDatabase,
  () => {
    const scene = killScene({ leaseSeconds: 5, concurrency: 16 })

    test('the pace settles at or below 30, every send goes out exactly once, and it recovers once the refusal stops', async () => {
      const { harness } = scene
      const account = await createTestAccount(harness, { plan: { messagesPerMonth: 100_000 } })
      const connect = (sandboxRefuseAbove: number | null) =>
        harness.services.channels.connect(account.accountId, {
          channel: 'chat',
          provider: 'sandbox',
          messagesPerSecond: PACE,
          sandboxRefuseAbove,
        })
      await connect(REFUSE_ABOVE)
      await insertConfirmedContacts(harness, account.accountId, RECIPIENTS, { phonePrefix: '+49172' })
      const pace = async () => {
        const [row] = await harness.database.query<{
          per_second: number
          full_per_second: number | null
          reduced_reason: string | null
        }>(
          "SELECT per_second, full_per_second, reduced_reason FROM job_paces WHERE account_id = $1 AND lane = 'chat'",
          [account.accountId],
        )
        return row
      }
      const { id } = await scheduleNewsletter(account, 500)
      await scene.worker()

      // refused above 30 a second, the number's pace comes down from 40 for the claims of every process
      await scene.waitWhile(async () => (await pace()).per_second > REFUSE_ABOVE, {
        withinMs: 30_000,
        everyMs: 50,
        message: async () => `the pace stayed above ${REFUSE_ABOVE}: ${JSON.stringify(await pace())}`,
      })
      const lowered = await pace()
      assert.equal(lowered.full_per_second, PACE)
      assert.equal(lowered.reduced_reason, 'throughput_refused')

      // the refusal stops: step by step, while the newsletter goes on, the pace returns to 40
      await connect(null)
      await scene.waitWhile(async () => (await pace()).per_second < PACE, {
        withinMs: 60_000,
        everyMs: 100,
        message: async () => `the pace did not recover: ${JSON.stringify(await pace())}`,
      })
      assert.deepEqual(await pace(), { per_second: PACE, full_per_second: null, reduced_reason: null })

      await scene.newsletterSent(account, id)
      const status = await newsletterStatus(account, id)
      assert.equal(status.recipients, RECIPIENTS)
      const sends = await harness.database.query<{ id: string; status: string; refused: boolean }>(
        "SELECT id, status, error_code = '130429' AS refused FROM template_sends WHERE account_id = $1",
        [account.accountId],
      )
      assert.equal(sends.length, RECIPIENTS)
      assert.deepEqual(
        sends.filter((s) => !['sent', 'delivered', 'read'].includes(s.status)),
        [],
        'no send lost',
      )
      assert.ok(
        sends.some((s) => s.refused),
        'some were refused on the way',
      )
      const outbox = await harness.database.query<{ send_id: string }>(
        "SELECT payload->>'send_id' AS send_id FROM sandbox_outbox WHERE account_id = $1 AND channel = 'chat'",
        [account.accountId],
      )
      const { counts, twice } = countEach(outbox.map((row) => row.send_id))
      assert.deepEqual(twice, [], 'none sent twice')
      assert.deepEqual([...counts.keys()].sort(), sends.map((s) => s.id).sort(), 'each send in the outbox once')
    })
  },
)
