import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createTestAccount } from '../../../test/helpers/harness.ts'
import { contactData, harness, receiver, subscribe, withWebhooksHarness } from '../../../test/helpers/webhooks.ts'
import {
  dispatchEvents,
  EVENT_DISPATCH_QUEUE,
  recordEvent,
  recordEvents,
  recordTestEvent,
} from '../../platform/events/events.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import { DELIVERY_QUEUE } from './webhooks.service.ts'

// The deliveries of an event are written in the event's own transaction (the fan-out), not by a dispatch job.
withWebhooksHarness()

/** The account's deliveries and jobs as they stand (no worker runs while a test looks). */
async function owed(accountId: string) {
  const deliveries = await harness.database.query<{
    id: string
    subscription_id: string
    event_id: string
    event_name: string
    state: string
    attempts: number
  }>(
    'SELECT id, subscription_id, event_id, event_name, state, attempts FROM webhook_deliveries WHERE account_id = $1',
    [accountId],
  )
  const jobs = await harness.database.query<{
    queue: string
    payload: { deliveryId?: string }
    concurrency_key: string
  }>('SELECT queue, payload, concurrency_key FROM jobs WHERE account_id = $1', [accountId])
  return { deliveries, jobs }
}

/** Runs `work` with the workers stopped, so what the commit wrote can be read before anything delivers it. */
async function withWorkersStopped<T>(work: () => Promise<T>): Promise<T> {
  await harness.jobs!.stop()
  try {
    return await work()
  } finally {
    await harness.jobs!.start()
  }
}

describe('fan-out at event time', () => {
  test('a committed event owes one pending delivery and one keyed job to each enabled subscription that wants it, and nothing else', async () => {
    const account = await createTestAccount(harness)
    const other = await createTestAccount(harness)
    const contacts = await receiver()
    const both = await receiver()
    const messages = await receiver()
    const disabled = await receiver()
    const foreign = await receiver()
    const contactsId = await subscribe(account, contacts, ['contact.created'])
    const bothId = await subscribe(account, both, ['message.received', 'contact.created'])
    await subscribe(account, messages, ['message.received'])
    const disabledId = await subscribe(account, disabled, ['contact.created'])
    const off = await account.request({ method: 'POST', url: `/v1/webhook-subscriptions/${disabledId}/disable` })
    assert.equal(off.statusCode, 200, off.body)
    await subscribe(other, foreign, ['contact.created'])

    const { event, before } = await withWorkersStopped(async () => {
      const event = await harness.database.orm.transaction((tx) =>
        recordEvent(tx, harness.clock, { accountId: account.accountId, name: 'contact.created', data: contactData(1) }),
      )
      return { event, before: await owed(account.accountId) }
    })
    assert.deepEqual(before.deliveries.map((d) => d.subscription_id).sort(), [contactsId, bothId].sort())
    assert.ok(before.deliveries.every((d) => d.event_id === event.id && d.state === 'pending' && d.attempts === 0))
    assert.equal(before.jobs.length, 2, 'one job a delivery, no dispatch job')
    for (const delivery of before.deliveries) {
      const job = before.jobs.find((j) => j.payload.deliveryId === delivery.id)
      assert.equal(job?.queue, DELIVERY_QUEUE)
      assert.equal(job?.concurrency_key, delivery.subscription_id, 'keyed by its subscription')
    }
    assert.equal((await owed(other.accountId)).deliveries.length, 0, "another account's subscription owes nothing")

    await harness.jobs!.drain()
    assert.equal(contacts.received.length, 1)
    assert.equal(both.received.length, 1)
    assert.equal(messages.received.length + disabled.received.length + foreign.received.length, 0)
    assert.ok([...contacts.received, ...both.received].every((r) => r.verified))
  })

  test('an event whose transaction rolls back owes nothing and is never delivered', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver()
    await subscribe(account, target, ['contact.created'])
    await assert.rejects(
      harness.database.orm.transaction(async (tx) => {
        await recordEvent(tx, harness.clock, {
          accountId: account.accountId,
          name: 'contact.created',
          data: contactData(1),
        })
        throw new Error('the change failed')
      }),
      /the change failed/,
    )
    const { deliveries, jobs } = await owed(account.accountId)
    assert.equal(deliveries.length, 0)
    assert.equal(jobs.length, 0)
    await harness.jobs!.drain()
    assert.equal(target.received.length, 0)
  })

  test('events recorded in bulk and an import batch each owe their deliveries at the commit', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver()
    const id = await subscribe(account, target, ['contact.created'])
    const imported = crypto.randomUUID()
    const before = await withWorkersStopped(async () => {
      await harness.database.orm.transaction(async (tx) => {
        await recordEvents(
          tx,
          harness.clock,
          [1, 2, 3].map((n) => ({
            accountId: account.accountId,
            name: 'contact.created' as const,
            data: contactData(n),
          })),
        )
        // an import writes its events itself (insertEventsSql) and hands their ids on
        await recordTestEvent(tx, {
          accountId: account.accountId,
          id: imported,
          name: 'contact.created',
          data: contactData(4),
          createdAt: harness.clock.now(),
        })
        await dispatchEvents(tx, harness.clock, account.accountId, [imported], 'contact.created')
      })
      return owed(account.accountId)
    })
    assert.equal(before.deliveries.length, 4)
    assert.ok(before.deliveries.every((d) => d.subscription_id === id && d.state === 'pending'))
    assert.ok(before.deliveries.some((d) => d.event_id === imported))
    assert.equal(before.jobs.filter((j) => j.queue === DELIVERY_QUEUE).length, 4)
    assert.equal(before.jobs.filter((j) => j.queue === EVENT_DISPATCH_QUEUE).length, 0)
    await harness.jobs!.drain()
    assert.equal(target.received.length, 4)
    assert.equal(new Set(target.received.map((r) => r.deliveryId)).size, 4, 'each once')
  })

  test('a dispatch job written before the fan-out (an upgrade) still delivers its event, once', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver()
    const id = await subscribe(account, target, ['contact.created'])
    const eventId = crypto.randomUUID()
    await harness.database.orm.transaction(async (tx) => {
      // the outbox row and its dispatch job, as recordEvent wrote them before
      await recordTestEvent(tx, {
        accountId: account.accountId,
        id: eventId,
        name: 'contact.created',
        data: contactData(1),
        createdAt: harness.clock.now(),
      })
      await enqueue(tx, harness.clock, {
        accountId: account.accountId,
        queue: EVENT_DISPATCH_QUEUE,
        payload: { eventId },
      })
    })
    await harness.jobs!.drain()
    assert.deepEqual(
      target.received.map((r) => r.deliveryId),
      [`contact.created:${eventId}`],
    )
    const { deliveries, jobs } = await owed(account.accountId)
    assert.deepEqual(
      deliveries.map((d) => [d.subscription_id, d.state]),
      [[id, 'succeeded']],
    )
    assert.equal(jobs.length, 0)
  })

  test('a dispatch job for events already fanned out writes nothing twice', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver()
    await subscribe(account, target, ['contact.created'])
    await withWorkersStopped(async () => {
      const event = await harness.database.orm.transaction((tx) =>
        recordEvent(tx, harness.clock, { accountId: account.accountId, name: 'contact.created', data: contactData(1) }),
      )
      await harness.database.orm.transaction((tx) =>
        enqueue(tx, harness.clock, {
          accountId: account.accountId,
          queue: EVENT_DISPATCH_QUEUE,
          payload: { eventIds: [event.id] },
        }),
      )
    })
    await harness.jobs!.drain()
    assert.equal(target.received.length, 1)
    assert.equal((await owed(account.accountId)).deliveries.length, 1)
  })
})
