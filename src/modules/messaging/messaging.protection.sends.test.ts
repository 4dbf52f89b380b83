import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { createSequence } from '../../../test/helpers/followups.ts'
import { createKey, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { HOUR, type Json, newsletterHelpers } from '../../../test/helpers/newsletters.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { claimJobs, enqueue } from '../../platform/jobs/jobs.ts'
import { TEMPLATE_SEND_QUEUE } from './messaging.ports.ts'
import { monthIn } from './messaging.quota.ts'
import { insertSends } from './messaging.repository.ts'
import type { SendOrigin } from './messaging.tables.ts'

// The frequency cap and quiet hours through the whole pipeline: settings over HTTP, campaign sends of the three kinds
// (newsletter, follow-up step, automation) through the worker, on the test clock.

let harness: Harness

// jobs run only inside drain(), so a test sees each state between steps
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

const { drain, sandboxAccount, contact, draft, inHours, schedule, status } = newsletterHelpers(() => harness)
let counter = 0

const settings = (account: TestAccount) => account.request({ method: 'GET', url: '/v1/settings/sending' })
const patchSettings = (account: TestAccount, payload: Json) =>
  account.request({ method: 'PATCH', url: '/v1/settings/sending', payload })

async function protect(account: TestAccount, payload: Json) {
  const response = await patchSettings(account, payload)
  assert.equal(response.statusCode, 200, response.body)
}

/** An approved chat template of the account; its id. */
async function approved(account: TestAccount, purpose: 'marketing' | 'utility' = 'marketing'): Promise<string> {
  const created = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: {
      name: `Angebot ${process.pid} ${++counter}`,
      content: purpose === 'marketing' ? 'Hallo {{name}}, neue Angebote!' : 'Hallo {{name}}, Ihre Bestellung ist da.',
      language: 'de',
      purpose,
    },
  })
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().template.id
  const submitted = await account.request({ method: 'POST', url: `/v1/templates/${id}/submit` })
  assert.equal(submitted.json().template.provider_status, 'approved', submitted.body)
  return id
}

/** A contact with this phone number whose chat opt-in is confirmed. */
async function contactWithPhone(account: TestAccount, phone: string): Promise<string> {
  const response = await account.request({ method: 'POST', url: '/v1/contacts', payload: { name: 'Kim', phone } })
  assert.equal(response.statusCode, 201, response.body)
  const id = response.json().contact.id
  const { setOptin } = await import('../../../test/helpers/fixtures.ts')
  await setOptin(harness, account.accountId, id)
  return id
}

/** Campaign send records queued as a campaign queues them (its own origin id each), with their jobs; their ids. */
async function queueCampaignSends(
  account: TestAccount,
  list: Array<{ contactId: string; templateId: string; origin: Exclude<SendOrigin, 'api'> }>,
): Promise<string[]> {
  const now = harness.clock.now()
  const ids = list.map(() => randomUUID())
  await harness.database.orm.transaction(async (tx) => {
    await insertSends(
      tx,
      list.map((s, i) => ({
        accountId: account.accountId,
        id: ids[i],
        contactId: s.contactId,
        templateId: s.templateId,
        status: 'queued' as const,
        origin: s.origin,
        originId: randomUUID(),
        createdAt: now,
        updatedAt: now,
      })),
    )
    await enqueue(
      tx,
      harness.clock,
      ids.map((id) => ({ accountId: account.accountId, queue: TEMPLATE_SEND_QUEUE, payload: { send_id: id } })),
    )
  })
  return ids
}

type SendRow = { id: string; origin: string; status: string; reason: string | null; sent_at: string | null }

/** A contact's send records, oldest first; delivered and read count as sent. */
async function sendsOf(account: TestAccount, contactId: string): Promise<SendRow[]> {
  const rows = await harness.database.query<SendRow>(
    `SELECT id, origin, status, reason, sent_at FROM template_sends WHERE account_id = $1 AND contact_id = $2
      ORDER BY created_at, id`,
    [account.accountId, contactId],
  )
  return rows.map((r) => ({ ...r, status: ['delivered', 'read'].includes(r.status) ? 'sent' : r.status }))
}

async function sendRecord(account: TestAccount, id: string): Promise<Json> {
  const response = await account.request({ method: 'GET', url: `/v1/sends/${id}` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

async function runAtOf(sendId: string): Promise<string> {
  const [job] = await harness.database.query<{ run_at: Date }>(
    `SELECT run_at FROM jobs WHERE queue = $1 AND payload->>'send_id' = $2`,
    [TEMPLATE_SEND_QUEUE, sendId],
  )
  return new Date(job.run_at).toISOString()
}

/** A sequence of one step per delay (hours), active; contacts enrol when their chat opt-in is confirmed. */
async function activeSequence(account: TestAccount, delays: number[]): Promise<Json> {
  const sequence = await createSequence(harness, account, {
    name: `Willkommen ${++counter}`,
    steps: delays.map((amount, i) => ({
      text: `Hallo {{name}}, Tipp Nummer ${i + 1} für dich.`,
      delay: { amount, unit: 'hours' as const },
    })),
  })
  const response = await account.request({
    method: 'PATCH',
    url: `/v1/followups/${sequence.id}`,
    payload: { status: 'active' },
  })
  assert.equal(response.statusCode, 200, response.body)
  return sequence
}

/** Runs a newsletter's jobs until it has settled (the fan-out, the sends, the progress checks). */
async function settle() {
  for (let i = 0; i < 3; i++) {
    await drain()
    harness.clock.advance(60_000)
  }
  await drain()
}

describe('sending settings: GET and PATCH /v1/settings/sending', () => {
  test('a new account has the frequency cap on (1 in 16 hours) and quiet hours off', async () => {
    const account = await createTestAccount(harness, { protection: 'defaults' })
    const response = await settings(account)
    assert.equal(response.statusCode, 200, response.body)
    assert.deepEqual(response.json(), {
      frequency_cap: { enabled: true, max_messages: 1, window_hours: 16 },
      quiet_hours: { enabled: false, from: '20:00', to: '08:00' },
    })
  })

  test('only the given fields change, and the change is read back', async () => {
    const account = await createTestAccount(harness)
    assert.equal((await settings(account)).json().frequency_cap.enabled, false, 'an existing account: off')
    const changed = await patchSettings(account, { frequency_cap: { max_messages: 3 }, quiet_hours: { to: '07:30' } })
    assert.equal(changed.statusCode, 200, changed.body)
    const expected = {
      frequency_cap: { enabled: false, max_messages: 3, window_hours: 16 },
      quiet_hours: { enabled: false, from: '20:00', to: '07:30' },
    }
    assert.deepEqual(changed.json(), expected)
    assert.deepEqual((await settings(account)).json(), expected)
  })

  test('bad bodies: 400 with the envelope, nothing changes', async () => {
    const account = await createTestAccount(harness)
    const before = (await settings(account)).json()
    for (const payload of [
      {},
      { frequency_cap: { limit: 2 } },
      { frequency_cap: {} },
      { frequency_cap: { max_messages: 0 } },
      { frequency_cap: { window_hours: 721 } },
      { quiet_hours: { from: '24:00' } },
      { quiet_hours: { from: '8:00' } },
      { sending: true },
    ]) {
      const response = await patchSettings(account, payload)
      assert.equal(response.statusCode, 400, JSON.stringify(payload))
      assert.equal(response.json().error.code, 'bad_request')
    }
    const same = await patchSettings(account, { quiet_hours: { from: '08:00' } })
    assert.equal(same.statusCode, 400)
    assert.equal(same.json().error.key, 'quiet_hours_invalid')
    assert.deepEqual((await settings(account)).json(), before)
  })

  test('settings:read may read but not change them (403)', async () => {
    const account = await createTestAccount(harness)
    const key = await createKey(harness, account.accountId, ['settings:read'])
    const headers = { authorization: `Bearer ${key}` }
    const read = await harness.app.inject({ method: 'GET', url: '/v1/settings/sending', headers })
    assert.equal(read.statusCode, 200, read.body)
    const write = await harness.app.inject({
      method: 'PATCH',
      url: '/v1/settings/sending',
      headers,
      payload: { frequency_cap: { enabled: true } },
    })
    assert.equal(write.statusCode, 403, write.body)
  })
})

describe('frequency cap across newsletters, follow-ups and automations', () => {
  test('one marketing message in 16 hours: the others are skipped frequency_capped and counted; utility and POST /messages go', async () => {
    const account = await sandboxAccount()
    await protect(account, { frequency_cap: { enabled: true, max_messages: 1, window_hours: 16 } })
    const sequence = await activeSequence(account, [0, 4])
    const start = harness.clock.now().getTime()
    const erika = await contact(account, 'confirmed')
    await drain()
    assert.deepEqual(
      (await sendsOf(account, erika)).map((s) => [s.origin, s.status]),
      [['followup', 'sent']],
      'the first step is the first marketing message',
    )

    // a newsletter an hour later: capped
    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    harness.clock.advance(HOUR + 1000)
    await settle()
    const done = await status(account, newsletter.id)
    assert.equal(done.status, 'sent')
    assert.equal(done.counts.skipped, 1)
    assert.deepEqual(done.skip_reasons, { frequency_capped: 1 })

    // the second step, an automation's marketing send: capped; a utility send and a POST /messages send: not
    harness.clock.set(new Date(start + 4 * HOUR + 60_000))
    await drain()
    const marketing = await approved(account)
    const utility = await approved(account, 'utility')
    const [automationSend, utilitySend] = await queueCampaignSends(account, [
      { contactId: erika, templateId: marketing, origin: 'automation' },
      { contactId: erika, templateId: utility, origin: 'automation' },
    ])
    const api = await account.request({
      method: 'POST',
      url: '/v1/messages',
      payload: { contact_id: erika, template: { id: marketing } },
    })
    assert.equal(api.statusCode, 202, api.body)
    await drain()
    const record = await sendRecord(account, automationSend)
    assert.equal(record.status, 'skipped')
    assert.equal(record.reason, 'frequency_capped')
    assert.ok(['sent', 'delivered', 'read'].includes((await sendRecord(account, utilitySend)).status))
    assert.ok(['sent', 'delivered', 'read'].includes((await sendRecord(account, api.json().send_id)).status))
    assert.deepEqual(
      (await sendsOf(account, erika)).filter((s) => s.origin === 'followup').map((s) => [s.status, s.reason]),
      [
        ['sent', null],
        ['skipped', 'frequency_capped'],
      ],
    )
    const statistics = await account.request({ method: 'GET', url: `/v1/followups/${sequence.id}/statistics` })
    assert.equal(statistics.statusCode, 200, statistics.body)
    assert.equal(statistics.json().sends.skipped, 1, 'the sequence counts the capped step')

    // at 16 hours after the first message exactly it is still in the window; a second later it is not
    harness.clock.set(new Date(start + 16 * HOUR))
    const [atEdge] = await queueCampaignSends(account, [
      { contactId: erika, templateId: marketing, origin: 'automation' },
    ])
    await drain()
    assert.equal((await sendRecord(account, atEdge)).reason, 'frequency_capped')
    harness.clock.advance(1000)
    const [after] = await queueCampaignSends(account, [
      { contactId: erika, templateId: marketing, origin: 'automation' },
    ])
    await drain()
    assert.ok(['sent', 'delivered', 'read'].includes((await sendRecord(account, after)).status))
  })

  test('two sends to one contact in the same batch: one goes, the other is capped', async () => {
    const account = await sandboxAccount()
    await protect(account, { frequency_cap: { enabled: true, max_messages: 1, window_hours: 24 } })
    const erika = await contact(account, 'confirmed')
    const marketing = await approved(account)
    await queueCampaignSends(account, [
      { contactId: erika, templateId: marketing, origin: 'newsletter' },
      { contactId: erika, templateId: marketing, origin: 'automation' },
      { contactId: erika, templateId: marketing, origin: 'followup' },
    ])
    await drain()
    const outcomes = (await sendsOf(account, erika)).map((s) => s.reason ?? s.status).sort()
    assert.deepEqual(outcomes, ['frequency_capped', 'frequency_capped', 'sent'])
  })

  test('batches for one contact in overlapping transactions (as in two worker processes): only one marketing message passes', {
    skip: process.env.HEROLD_TEST_DATABASE_URL ? false : 'needs PostgreSQL (transactions that overlap)',
  }, async () => {
    const account = await sandboxAccount()
    await protect(account, { frequency_cap: { enabled: true, max_messages: 1, window_hours: 24 } })
    const erika = await contact(account, 'confirmed')
    const marketing = await approved(account)
    const origins = ['newsletter', 'followup', 'automation'] as const
    await queueCampaignSends(
      account,
      origins.map((origin) => ({ contactId: erika, templateId: marketing, origin })),
    )
    // one job per claim, so each send is a batch of its own
    const jobs = []
    for (let i = 0; i < origins.length; i++) {
      const options = { queue: TEMPLATE_SEND_QUEUE, limit: 1, perKey: 10, leaseMs: 60_000 }
      jobs.push(...(await claimJobs(harness.database.orm, harness.clock, options)))
    }
    assert.equal(jobs.length, origins.length)
    // the month's quota row held by another transaction: every batch's commit waits behind it, so their checks
    // overlap as they would in separate processes (the pool of five: this session, three batches, the poll)
    const month = monthIn(harness.clock.now(), 'Europe/Berlin')
    await harness.database.query(
      'INSERT INTO message_quota (account_id, month, used) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING',
      [account.accountId, month],
    )
    let release = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let holding = () => {}
    const held = new Promise<void>((resolve) => {
      holding = resolve
    })
    const holder = harness.database.withSession(async (session) => {
      await session.query('BEGIN')
      await session.query('SELECT used FROM message_quota WHERE account_id = $1 AND month = $2 FOR UPDATE', [
        account.accountId,
        month,
      ])
      holding()
      await released
      await session.query('COMMIT')
    })
    await held
    const delivering = Promise.all(
      jobs.map((job) => harness.services.templateSends.deliverBatch([job], { settled: () => {} })),
    )
    const waitingForLocks = async () =>
      (
        await harness.database.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
      )[0].n
    for (let look = 0; look < 2000 && (await waitingForLocks()) < origins.length; look++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    assert.equal(await waitingForLocks(), origins.length, 'every batch waits: the cap’s lock or the quota row')
    release()
    await holder
    await delivering
    const outcomes = (await sendsOf(account, erika)).map((s) => s.reason ?? s.status).sort()
    assert.deepEqual(outcomes, ['frequency_capped', 'frequency_capped', 'sent'])
  })

  test('property: no contact ever receives more than N marketing messages in any window, and none is lost', async () => {
    const origins = ['newsletter', 'followup', 'automation'] as const
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(
          fc.record({
            contact: fc.integer({ min: 0, max: 2 }),
            origin: fc.constantFrom(...origins),
            together: fc.integer({ min: 1, max: 2 }),
            minutesLater: fc.integer({ min: 0, max: 180 }),
          }),
          { minLength: 4, maxLength: 14 },
        ),
        async (limit, windowHours, steps) => {
          const account = await sandboxAccount()
          await protect(account, { frequency_cap: { enabled: true, max_messages: limit, window_hours: windowHours } })
          const template = await approved(account)
          const contacts = [
            await contact(account, 'confirmed'),
            await contact(account, 'confirmed'),
            await contact(account, 'confirmed'),
          ]
          const window = windowHours * HOUR
          // the model: a send passes when fewer than `limit` passed in the window before it
          const passed = new Map<string, number[]>(contacts.map((c) => [c, []]))
          let queued = 0
          for (const step of steps) {
            harness.clock.advance(step.minutesLater * 60_000)
            const contactId = contacts[step.contact]
            const list = Array.from({ length: step.together }, () => ({
              contactId,
              templateId: template,
              origin: step.origin,
            }))
            await queueCampaignSends(account, list)
            queued += list.length
            await drain()
            const now = harness.clock.now().getTime()
            for (let i = 0; i < step.together; i++) {
              const times = passed.get(contactId) ?? []
              if (times.filter((t) => t >= now - window).length < limit) times.push(now)
            }
          }
          let seen = 0
          for (const contactId of contacts) {
            const rows = await sendsOf(account, contactId)
            seen += rows.length
            for (const row of rows) {
              assert.ok(
                row.status === 'sent' || (row.status === 'skipped' && row.reason === 'frequency_capped'),
                JSON.stringify(row),
              )
            }
            const sent = rows.filter((r) => r.status === 'sent').map((r) => new Date(r.sent_at as string).getTime())
            for (const t of sent) {
              const inWindow = sent.filter((u) => u >= t && u <= t + window).length
              assert.ok(inWindow <= limit, `${inWindow} marketing messages within ${windowHours} h (limit ${limit})`)
            }
            assert.equal(sent.length, passed.get(contactId)?.length, 'as many as the model lets through')
          }
          assert.equal(seen, queued, 'every queued send has its record')
        },
      ),
      { numRuns: 6 },
    )
  })
})

describe('quiet hours across the three campaign kinds, in the contact’s time zone, over the spring change', () => {
  test('at 21:30 in Berlin the German contact’s marketing waits until 08:00 summer time; New York and transactional sends go', async () => {
    // Saturday 2027-03-27 20:30 UTC: 21:30 in Berlin (CET), 16:30 in New York (EDT); Berlin moves to CEST that night
    harness.clock.set(new Date('2027-03-27T20:30:00Z'))
    const account = await sandboxAccount()
    await protect(account, { quiet_hours: { enabled: true, from: '20:00', to: '08:00' } })
    const morning = '2027-03-28T06:00:00.000Z'
    const sequence = await activeSequence(account, [0])
    const erika = await contactWithPhone(account, '+4915112345601')
    const john = await contactWithPhone(account, '+12015550123')
    await drain()
    const [erikaStep] = await sendsOf(account, erika)
    assert.equal(erikaStep.origin, 'followup')
    assert.deepEqual([erikaStep.status, erikaStep.reason], ['queued', 'quiet_hours'])
    assert.equal(await runAtOf(erikaStep.id), morning)
    assert.equal((await sendsOf(account, john))[0].status, 'sent')

    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(0.25))).statusCode, 200)
    harness.clock.advance(HOUR / 4 + 1000)
    await settle()
    const waiting = await status(account, newsletter.id)
    assert.equal(waiting.status, 'sending')
    assert.equal(waiting.phase, 'waiting_for_sending')
    assert.equal(waiting.stop_reason, 'quiet_hours')
    assert.equal(waiting.resumes_at, morning)
    assert.equal(waiting.counts.queued, 1)

    const marketing = await approved(account)
    const utility = await approved(account, 'utility')
    const [automationSend, utilitySend] = await queueCampaignSends(account, [
      { contactId: erika, templateId: marketing, origin: 'automation' },
      { contactId: erika, templateId: utility, origin: 'automation' },
    ])
    const api = await account.request({
      method: 'POST',
      url: '/v1/messages',
      payload: { contact_id: erika, template: { id: marketing } },
    })
    assert.equal(api.statusCode, 202, api.body)
    await drain()
    const held = await sendRecord(account, automationSend)
    assert.deepEqual([held.status, held.reason, held.reason_detail], ['queued', 'quiet_hours', morning])
    assert.equal(await runAtOf(automationSend), morning)
    assert.ok(['sent', 'delivered', 'read'].includes((await sendRecord(account, utilitySend)).status))
    assert.ok(['sent', 'delivered', 'read'].includes((await sendRecord(account, api.json().send_id)).status))

    // 07:59 summer time: still quiet; 08:00: everything that waited goes, the newsletter finishes
    harness.clock.set(new Date('2027-03-28T05:59:00Z'))
    await drain()
    assert.equal((await sendRecord(account, automationSend)).status, 'queued')
    harness.clock.set(new Date(morning))
    await settle()
    const after = await sendsOf(account, erika)
    assert.ok(
      after.every((s) => s.status === 'sent'),
      JSON.stringify(after),
    )
    assert.equal((await sendRecord(account, automationSend)).reason_detail, null)
    const sent = await status(account, newsletter.id)
    assert.equal(sent.status, 'sent')
    assert.equal(sent.counts.skipped, 0)
    const statistics = await account.request({ method: 'GET', url: `/v1/followups/${sequence.id}/statistics` })
    assert.equal(statistics.json().sends.sent, 2)
  })
})
