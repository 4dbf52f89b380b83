import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import {
  drainJobs,
  sandboxAccount as fixtureAccount,
  nextPhone,
  setOptin as recordOptin,
} from '../../../test/helpers/fixtures.ts'
import { createSequence, getFollowup } from '../../../test/helpers/followups.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { pauseSending, resumeSending } from '../../platform/auth/accounts.service.ts'
import { claimJobs } from '../../platform/jobs/jobs.ts'
import { FOLLOWUP_STEP_QUEUE, type SequenceInput } from './index.ts'

let harness: Harness

// jobs run only inside drain(), so a test sees each state between steps
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

const HOUR = 3600_000
const DAY = 24 * HOUR
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>

const drain = () => drainJobs(harness)

const sandboxAccount = () => fixtureAccount(harness)

const setOptin = (account: TestAccount, id: string, to: 'pending' | 'confirmed' | 'opted_out') =>
  recordOptin(harness, account.accountId, id, to)

async function contact(account: TestAccount, optin: 'none' | 'confirmed' = 'none'): Promise<string> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/contacts',
    payload: { name: 'Erika Mustermann', phone: nextPhone() },
  })
  assert.equal(response.statusCode, 201, response.body)
  const id = response.json().contact.id as string
  if (optin === 'confirmed') await setOptin(account, id, 'confirmed')
  return id
}

const twoSteps = (extra: Partial<SequenceInput> = {}): SequenceInput => ({
  name: 'Willkommen',
  steps: [
    { text: 'Hallo {{name}}, schön, dass du da bist. Hier sind unsere Tipps.', delay: { amount: 2, unit: 'hours' } },
    { text: 'Hallo {{name}}, kennst du schon unsere Angebote der Woche?', delay: { amount: 1, unit: 'days' } },
  ],
  ...extra,
})

const create = (account: TestAccount, input: SequenceInput = twoSteps()) => createSequence(harness, account, input)

const get = getFollowup

async function patch(account: TestAccount, id: string, payload: Json) {
  return account.request({ method: 'PATCH', url: `/v1/followups/${id}`, payload })
}

async function activate(account: TestAccount, id: string): Promise<Json> {
  const response = await patch(account, id, { status: 'active' })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().followup
}

/** The follow-up send records of a contact: step position → status (and reason). */
async function sendsOf(
  account: TestAccount,
  contactId: string,
): Promise<Array<{ position: number; status: string; reason: string | null }>> {
  const result = await harness.database.orm.execute(sql`SELECT st.position, s.status, s.reason FROM template_sends s
    JOIN followup_steps st ON st.account_id = s.account_id AND st.id = s.origin_id
    WHERE s.account_id = ${account.accountId} AND s.contact_id = ${contactId} AND s.origin = 'followup'
    ORDER BY st.position`)
  return (result as unknown as { rows: Array<{ position: number; status: string; reason: string | null }> }).rows.map(
    // the sandbox reports delivered and read later: all of them were sent
    (r) => ({
      position: Number(r.position),
      status: ['delivered', 'read'].includes(r.status) ? 'sent' : r.status,
      reason: r.reason,
    }),
  )
}

async function outboundTexts(account: TestAccount): Promise<string[]> {
  const response = await account.request({ method: 'GET', url: '/v1/messages?direction=outbound&limit=100' })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().messages.map((m: Json) => m.text as string)
}

describe('follow-ups: the resource', () => {
  test('the service creates a draft with steps and approved templates; GET shows steps and counts; list newest first', async () => {
    const account = await sandboxAccount()
    const first = await create(account)
    harness.clock.advance(1000)
    const second = await create(account, twoSteps({ name: 'Zweite', trigger: { type: 'tag_added', tag: 'vip' } }))
    const got = await get(account, first.id)
    assert.equal(got.status, 'draft')
    assert.deepEqual(got.trigger, { type: 'optin_confirmed' })
    assert.deepEqual(got.enrollments, { active: 0, completed: 0, stopped: 0 })
    assert.equal(got.steps.length, 2)
    assert.deepEqual(
      got.steps.map((s: Json) => [s.position, s.delay.amount, s.delay.unit, s.approval, s.needs_approval]),
      [
        [1, 2, 'hours', 'approved', false],
        [2, 1, 'days', 'approved', false],
      ],
    )
    assert.equal(got.steps[0].counts.scheduled, 0)
    assert.equal(got.steps[0].counts.gesendet, 0, 'German alias beside sent')
    const list = (await account.request({ method: 'GET', url: '/v1/followups?limit=1' })).json()
    assert.deepEqual(
      list.followups.map((f: Json) => f.id),
      [second.id],
    )
    assert.equal(list.followups[0].steps_count, 2)
    assert.equal(list.has_more, true)
    assert.equal(list.next_offset, 1)
  })

  test("another account's sequence and step are 404; PATCH takes only status and name (400 otherwise)", async () => {
    const owner = await sandboxAccount()
    const other = await sandboxAccount()
    const sequence = await create(owner)
    for (const url of [`/v1/followups/${sequence.id}`, '/v1/followups/not-a-uuid']) {
      const response = await other.request({ method: 'GET', url })
      assert.equal(response.statusCode, 404)
      assert.equal(response.json().error.code, 'not_found')
    }
    assert.equal((await patch(other, sequence.id, { status: 'active' })).statusCode, 404)
    const step = sequence.steps[0].id
    const foreignStep = await other.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}/steps/${step}`,
      payload: { text: 'Hallo {{name}}, neu hier?' },
    })
    assert.equal(foreignStep.statusCode, 404)
    for (const payload of [{ status: 'running' }, { name: '' }, { steps: [] }, { status: 'active', trigger: {} }, {}]) {
      const response = await patch(owner, sequence.id, payload)
      assert.equal(response.statusCode, 400, JSON.stringify(payload))
      assert.equal(response.json().error.code, 'bad_request')
    }
    assert.equal((await get(owner, sequence.id)).status, 'draft', 'nothing changed')
    const renamed = await patch(owner, sequence.id, { name: 'Neuer Name' })
    assert.equal(renamed.statusCode, 200)
    assert.equal(renamed.json().followup.name, 'Neuer Name')
  })

  test('scopes: followups:read cannot PATCH (403 apikey_scope_fehlt)', async () => {
    const account = await createTestAccount(harness, { scopes: ['followups:read'] })
    const response = await account.request({
      method: 'PATCH',
      url: '/v1/followups/00000000-0000-4000-8000-000000000000',
      payload: { status: 'active' },
    })
    assert.equal(response.statusCode, 403)
    assert.equal(response.json().error.key, 'apikey_scope_fehlt')
  })

  test('DELETE /templates/{id} answers 409 template_in_use while a step uses the template', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account)
    const response = await account.request({ method: 'DELETE', url: `/v1/templates/${sequence.steps[0].template_id}` })
    assert.equal(response.statusCode, 409)
    assert.equal(response.json().error.code, 'template_in_use')
    const free = await account.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: 'frei', content: 'Hallo {{name}}, ein freies Template.' },
    })
    const deleted = await account.request({ method: 'DELETE', url: `/v1/templates/${free.json().template.id}` })
    assert.equal(deleted.statusCode, 200, deleted.body)
  })
})

describe('follow-ups: enrollment and sending', () => {
  test('activation schedules only confirmed contacts, and only step times still ahead', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account)
    const fresh = await contact(account, 'confirmed') // confirmed 3 hours before the activation
    harness.clock.advance(3 * HOUR)
    const older = await contact(account, 'confirmed') // confirmed right before it: both steps ahead
    const pending = await contact(account)
    await setOptin(account, pending, 'pending')
    const none = await contact(account)
    // fresh was confirmed 3 h ago: its first step (2 h) has passed, the second (1 day after it) is ahead
    const active = await activate(account, sequence.id)
    assert.deepEqual(active.enrollments, { active: 2, completed: 0, stopped: 0 })
    assert.equal(active.steps[0].counts.scheduled, 1, 'older: step 1')
    assert.equal(active.steps[1].counts.scheduled, 1, 'fresh: step 2 only')
    harness.clock.advance(2 * HOUR + 1000)
    await drain()
    assert.deepEqual(await sendsOf(account, older), [{ position: 1, status: 'sent', reason: null }])
    assert.deepEqual(await sendsOf(account, fresh), [], 'a passed step time is not sent')
    assert.deepEqual(await sendsOf(account, pending), [])
    assert.deepEqual(await sendsOf(account, none), [])
    harness.clock.advance(DAY)
    await drain()
    assert.deepEqual(await sendsOf(account, fresh), [{ position: 2, status: 'sent', reason: null }])
    assert.deepEqual(await sendsOf(account, older), [
      { position: 1, status: 'sent', reason: null },
      { position: 2, status: 'sent', reason: null },
    ])
    const done = await get(account, sequence.id)
    assert.deepEqual(done.enrollments, { active: 0, completed: 2, stopped: 0 })
    assert.equal(done.steps[0].counts.sent, 1)
    assert.equal(done.steps[1].counts.sent, 2)
    const texts = await outboundTexts(account)
    assert.ok(
      texts.some((t) => t.startsWith('Hallo Erika, kennst du schon')),
      texts.join(' | '),
    )
  })

  test('a chat opt-in confirmed while active enrolls the contact (once); a tag trigger enrolls on the tag', async () => {
    const account = await sandboxAccount()
    const optin = await create(account)
    const tagged = await create(account, twoSteps({ name: 'VIP', trigger: { type: 'tag_added', tag: 'vip' } }))
    await activate(account, optin.id)
    await activate(account, tagged.id)
    const id = await contact(account, 'confirmed')
    await setOptin(account, id, 'pending')
    await setOptin(account, id, 'confirmed') // confirmed again while enrolled: still one enrollment
    assert.deepEqual((await get(account, optin.id)).enrollments, { active: 1, completed: 0, stopped: 0 })
    assert.deepEqual((await get(account, tagged.id)).enrollments, { active: 0, completed: 0, stopped: 0 })
    const tag = await account.request({ method: 'POST', url: `/v1/contacts/${id}/tags`, payload: { tag: 'vip' } })
    assert.equal(tag.statusCode, 200, tag.body)
    assert.deepEqual((await get(account, tagged.id)).enrollments, { active: 1, completed: 0, stopped: 0 })
    harness.clock.advance(2 * HOUR + 1000)
    await drain()
    assert.equal((await get(account, optin.id)).steps[0].counts.sent, 1)
    assert.equal((await get(account, tagged.id)).steps[0].counts.sent, 1)
  })

  test('pause stops every send; reactivating continues with future times only', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account)
    await activate(account, sequence.id)
    const id = await contact(account, 'confirmed')
    // the step became due and its send is queued, but not yet sent
    harness.clock.advance(2 * HOUR + 1000)
    await harness.jobs!.start()
    await waitFor(async () => (await sendsOf(account, id)).length > 0)
    await harness.jobs!.stop()
    const paused = await patch(account, sequence.id, { status: 'paused' })
    assert.equal(paused.statusCode, 200)
    assert.deepEqual(paused.json().followup.enrollments, { active: 0, completed: 0, stopped: 1 })
    harness.clock.advance(2 * DAY)
    await drain()
    const afterPause = await sendsOf(account, id)
    assert.ok(
      afterPause.every((s) => s.status === 'sent' || (s.status === 'skipped' && s.reason === 'sequence_paused')),
      JSON.stringify(afterPause),
    )
    const sentBefore = afterPause.filter((s) => s.status === 'sent').length
    // step 2 was due 1 day after step 1, which has passed: reactivating schedules nothing for it
    const resumed = await activate(account, sequence.id)
    assert.equal(resumed.status, 'active')
    harness.clock.advance(3 * DAY)
    await drain()
    const afterResume = await sendsOf(account, id)
    assert.equal(afterResume.filter((s) => s.status === 'sent').length, sentBefore, 'no passed step is sent')
    assert.ok(!afterResume.some((s) => s.position === 2), JSON.stringify(afterResume))
  })

  test('reactivating after a short pause sends the steps still ahead', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account)
    await activate(account, sequence.id)
    const id = await contact(account, 'confirmed')
    assert.equal((await patch(account, sequence.id, { status: 'paused' })).statusCode, 200)
    harness.clock.advance(HOUR)
    await drain()
    await activate(account, sequence.id)
    harness.clock.advance(HOUR + 1000)
    await drain()
    assert.deepEqual(await sendsOf(account, id), [{ position: 1, status: 'sent', reason: null }])
  })

  test('opting out stops the enrollment at once; deleting the contact removes its pending steps', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account)
    await activate(account, sequence.id)
    const leaving = await contact(account, 'confirmed')
    const deleted = await contact(account, 'confirmed')
    await setOptin(account, leaving, 'opted_out')
    const removal = await account.request({ method: 'DELETE', url: `/v1/contacts/${deleted}` })
    assert.equal(removal.statusCode, 200, removal.body)
    assert.equal(removal.json().removed.followup_enrollments, 1)
    const jobs = await harness.database.orm.execute(sql`SELECT count(*)::int AS n FROM jobs
      WHERE account_id = ${account.accountId} AND queue = 'followups.step'`)
    assert.equal(Number((jobs as unknown as { rows: Array<{ n: number }> }).rows[0].n), 0, 'no step job is left')
    assert.deepEqual((await get(account, sequence.id)).enrollments, { active: 0, completed: 0, stopped: 1 })
    harness.clock.advance(3 * DAY)
    await drain()
    assert.deepEqual(await sendsOf(account, leaving), [])
    const view = await get(account, sequence.id)
    assert.deepEqual(view.enrollments, { active: 0, completed: 0, stopped: 1 })
  })

  test('a changed step text needs a new approval: nothing is sent before it, then the new text goes', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account)
    await activate(account, sequence.id)
    const id = await contact(account, 'confirmed')
    // without a number the changed template cannot be submitted: it stays unapproved
    await harness.services.channels.disconnect(account.accountId, 'chat')
    const step = sequence.steps[0]
    const changed = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}/steps/${step.id}`,
      payload: { text: 'Hallo {{name}}, das ist der neue Text.' },
    })
    assert.equal(changed.statusCode, 200, changed.body)
    const view = changed.json().followup.steps[0]
    assert.equal(view.text, 'Hallo {{name}}, das ist der neue Text.')
    assert.equal(view.needs_approval, true)
    assert.equal(view.approval, 'not_submitted')
    await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    harness.clock.advance(2 * HOUR + 1000)
    await drain()
    assert.deepEqual(await sendsOf(account, id), [], 'not sent unapproved')
    assert.equal((await get(account, sequence.id)).steps[0].counts.scheduled, 1, 'it waits')
    const submitted = await account.request({ method: 'POST', url: `/v1/templates/${step.template_id}/submit` })
    assert.equal(submitted.statusCode, 200, submitted.body)
    harness.clock.advance(11 * 60_000)
    await drain()
    assert.deepEqual(await sendsOf(account, id), [{ position: 1, status: 'sent', reason: null }])
    assert.ok((await outboundTexts(account)).includes('Hallo Erika, das ist der neue Text.'))
  })

  test('while sending is not possible due steps wait and go later; more than a day late they are skipped (late)', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account)
    await activate(account, sequence.id)
    const id = await contact(account, 'confirmed')
    await pauseSending(harness.database.orm, account.accountId)
    harness.clock.advance(2 * HOUR + 1000)
    await drain()
    assert.deepEqual(await sendsOf(account, id), [])
    harness.clock.advance(5 * HOUR)
    await resumeSending(harness.database.orm, account.accountId)
    harness.clock.advance(11 * 60_000)
    await drain()
    assert.deepEqual(await sendsOf(account, id), [{ position: 1, status: 'sent', reason: null }], 'went when possible')
    // step 2: due a day after step 1; sending paused for longer than a day → skipped as late
    await pauseSending(harness.database.orm, account.accountId)
    harness.clock.advance(DAY)
    await drain()
    for (let i = 0; i < 8; i++) {
      harness.clock.advance(4 * HOUR)
      await drain()
    }
    await resumeSending(harness.database.orm, account.accountId)
    harness.clock.advance(11 * 60_000)
    await drain()
    assert.deepEqual(await sendsOf(account, id), [
      { position: 1, status: 'sent', reason: null },
      { position: 2, status: 'skipped', reason: 'late' },
    ])
    const view = await get(account, sequence.id)
    assert.equal(view.steps[1].counts.skipped, 1)
    assert.deepEqual(view.enrollments, { active: 0, completed: 1, stopped: 0 })
  })
})

describe('follow-ups: a batch of due steps', () => {
  test('claimed before a pause, an opt-out, a deletion and a lost opt-in: only the rest is queued, each once', async () => {
    const account = await sandboxAccount()
    const other = await sandboxAccount()
    const kept = await create(account)
    const paused = await create(account, {
      name: 'Zweite',
      steps: [{ text: 'Hallo {{name}}, hier ist die zweite Folge.', delay: { amount: 2, unit: 'hours' } }],
    })
    const elsewhere = await create(other)
    await activate(account, kept.id)
    await activate(account, paused.id)
    await activate(other, elsewhere.id)
    const staying = await contact(account, 'confirmed')
    const leaving = await contact(account, 'confirmed')
    const deleted = await contact(account, 'confirmed')
    const unconfirmed = await contact(account, 'confirmed')
    const foreign = await contact(other, 'confirmed')
    harness.clock.advance(2 * HOUR + 1000)
    // every due step job claimed at once, as the runner does; the changes below commit while the batch is held
    const claimed = await claimJobs(harness.database.orm, harness.clock, {
      queue: FOLLOWUP_STEP_QUEUE,
      limit: 1000,
      perKey: 1,
      leaseMs: 60_000,
    })
    const mine = claimed.filter((j) => j.accountId === account.accountId || j.accountId === other.accountId)
    assert.equal(mine.length, 9, 'two enrollments for each of the four contacts, one for the other account')
    assert.equal((await patch(account, paused.id, { status: 'paused' })).statusCode, 200)
    await setOptin(account, leaving, 'opted_out')
    assert.equal((await account.request({ method: 'DELETE', url: `/v1/contacts/${deleted}` })).statusCode, 200)
    // no longer confirmed without an opt-out (no signal stops it): only the re-check sees it
    await setOptin(account, unconfirmed, 'pending')
    const settled = new Set<string>()
    await harness.services.followups.runSteps(claimed, { settled: (job) => settled.add(job.id) })
    assert.equal(settled.size, claimed.length, 'every job of the batch settled in its commit')
    const left = await harness.database.orm.execute(sql`SELECT count(*)::int AS n FROM jobs
      WHERE id = ANY(${`{${claimed.map((j) => j.id).join(',')}}`}::uuid[])`)
    assert.equal(Number((left as unknown as { rows: Array<{ n: number }> }).rows[0].n), 0, 'the claimed jobs are done')
    const enrollments = await harness.database.orm.execute(sql`SELECT contact_id, sequence_id, status, stop_reason,
        next_position FROM followup_enrollments WHERE account_id = ${account.accountId} AND contact_id = ${unconfirmed}
        AND sequence_id = ${kept.id}`)
    assert.deepEqual(
      (enrollments as unknown as { rows: Json[] }).rows.map((r) => [r.status, r.stop_reason]),
      [['stopped', 'contact_not_optin']],
    )
    // running the same claimed jobs again (a worker that lost them) writes nothing twice
    await harness.services.followups.runSteps(claimed, { settled: () => {} })
    await drain()
    assert.deepEqual(await sendsOf(account, staying), [{ position: 1, status: 'sent', reason: null }])
    assert.deepEqual(await sendsOf(account, leaving), [])
    assert.deepEqual(await sendsOf(account, deleted), [])
    assert.deepEqual(await sendsOf(account, unconfirmed), [])
    assert.deepEqual(await sendsOf(other, foreign), [{ position: 1, status: 'sent', reason: null }])
    const view = await get(account, kept.id)
    assert.equal(view.steps[1].counts.scheduled, 1, 'the staying contact is scheduled for step 2')
    assert.deepEqual((await get(account, paused.id)).enrollments, { active: 0, completed: 0, stopped: 3 })
    // step 2 of both accounts, a day later, again in one batch
    harness.clock.advance(DAY + 1000)
    await drain()
    assert.deepEqual(await sendsOf(account, staying), [
      { position: 1, status: 'sent', reason: null },
      { position: 2, status: 'sent', reason: null },
    ])
    assert.equal((await sendsOf(other, foreign)).length, 2)
    assert.deepEqual((await get(account, kept.id)).enrollments, { active: 0, completed: 1, stopped: 2 })
  })
})

describe('follow-ups: timing', () => {
  test('GET/PATCH /settings/followup-timing: send time, timezone (400 unknown), steps of other accounts skipped', async () => {
    const account = await sandboxAccount()
    const other = await sandboxAccount()
    const mine = await create(account)
    const theirs = await create(other)
    const initial = (await account.request({ method: 'GET', url: '/v1/settings/followup-timing' })).json()
    assert.deepEqual(initial, { send_time: null, timezone: 'Europe/Berlin', steps: [] })
    const bad = await account.request({
      method: 'PATCH',
      url: '/v1/settings/followup-timing',
      payload: { timezone: 'Mars/Olympus' },
    })
    assert.equal(bad.statusCode, 400)
    assert.equal(bad.json().error.code, 'bad_request')
    for (const payload of [
      { send_time: '25:00' },
      { send_time: '9:30' },
      { steps: [{ id: 'x', send_time: '09:00' }] },
    ]) {
      const response = await account.request({ method: 'PATCH', url: '/v1/settings/followup-timing', payload })
      assert.equal(response.statusCode, 400, JSON.stringify(payload))
    }
    const changed = await account.request({
      method: 'PATCH',
      url: '/v1/settings/followup-timing',
      payload: {
        send_time: '09:30',
        timezone: 'America/New_York',
        steps: [
          { id: mine.steps[1].id, send_time: '18:00' },
          { id: theirs.steps[0].id, send_time: '07:00' },
        ],
      },
    })
    assert.equal(changed.statusCode, 200, changed.body)
    assert.deepEqual(changed.json(), {
      send_time: '09:30',
      timezone: 'America/New_York',
      steps: [{ id: mine.steps[1].id, sequence_id: mine.id, position: 2, send_time: '18:00' }],
    })
    assert.equal((await get(other, theirs.id)).steps[0].send_time, null, "the other account's step is unchanged")
    const view = await get(account, mine.id)
    assert.equal(view.steps[0].effective_send_time, '09:30')
    assert.equal(view.steps[1].effective_send_time, '18:00')
    const cleared = await account.request({
      method: 'PATCH',
      url: '/v1/settings/followup-timing',
      payload: { send_time: null },
    })
    assert.equal(cleared.json().send_time, null)
    assert.equal(cleared.json().timezone, 'America/New_York', 'only given fields change')
  })

  test("a step goes at the send time in the account's timezone: due 02:00, send time 09:30 → 09:30 Berlin", async () => {
    const account = await sandboxAccount()
    const sequence = await create(account, {
      name: 'Morgens',
      steps: [{ text: 'Guten Morgen {{name}}, hier ist dein Tipp des Tages.', delay: { amount: 2, unit: 'hours' } }],
    })
    const timing = await account.request({
      method: 'PATCH',
      url: '/v1/settings/followup-timing',
      payload: { send_time: '09:30', timezone: 'Europe/Berlin' },
    })
    assert.equal(timing.statusCode, 200)
    await activate(account, sequence.id)
    const start = harness.clock.now()
    // midnight Berlin (on the last Sunday of March, the DST day): the step is due at 02:00 and goes at 09:30 CEST
    harness.clock.set('2026-03-28T23:00:00Z')
    const id = await contact(account, 'confirmed')
    const due = await harness.database.orm.execute(sql`SELECT next_due_at FROM followup_enrollments
      WHERE account_id = ${account.accountId} AND contact_id = ${id}`)
    const at = new Date((due as unknown as { rows: Array<{ next_due_at: string }> }).rows[0].next_due_at)
    assert.equal(at.toISOString(), '2026-03-29T07:30:00.000Z')
    harness.clock.set('2026-03-29T07:29:00Z')
    await drain()
    assert.deepEqual(await sendsOf(account, id), [])
    harness.clock.set('2026-03-29T07:30:01Z')
    await drain()
    assert.deepEqual(await sendsOf(account, id), [{ position: 1, status: 'sent', reason: null }])
    harness.clock.set(new Date(Math.max(start.getTime(), harness.clock.now().getTime())))
  })

  test('a changed delay moves the scheduled time of that step', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account)
    await activate(account, sequence.id)
    const id = await contact(account, 'confirmed')
    const response = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}/steps/${sequence.steps[0].id}`,
      payload: { delay: { amount: 5, unit: 'hours' } },
    })
    assert.equal(response.statusCode, 200, response.body)
    assert.deepEqual(response.json().followup.steps[0].delay, { amount: 5, unit: 'hours' })
    harness.clock.advance(3 * HOUR)
    await drain()
    assert.deepEqual(await sendsOf(account, id), [], 'not at the old time')
    harness.clock.advance(2 * HOUR + 1000)
    await drain()
    assert.deepEqual(await sendsOf(account, id), [{ position: 1, status: 'sent', reason: null }])
  })
})

describe('follow-ups: a shortened delay', () => {
  test('a step time moved more than a day into the past goes now, not skipped as late', async () => {
    const account = await sandboxAccount()
    const sequence = await create(account, {
      name: 'Später',
      steps: [{ text: 'Hallo {{name}}, wir melden uns wie versprochen.', delay: { amount: 3, unit: 'days' } }],
    })
    await activate(account, sequence.id)
    const id = await contact(account, 'confirmed')
    harness.clock.advance(2 * DAY)
    const response = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}/steps/${sequence.steps[0].id}`,
      payload: { delay: { amount: 1, unit: 'hours' } },
    })
    assert.equal(response.statusCode, 200, response.body)
    await drain()
    assert.deepEqual(await sendsOf(account, id), [{ position: 1, status: 'sent', reason: null }])
  })
})

async function waitFor(check: () => Promise<boolean>) {
  for (let i = 0; i < 200; i++) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error('condition not reached')
}
