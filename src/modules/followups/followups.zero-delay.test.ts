import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { drainJobs, sandboxAccount as fixtureAccount, phoneSequence, setOptin } from '../../../test/helpers/fixtures.ts'
import { createSequence, getFollowup } from '../../../test/helpers/followups.ts'
import type { Harness, TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import type { SequenceInput } from './index.ts'

// A time equal to now is not the past: a zero-delay step goes right after its enrollment, at activation and after an
// edit too, and no step due at or after its enrollment is dropped without a send record.

let harness: Harness

// jobs run only inside drain(), so a test sees each state between steps
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
let counter = 0
const nextPhone = phoneSequence('+4916')

const drain = () => drainJobs(harness)

const sandboxAccount = () => fixtureAccount(harness)

const confirm = (account: TestAccount, contactId: string) => setOptin(harness, account.accountId, contactId)

async function contact(account: TestAccount): Promise<string> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/contacts',
    payload: { name: 'Erika Mustermann', phone: nextPhone() },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().contact.id as string
}

const TEXTS = [
  'Hallo {{name}}, schön, dass du da bist. Hier sind unsere Tipps.',
  'Hallo {{name}}, kennst du schon unsere Angebote der Woche?',
  'Hallo {{name}}, wie gefällt dir unser Laden bisher?',
]

/** A sequence as the CLI's file gives it: one step per delay in hours, the opt-in trigger. */
function sequenceOf(delays: number[]): SequenceInput {
  return {
    name: `Willkommen ${++counter}`,
    steps: delays.map((amount, i) => ({ text: TEXTS[i], delay: { amount, unit: 'hours' as const } })),
  }
}

const create = (account: TestAccount, input: SequenceInput) => createSequence(harness, account, input)

const get = getFollowup

async function activate(account: TestAccount, id: string): Promise<Json> {
  const response = await account.request({ method: 'PATCH', url: `/v1/followups/${id}`, payload: { status: 'active' } })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().followup
}

/** A sandbox account with an active sequence of these step delays (hours), and a contact enrolled by opting in. */
async function enrolledContact(delays: number[]) {
  const account = await sandboxAccount()
  const sequence = await create(account, sequenceOf(delays))
  await activate(account, sequence.id)
  const id = await contact(account)
  await confirm(account, id)
  return { account, sequence, id }
}

type SendRow = { position: number; status: string; reason: string | null }

/** The follow-up send records of a contact by step position (delivered and read count as sent). */
async function sendsOf(account: TestAccount, contactId: string): Promise<SendRow[]> {
  const result = await harness.database.orm.execute(sql`SELECT st.position, s.status, s.reason FROM template_sends s
    JOIN followup_steps st ON st.account_id = s.account_id AND st.id = s.origin_id
    WHERE s.account_id = ${account.accountId} AND s.contact_id = ${contactId} AND s.origin = 'followup'
    ORDER BY st.position`)
  return (result as unknown as { rows: SendRow[] }).rows.map((r) => ({
    position: Number(r.position),
    status: ['delivered', 'read'].includes(r.status) ? 'sent' : r.status,
    reason: r.reason,
  }))
}

/** Moves the clock to `at`, running the due jobs at least every 12 hours on the way (no step gets a day late). */
async function runUntil(at: number) {
  while (harness.clock.now().getTime() < at) {
    harness.clock.advance(Math.min(12 * HOUR, at - harness.clock.now().getTime()))
    await drain()
  }
}

const sent = (...positions: number[]) => positions.map((position) => ({ position, status: 'sent', reason: null }))

describe('follow-ups: a zero-delay step', () => {
  test('a first step with delay 0 goes right after the opt-in enrolls the contact; the next one at its time', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account, sequenceOf([0, 24]))
    assert.deepEqual(
      sequence.steps.map((s: Json) => s.delay),
      [
        { amount: 0, unit: 'hours' },
        { amount: 24, unit: 'hours' },
      ],
    )
    await activate(account, sequence.id)
    const id = await contact(account)
    await confirm(account, id)
    const enrolled = await get(account, sequence.id)
    assert.deepEqual(enrolled.enrollments, { active: 1, completed: 0, stopped: 0 })
    assert.equal(enrolled.steps[0].counts.scheduled, 1, 'step 1 is the next step, not step 2')
    await drain() // the clock has not moved
    assert.deepEqual(await sendsOf(account, id), sent(1))
    assert.equal((await get(account, sequence.id)).steps[0].counts.sent, 1)
    await runUntil(harness.clock.now().getTime() + DAY)
    assert.deepEqual(await sendsOf(account, id), sent(1, 2))
  })

  test('a later step with delay 0 goes right after the step before it', async () => {
    const { account, sequence, id } = await enrolledContact([2, 0])
    harness.clock.advance(2 * HOUR)
    await drain()
    assert.deepEqual(await sendsOf(account, id), sent(1, 2))
    assert.deepEqual((await get(account, sequence.id)).enrollments, { active: 0, completed: 1, stopped: 0 })
  })

  test('activation: a contact whose step time is exactly the activation instant gets that step', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account, sequenceOf([0, 3]))
    const earlier = await contact(account)
    await confirm(account, earlier) // 3 hours before the activation: step 2 is due exactly at it
    harness.clock.advance(3 * HOUR)
    const now = await contact(account)
    await confirm(account, now) // at the activation instant: step 1 is due now
    const active = await activate(account, sequence.id)
    assert.deepEqual(active.enrollments, { active: 2, completed: 0, stopped: 0 })
    assert.equal(active.steps[0].counts.scheduled, 1)
    assert.equal(active.steps[1].counts.scheduled, 1)
    await drain()
    assert.deepEqual(await sendsOf(account, now), sent(1))
    assert.deepEqual(await sendsOf(account, earlier), sent(2))
  })

  test('reactivation: a paused enrollment whose step time is exactly the reactivation instant goes on', async () => {
    const { account, sequence, id } = await enrolledContact([2])
    const paused = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}`,
      payload: { status: 'paused' },
    })
    assert.equal(paused.statusCode, 200, paused.body)
    harness.clock.advance(2 * HOUR)
    const resumed = await activate(account, sequence.id)
    assert.deepEqual(resumed.enrollments, { active: 1, completed: 0, stopped: 0 })
    await drain()
    assert.deepEqual(await sendsOf(account, id), sent(1))
  })

  test('a delay edited to 0 makes a waiting step go now', async () => {
    const { account, sequence, id } = await enrolledContact([5])
    await drain()
    assert.deepEqual(await sendsOf(account, id), [])
    const response = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}/steps/${sequence.steps[0].id}`,
      payload: { delay: { amount: 0, unit: 'hours' } },
    })
    assert.equal(response.statusCode, 200, response.body)
    await drain()
    assert.deepEqual(await sendsOf(account, id), sent(1))
  })

  test('0 days with a send time that is the enrollment instant goes then, not the next day', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account, {
      name: 'Morgens',
      steps: [{ text: TEXTS[0], delay: { amount: 0, unit: 'days' }, send_time: '09:30' }],
    })
    await activate(account, sequence.id)
    // the next 09:30 in Berlin (the account's timezone), to the millisecond
    const start = harness.clock.now().getTime()
    let at = Date.UTC(2030, 0, 1, 8, 30)
    while (at < start) at += DAY
    harness.clock.set(new Date(at))
    const id = await contact(account)
    await confirm(account, id)
    await drain()
    assert.deepEqual(await sendsOf(account, id), sent(1))
  })
})

describe('follow-ups: no step due at or after its enrollment is silently dropped', () => {
  test('property: over delays 0–48 h and enrollment times, each such step has exactly one send record (sent, or skipped with a reason)', async () => {
    const hours = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 48 }))
    await fc.assert(
      fc.asyncProperty(
        fc.array(hours, { minLength: 1, maxLength: 3 }),
        // opt-ins before the activation, in whole hours before it (often exactly on a step time), and after it
        fc.array(fc.integer({ min: 0, max: 100 }), { maxLength: 2 }),
        fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 72 * 60 })), { minLength: 1, maxLength: 3 }),
        async (delays, before, afterMinutes) => {
          const account = await sandboxAccount()
          const sequence = await create(account, sequenceOf(delays))
          const activation = harness.clock.now().getTime() + 100 * HOUR
          const cumulative = delays.map((_, i) => delays.slice(0, i + 1).reduce((a, b) => a + b, 0) * HOUR)
          const expected = new Map<string, number[]>()
          // before the activation: only the steps whose time is the activation or later (the spec's future times)
          for (const hoursBefore of [...before].sort((a, b) => b - a)) {
            harness.clock.set(new Date(activation - hoursBefore * HOUR))
            const id = await contact(account)
            await confirm(account, id)
            const base = harness.clock.now().getTime()
            expected.set(
              id,
              cumulative.flatMap((due, i) => (base + due >= activation ? [i + 1] : [])),
            )
          }
          harness.clock.set(new Date(activation))
          await activate(account, sequence.id)
          await drain()
          // enrolled by the trigger while active: every step
          for (const minutes of [...afterMinutes].sort((a, b) => a - b)) {
            await runUntil(activation + minutes * MINUTE)
            const id = await contact(account)
            await confirm(account, id)
            await drain()
            expected.set(
              id,
              delays.map((_, i) => i + 1),
            )
          }
          await runUntil(harness.clock.now().getTime() + cumulative[cumulative.length - 1] + MINUTE)
          const perStep = delays.map(() => 0)
          for (const [id, positions] of expected) {
            const records = await sendsOf(account, id)
            assert.deepEqual(
              records.map((r) => r.position),
              positions,
              `contact ${id}: delays ${delays}, records ${JSON.stringify(records)}`,
            )
            for (const r of records) {
              assert.ok(r.status === 'sent' || (r.status === 'skipped' && r.reason), JSON.stringify(r))
              perStep[r.position - 1] += 1
            }
          }
          const counts = (await get(account, sequence.id)).steps.map((s: Json) => s.counts.sent + s.counts.skipped)
          assert.deepEqual(counts, perStep, 'the step counts show every record')
        },
      ),
      { numRuns: 12 },
    )
  })
})
