import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { after, before, describe, test } from 'node:test'
import { systemClock } from '../../src/platform/clock.ts'
import { recordEvent } from '../../src/platform/events/events.ts'
import { createHarness, createTestAccount, type Harness, json } from '../helpers/harness.ts'
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts'
import { startWorker } from '../helpers/worker.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL
const LEASE_SECONDS = 2

/** A worker process. */
function startWorkerFor(harness: Harness): Promise<ChildProcess> {
  return startWorker(harness, { DATABASE_URL: databaseUrl!, HEROLD_JOB_LEASE_SECONDS: String(LEASE_SECONDS) })
}

describe('a worker killed mid-delivery', {
  skip: databaseUrl ? false : 'needs HEROLD_TEST_DATABASE_URL (a PostgreSQL shared by processes)',
}, () => {
  let harness: Harness
  let receiver: WebhookReceiver
  const children: ChildProcess[] = []

  before(async () => {
    harness = await createHarness({ config: { allowPrivateTargets: true } })
  })
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await receiver?.close()
    await harness.close()
  })

  test('loses nothing: deliveries in flight and queued are all made after a restart, in-flight ones again', async () => {
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

    const first = await startWorkerFor(harness)
    children.push(first)
    const eventIds: string[] = []
    for (let i = 0; i < 20; i++) {
      const event = await harness.database.orm.transaction((tx) =>
        recordEvent(tx, systemClock, { accountId: account.accountId, name: 'contact.created', data: { n: i } }),
      )
      eventIds.push(`contact.created:${event.id}`)
    }
    const inFlight = await receiver.waitFor(8, 10_000)
    first.kill('SIGKILL')
    await once(first, 'exit')
    const heldWhenKilled = new Set(inFlight.map((d) => d.deliveryId))

    answering = true
    const second = await startWorkerFor(harness)
    children.push(second)
    const deadline = Date.now() + 20_000
    // Done when all 20 arrived and each delivery held at the kill arrived again (its first receipt counted already).
    const retried = () =>
      [...heldWhenKilled].every((id) => receiver.received.filter((d) => d.deliveryId === id).length >= 2)
    while (new Set(receiver.received.filter((d) => d.verified).map((d) => d.deliveryId)).size < 20 || !retried()) {
      assert.ok(
        Date.now() < deadline,
        `only ${receiver.unique().length} of 20 events arrived, or a held one was not retried`,
      )
      await new Promise((r) => setTimeout(r, 100))
    }
    second.kill('SIGTERM')
    await once(second, 'exit')

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
