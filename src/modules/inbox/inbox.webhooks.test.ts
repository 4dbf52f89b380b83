import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sandboxAccount as fixtureAccount, sandboxInbound as inbound } from '../../../test/helpers/fixtures.ts'
import { type Harness, json } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { startReceiver } from '../../../test/helpers/webhook-receiver.ts'
import { subscribe } from '../../../test/helpers/webhooks.ts'

// What an inbound message owes a webhook subscriber: message.received (and conversation.created for a new one),
// written with the message.

let harness: Harness

harnessPerFile({ config: { allowPrivateTargets: true }, workers: true }, (created) => {
  harness = created
})

const sandboxAccount = () => fixtureAccount(harness)

interface Msg {
  id: string
  created_at: string
}

describe('inbound messages and webhooks', () => {
  test('message.received and conversation.created reach a webhook subscriber', async () => {
    const account = await sandboxAccount()
    const receiver = await startReceiver({ now: () => harness.clock.now() })
    try {
      await subscribe(account, receiver, ['message.received', 'conversation.created'])
      await inbound(account, { from: '+491513333333', text: 'Guten Tag' })
      await harness.jobs?.drain()
      await receiver.waitFor(2)
      const byEvent = new Map(receiver.unique().map((d) => [d.event, d]))
      const message = byEvent.get('message.received')
      const conversation = byEvent.get('conversation.created')
      assert.ok(message?.verified && conversation?.verified)
      assert.deepEqual(Object.keys(message.body.data).sort(), [
        'channel',
        'contact_id',
        'conversation_id',
        'created_at',
        'direction',
        'id',
        'media_mime',
        'media_url',
        'text',
        'type',
      ])
      assert.equal(message.body.data.text, 'Guten Tag')
      const [stored] = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages' })).messages
      assert.equal(message.body.data.id, stored.id)
      assert.equal(message.body.data.created_at, stored.created_at)
      assert.deepEqual(Object.keys(conversation.body.data).sort(), ['channel', 'contact_id', 'created_at', 'id'])
      assert.equal(conversation.body.data.id, message.body.data.conversation_id)
    } finally {
      await receiver.close()
    }
  })

  test("an inbound message's webhook deliveries are written with it, with no dispatch job", async () => {
    const account = await sandboxAccount()
    const receiver = await startReceiver({ now: () => harness.clock.now() })
    try {
      await subscribe(account, receiver, ['message.received'])
      // nothing runs between the inbound commit and the look at what it wrote
      await harness.jobs?.stop()
      let owed: Array<{ event_id: string; event_name: string; queue: string | null }>
      let dispatchJobs: number
      try {
        await inbound(account, { from: '+491513333334', text: 'erste' })
        await inbound(account, { from: '+491513333334', text: 'zweite' })
        owed = await harness.database.query(
          `SELECT d.event_id, d.event_name, j.queue FROM webhook_deliveries d
             LEFT JOIN jobs j ON j.account_id = d.account_id AND j.payload->>'deliveryId' = d.id::text
           WHERE d.account_id = $1 ORDER BY d.created_at, d.id`,
          [account.accountId],
        )
        dispatchJobs = Number(
          (
            await harness.database.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM jobs WHERE account_id = $1 AND queue = 'event.dispatch'`,
              [account.accountId],
            )
          )[0].n,
        )
      } finally {
        await harness.jobs?.start()
      }
      assert.equal(owed.length, 2, 'one delivery a message, at the commit')
      assert.ok(owed.every((d) => d.event_name === 'message.received' && d.queue === 'webhook.deliver'))
      assert.equal(dispatchJobs, 0, 'no dispatch job stands between the message and its delivery')
      await harness.jobs?.drain()
      await receiver.waitFor(2)
      assert.deepEqual(
        receiver
          .unique()
          .map((d) => d.body.data.text)
          .sort(),
        ['erste', 'zweite'],
      )
    } finally {
      await receiver.close()
    }
  })
})
