import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createTestAccount } from '../helpers/harness.ts'
import {
  confirmedContact,
  countEach,
  insertConfirmedContacts,
  killScene,
  needsSharedDatabase,
  newsletterStatus,
  scheduleNewsletter,
  whatsappAnswers,
} from '../helpers/kill.ts'

const CONCURRENCY = 16
const RECIPIENTS = 2_000
const BIG_PACE = 200
const SMALL_SENDS = 10
const BIG_NUMBER = '777000331'
const SMALL_NUMBER = '777000332'
const WABA = '888331'

const SCENE = 'two worker processes, one killed while one account fans out a newsletter and another sends one by one'

describe(SCENE, needsSharedDatabase, () => {
  /** templates approved on submission; every message recorded in arrival order with its number */
  const received: Array<{ number: string; to: string; sendId: string }> = []
  const scene = killScene({
    graph: whatsappAnswers({
      wabaId: WABA,
      delayMs: 5,
      idPrefix: 'wamid.F',
      record: (body, number) =>
        received.push({ number, to: String(body.to), sendId: String(body.biz_opaque_callback_data ?? '') }),
    }),
    leaseSeconds: 2,
    concurrency: CONCURRENCY,
  })

  test("the small account's messages go out among the newsletter's, each exactly once, nobody's twice", async () => {
    const { harness } = scene
    const big = await createTestAccount(harness, { plan: { messagesPerMonth: 100_000 } })
    const small = await createTestAccount(harness)
    await scene.connectWhatsApp(big.accountId, { phoneNumberId: BIG_NUMBER, wabaId: WABA, messagesPerSecond: BIG_PACE })
    await scene.connectWhatsApp(small.accountId, { phoneNumberId: SMALL_NUMBER, wabaId: WABA, messagesPerSecond: 80 })
    await insertConfirmedContacts(harness, big.accountId, RECIPIENTS, { phonePrefix: '+49171' })
    const contactId = await confirmedContact(harness, small, 'Erika Klein', '+4915112345678')
    const template = await small.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: 'Abholung', content: 'Hallo {{name}}, deine Bestellung {{nummer}} liegt bereit.' },
    })
    const templateId = template.json().template.id as string
    const submitted = await small.request({ method: 'POST', url: `/v1/templates/${templateId}/submit` })
    assert.equal(submitted.json().template.provider_status, 'approved', submitted.body)

    const { id: newsletterId } = await scheduleNewsletter(big, 1000)

    const workers = [await scene.worker(), await scene.worker()]
    const bigReceived = () => received.filter((r) => r.number === BIG_NUMBER).length
    await scene.waitWhile(async () => bigReceived() < 200, {
      withinMs: 60_000,
      everyMs: 20,
      message: async () => `the newsletter did not start: ${bigReceived()}`,
    })

    // the small account sends one message every 200 ms; one worker is killed half-way
    const sendIds: string[] = []
    for (let i = 1; i <= SMALL_SENDS; i++) {
      const response = await small.request({
        method: 'POST',
        url: '/v1/messages',
        payload: { contact_id: contactId, template: { id: templateId, variables: { nummer: `A-${i}` } } },
      })
      assert.equal(response.statusCode, 202, response.body)
      sendIds.push(response.json().send_id as string)
      if (i === SMALL_SENDS / 2) {
        await scene.kill(workers[0])
      }
      await new Promise((r) => setTimeout(r, 200))
    }
    const bigAtLastSmallSend = bigReceived()

    await scene.newsletterSent(big, newsletterId)
    await scene.stop(workers[1])

    // the newsletter: exactly once, or ended interrupted
    const final = await newsletterStatus(big, newsletterId)
    assert.equal(final.recipients, RECIPIENTS)
    const { twice } = countEach(received.filter((x) => x.number === BIG_NUMBER).map((r) => r.to))
    assert.deepEqual(twice, [], 'no recipient of the newsletter twice')
    const interrupted = final.skip_reasons.interrupted ?? 0
    assert.ok(interrupted <= CONCURRENCY, `at most the sends in flight at the kill ended interrupted: ${interrupted}`)
    assert.equal(final.counts.sent, RECIPIENTS - interrupted, JSON.stringify(final))

    // the small account's messages: each at the provider at most once, sent unless it was in flight at the kill
    const smallArrivals = received.flatMap((r, at) => (r.number === SMALL_NUMBER ? [{ ...r, at }] : []))
    for (const id of sendIds) {
      const arrivals = smallArrivals.filter((r) => r.sendId === id).length
      const send = (await small.request({ method: 'GET', url: `/v1/sends/${id}` })).json()
      assert.ok(arrivals <= 1, `send ${id} reached the provider ${arrivals} times`)
      if (send.status === 'failed') assert.equal(send.reason, 'interrupted', JSON.stringify(send))
      else assert.equal(send.status, 'sent', JSON.stringify(send))
    }
    // fairness: the small account did not wait behind the newsletter's queue. Its last message reached the provider
    // while most of what was left of the newsletter when it was queued was still to go (a FIFO claim sent it after
    // every queued newsletter send: none after it). No timing: the order at the provider says it.
    const lastSmall = Math.max(...smallArrivals.map((r) => r.at))
    const bigAfterLastSmall = received.slice(lastSmall + 1).filter((r) => r.number === BIG_NUMBER).length
    assert.ok(
      bigAfterLastSmall >= (RECIPIENTS - bigAtLastSmallSend - interrupted) / 2,
      `the small account's last message arrived with ${bigAfterLastSmall} newsletter messages still to go (${bigAtLastSmallSend} had gone when it was queued)`,
    )
    console.log(
      `# fairness kill test: ${bigAtLastSmallSend} of ${RECIPIENTS} newsletter messages out when the small account's last was queued, ${bigAfterLastSmall} after it arrived; ${interrupted} interrupted`,
    )
  })
})
