import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { systemClock } from '../../src/platform/clock.ts'
import { recordEvent } from '../../src/platform/events/events.ts'
import { createTestAccount, json } from '../helpers/harness.ts'
import { killScene, needsSharedDatabase, sharedDatabaseUrl } from '../helpers/kill.ts'
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts'

describe('a worker killed mid-delivery', needsSharedDatabase, () => {
  const scene = killScene({
    ownDatabase: false,
    leaseSeconds: 2,
    settings: { DATABASE_URL: sharedDatabaseUrl! },
  })
  let receiver: WebhookReceiver
  after(() => receiver?.close())

  test('loses nothing: deliveries in flight and queued are all made after a restart, in-flight ones again', async () => {
    const { harness } = scene
    const account = await createTestAccount(harness)
    let answering = false
    receiver = await startReceiver({ answer: () => (answering ? 200 : 'hang') })
    const created = await account.request({
      method: 'POST',
      url: '/v1/webhook-subscriptions',
      payload: { url: receiver.url, events: ['contact.created'] },
    })
    const { id, secret } = json<{ id: string; secret: string }>(created)
    receiver.secret = secret

    const first = await scene.worker()
    const eventIds: string[] = []
    for (let i = 0; i < 20; i++) {
      const event = await harness.database.orm.transaction((tx) =>
        recordEvent(tx, systemClock, { accountId: account.accountId, name: 'contact.created', data: { n: i } }),
      )
      eventIds.push(`contact.created:${event.id}`)
    }
    const inFlight = await receiver.waitFor(8, 10_000)
    await scene.kill(first)
    const heldWhenKilled = new Set(inFlight.map((d) => d.deliveryId))

    answering = true
    const second = await scene.worker()
    // Done when all 20 arrived and each delivery held at the kill arrived again (its first receipt counted already).
    const retried = () =>
      [...heldWhenKilled].every((id) => receiver.received.filter((d) => d.deliveryId === id).length >= 2)
    await scene.waitWhile(
      async () => new Set(receiver.received.filter((d) => d.verified).map((d) => d.deliveryId)).size < 20 || !retried(),
      {
        withinMs: 20_000,
        everyMs: 100,
        message: async () => `only ${receiver.unique().length} of 20 events arrived, or a held one was not retried`,
      },
    )
    await scene.stop(second)

    assert.deepEqual(new Set(receiver.received.map((d) => d.deliveryId)), new Set(eventIds))
    for (const deliveryId of heldWhenKilled) {
      assert.ok(
        receiver.received.filter((d) => d.deliveryId === deliveryId).length >= 2,
        `${deliveryId}, in flight at the kill, was attempted again with the same X-Service-Delivery`,
      )
    }
    const rows = await harness.database.query<{ state: string; n: number }>(
      'SELECT state, count(*)::int AS n FROM webhook_deliveries WHERE account_id = $1 AND subscription_id = $2 GROUP BY state',
      [account.accountId, id],
    )
    assert.deepEqual(rows, [{ state: 'succeeded', n: 20 }])
    const left = await harness.database.query('SELECT 1 FROM jobs WHERE account_id = $1', [account.accountId])
    assert.equal(left.length, 0, 'no job is left behind')
  })
})
