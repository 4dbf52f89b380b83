import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  countEach,
  insertConfirmedContacts,
  needsSharedDatabase,
  newsletterStatus,
  recordingScene,
  scheduleNewsletter,
} from '../helpers/kill.ts'

const CONCURRENCY = 8
const RECIPIENTS = 5_000
const CHANNEL = { phoneNumberId: '777000222', wabaId: '888222' }

describe('a worker killed in the middle of a 5,000-recipient newsletter', needsSharedDatabase, () => {
  /** templates approved on submission; every template message counted by its recipient, answered a few ms later */
  const { scene, received } = recordingScene({ channel: CHANNEL, concurrency: CONCURRENCY })

  test('restarted, every recipient not in flight at the kill receives it exactly once; nobody twice', async () => {
    const { harness } = scene
    const account = await scene.whatsAppAccount(100_000, CHANNEL)
    await insertConfirmedContacts(harness, account.accountId, RECIPIENTS, { phonePrefix: '+49171' })
    const { id, newsletter } = await scheduleNewsletter(account, 1500)
    assert.equal(newsletter.template_status, 'APPROVED'.toLowerCase())

    const first = await scene.worker()
    await scene.killWhen(
      first,
      () => received.length >= 800,
      60_000,
      () => `the first worker did not get far: ${received.length}`,
    )
    const receivedAtKill = received.length

    const second = await scene.worker()
    await scene.newsletterSent(account, id)
    await scene.stop(second)

    const final = await newsletterStatus(account, id)
    assert.equal(final.recipients, RECIPIENTS, 'one send record per recipient')
    const { counts: perPhone, twice } = countEach(received)
    assert.deepEqual(twice, [], 'nobody received it twice')
    const interrupted = final.skip_reasons.interrupted ?? 0
    assert.ok(interrupted <= CONCURRENCY, `at most the sends in flight at the kill ended interrupted: ${interrupted}`)
    assert.equal(final.counts.sent, RECIPIENTS - interrupted, JSON.stringify(final))
    assert.ok(perPhone.size >= RECIPIENTS - interrupted)
    assert.ok(receivedAtKill < RECIPIENTS, 'the kill landed mid-way')
    console.log(
      `# newsletter kill test: ${receivedAtKill} of ${RECIPIENTS} at the provider when killed; ${final.counts.sent} sent, ${interrupted} interrupted, none twice`,
    )
  })
})
