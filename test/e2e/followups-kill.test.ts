import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { countEach, insertConfirmedContacts, needsSharedDatabase, recordingScene } from '../helpers/kill.ts'

const CONCURRENCY = 8
const CONTACTS = 2_000
const CHANNEL = { phoneNumberId: '777000333', wabaId: '888333' }

describe('a worker killed while 2,000 follow-up steps are due', needsSharedDatabase, () => {
  /** templates approved on submission; every template message counted by its recipient, answered a few ms later */
  const { scene, received } = recordingScene({ channel: CHANNEL, concurrency: CONCURRENCY })

  test('restarted, every contact not in flight at the kill gets the step exactly once; nobody twice', async () => {
    const { harness } = scene
    const account = await scene.whatsAppAccount(100_000, CHANNEL)
    // contacts confirmed (created) 1 hour minus 3 seconds ago: with a 1-hour delay the step of all 2,000 is due at
    // the same moment, 3 seconds after the activation
    await insertConfirmedContacts(harness, account.accountId, CONTACTS, {
      phonePrefix: '+49176',
      createdAt: "now() - interval '1 hour' + interval '3 seconds'",
    })
    const sequence = await harness.services.followups.create(
      { accountId: account.accountId, account: { language: 'de' } },
      {
        name: 'Nach einer Stunde',
        steps: [{ text: 'Hallo {{name}}, wie gefällt dir deine Bestellung?', delay: { amount: 1, unit: 'hours' } }],
      },
    )
    assert.equal(sequence.steps[0].approval, 'approved')
    harness.clock.set(new Date())
    const activated = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}`,
      payload: { status: 'active' },
    })
    assert.equal(activated.statusCode, 200, activated.body)
    assert.equal(activated.json().followup.steps[0].counts.scheduled, CONTACTS)

    const first = await scene.worker()
    await scene.killWhen(
      first,
      () => received.length >= 300,
      120_000,
      () => `the first worker did not get far: ${received.length}`,
    )
    const receivedAtKill = received.length

    const second = await scene.worker()
    const counts = async () => {
      return harness.database.query<{ status: string; reason: string | null; n: number }>(
        `SELECT status, reason, count(*)::int AS n FROM template_sends
         WHERE account_id = $1 AND origin = 'followup' GROUP BY status, reason`,
        [account.accountId],
      )
    }
    const open = async () => {
      // read in the database: polling the API this often would meet its rate limit
      const [active] = await harness.database.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM followup_enrollments WHERE account_id = $1 AND status = 'active'`,
        [account.accountId],
      )
      const pending = (await counts()).filter((r) => r.status === 'queued' || r.status === 'sending')
      return Number(active.n) + pending.reduce((sum, r) => sum + Number(r.n), 0)
    }
    await scene.waitWhile(async () => (await open()) > 0, {
      withinMs: 240_000,
      everyMs: 250,
      message: async () => `not finished: ${JSON.stringify(await counts())}`,
    })
    await scene.stop(second)

    const rows = await counts()
    const total = rows.reduce((sum, r) => sum + Number(r.n), 0)
    const sent = rows
      .filter((r) => ['sent', 'delivered', 'read'].includes(r.status))
      .reduce((s, r) => s + Number(r.n), 0)
    const interrupted = rows.filter((r) => r.reason === 'interrupted').reduce((s, r) => s + Number(r.n), 0)
    assert.equal(total, CONTACTS, 'one send record per contact and step')
    const { counts: perPhone, twice } = countEach(received)
    assert.deepEqual(twice, [], 'nobody received it twice')
    assert.ok(interrupted <= CONCURRENCY, `at most the sends in flight at the kill ended interrupted: ${interrupted}`)
    assert.equal(sent, CONTACTS - interrupted, JSON.stringify(rows))
    assert.ok(perPhone.size >= CONTACTS - interrupted)
    assert.ok(receivedAtKill < CONTACTS, 'the kill landed mid-way')
    const view = (await account.request({ method: 'GET', url: `/v1/followups/${sequence.id}` })).json().followup
    assert.deepEqual(view.enrollments, { active: 0, completed: CONTACTS, stopped: 0 })
    console.log(
      `# follow-up kill test: ${receivedAtKill} of ${CONTACTS} at the provider when killed; ${sent} sent, ${interrupted} interrupted, none twice`,
    )
  })
})
