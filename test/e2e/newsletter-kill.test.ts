import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createTestAccount } from '../helpers/harness.ts'
import {
  countEach,
  insertConfirmedContacts,
  killScene,
  needsSharedDatabase,
  newsletterStatus,
  whatsappAnswers,
} from '../helpers/kill.ts'

const LEASE_SECONDS = 2
const CONCURRENCY = 8
const RECIPIENTS = 5_000
const PHONE_NUMBER_ID = '777000222'
const WABA = '888222'

describe('a worker killed in the middle of a 5,000-recipient newsletter', needsSharedDatabase, () => {
  /** templates approved on submission; every template message counted by its recipient, answered a few ms later */
  const received: string[] = []
  const scene = killScene({
    graph: whatsappAnswers({
      wabaId: WABA,
      phoneNumberId: PHONE_NUMBER_ID,
      delayMs: 5,
      idPrefix: 'wamid.NL',
      record: (body) => received.push(String(body.to)),
    }),
    settings: ({ graph }) => ({
      HEROLD_WHATSAPP_GRAPH_URL: graph.url,
      HEROLD_JOB_LEASE_SECONDS: String(LEASE_SECONDS),
      HEROLD_WORKER_CONCURRENCY: String(CONCURRENCY),
    }),
  })

  test('restarted, every recipient not in flight at the kill receives it exactly once; nobody twice', async () => {
    const { harness } = scene
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 100_000 } })
    await scene.connectWhatsApp(account.accountId, {
      address: '+4930999222',
      phoneNumberId: PHONE_NUMBER_ID,
      wabaId: WABA,
      accessToken: 'EAAG-newsletter-kill',
      appSecret: 'kill-secret',
      verifyToken: 'kill-verify',
    })
    await insertConfirmedContacts(harness, account.accountId, RECIPIENTS, { phonePrefix: '+49171' })
    const created = await account.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'Sommerfest', content: 'Hallo {{name}}, wir feiern am Samstag.' },
    })
    const id = created.json().newsletter.id as string
    const scheduled = await account.request({
      method: 'POST',
      url: `/v1/newsletters/${id}/schedule`,
      payload: { scheduled_at: new Date(Date.now() + 1500).toISOString() },
    })
    assert.equal(scheduled.statusCode, 200, scheduled.body)
    assert.equal(scheduled.json().newsletter.template_status, 'APPROVED'.toLowerCase())

    const first = await scene.worker()
    await scene.killWhen(
      first,
      () => received.length >= 800,
      60_000,
      () => `the first worker did not get far: ${received.length}`,
    )
    const receivedAtKill = received.length

    const second = await scene.worker()
    const status = () => newsletterStatus(account, id)
    await scene.waitWhile(async () => (await status()).status !== 'sent', {
      withinMs: 240_000,
      everyMs: 250,
      message: async () => `not finished: ${JSON.stringify(await status())}`,
    })
    await scene.stop(second)

    const final = await status()
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
