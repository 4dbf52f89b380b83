import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createHarness, createTestAccount, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { contactData, harness, receiver, subscribe, withWebhooksHarness } from '../../../test/helpers/webhooks.ts'
import { EVENT_DISPATCH_QUEUE, type EventName, recordEvent, recordEvents } from '../../platform/events/events.ts'
import { claimJobs } from '../../platform/jobs/jobs.ts'
import { JobRunner } from '../../platform/jobs/runner.ts'
import { DELIVERY_QUEUE } from './webhooks.service.ts'
import { dispatchHandler } from './webhooks.worker.ts'

withWebhooksHarness()

const MINUTE = 60_000
const HOUR = 60 * MINUTE

interface Attempt {
  event_id: string
  attempt: number
  attempted_at: string
  status_code: number | null
  error: string | null
  succeeded: boolean
  delivery_state: string
  next_attempt_at: string | null
  duration_ms: number
}

async function emit(
  account: TestAccount,
  name: EventName = 'contact.created',
  data: Record<string, unknown> = contactData(),
) {
  const committed = await harness.database.orm.transaction((tx) =>
    recordEvent(tx, harness.clock, { accountId: account.accountId, name, data }),
  )
  return { ...committed, committedAt: Date.now(), data }
}

async function attempts(account: TestAccount, id: string): Promise<Attempt[]> {
  const response = await account.request({ method: 'GET', url: `/v1/webhook-subscriptions/${id}/deliveries?limit=100` })
  assert.equal(response.statusCode, 200)
  return json<{ deliveries: Attempt[] }>(response).deliveries
}

async function subscription(account: TestAccount, id: string) {
  return json<{ status: string; disabled_reason: string | null; consecutive_failures: number }>(
    await account.request({ method: 'GET', url: `/v1/webhook-subscriptions/${id}` }),
  )
}

describe('delivery (section 6)', () => {
  // How fast (within 1 s of the commit, p99) is measured by bench/webhooks.ts, not asserted here.
  test('an event is POSTed after its commit with the spec body and headers, and the signature verifies', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver()
    await subscribe(account, target)
    const event = await emit(account)
    const [got] = await target.waitFor(1, 10_000)
    assert.equal(got.verified, true, got.reason ?? '')
    assert.equal(got.headers['content-type'], 'application/json')
    assert.equal(got.headers['user-agent'], 'Service-Webhooks/1.0')
    assert.equal(got.headers['x-service-event'], 'contact.created')
    assert.equal(got.deliveryId, `contact.created:${event.id}`)
    assert.equal(got.timestamp, Math.floor(harness.clock.now().getTime() / 1000))
    assert.deepEqual(JSON.parse(got.rawBody.toString()), {
      id: `contact.created:${event.id}`,
      event: 'contact.created',
      created_at: event.createdAt.toISOString(),
      data: event.data,
    })
  })

  test('events recorded in bulk (a contact import) are each delivered once', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver()
    await subscribe(account, target)
    const data = [contactData(1), contactData(2), contactData(3)]
    await harness.database.orm.transaction((tx) =>
      recordEvents(
        tx,
        harness.clock,
        data.map((d) => ({ accountId: account.accountId, name: 'contact.created' as const, contactId: null, data: d })),
      ),
    )
    const got = await target.waitFor(3, 10_000)
    assert.deepEqual(got.map((g) => JSON.parse(g.rawBody.toString()).data.id).sort(), data.map((d) => d.id).sort())
    assert.equal(new Set(got.map((g) => g.deliveryId)).size, 3)
    assert.ok(got.every((g) => g.verified))
  })

  test('events committed while no worker runs are dispatched and delivered in batches: each once, each recorded', async () => {
    const account = await createTestAccount(harness)
    const first = await receiver()
    const second = await receiver()
    const firstId = await subscribe(account, first)
    const secondId = await subscribe(account, second)
    await harness.jobs!.stop()
    const events: string[] = []
    try {
      for (let i = 0; i < 40; i++) events.push((await emit(account, 'contact.created', contactData(i))).wireId)
    } finally {
      await harness.jobs!.start()
    }
    await harness.jobs!.drain()
    for (const [target, id] of [
      [first, firstId],
      [second, secondId],
    ] as const) {
      assert.deepEqual(new Set(target.received.map((r) => r.deliveryId)), new Set(events))
      assert.equal(target.received.length, 40, 'each event once')
      assert.ok(target.received.every((r) => r.verified))
      const history = await attempts(account, id)
      assert.equal(history.length, 40)
      assert.ok(history.every((a) => a.succeeded && a.attempt === 1 && a.delivery_state === 'succeeded'))
    }
    const left = await harness.database.query('SELECT 1 FROM jobs WHERE account_id = $1', [account.accountId])
    assert.equal(left.length, 0, 'every dispatch and delivery job is finished')
  })

  test('each event name is delivered with its own data, only to subscriptions that want it', async () => {
    const account = await createTestAccount(harness)
    const messages = await receiver()
    const all = await receiver()
    await subscribe(account, messages, ['message.received'])
    await subscribe(account, all, ['contact.created', 'message.received', 'conversation.created'])
    const conversation = {
      id: crypto.randomUUID(),
      contact_id: crypto.randomUUID(),
      channel: 'chat',
      created_at: harness.clock.now().toISOString(),
    }
    await emit(account, 'conversation.created', conversation)
    const message = {
      id: crypto.randomUUID(),
      conversation_id: conversation.id,
      contact_id: conversation.contact_id,
      channel: 'chat',
      direction: 'inbound',
      type: 'text',
      text: 'Hallo',
      media_url: '',
      media_mime: '',
      created_at: harness.clock.now().toISOString(),
    }
    await emit(account, 'message.received', message)
    await all.waitFor(2)
    await messages.waitFor(1)
    await harness.jobs!.drain()
    assert.equal(messages.received.length, 1)
    assert.equal(messages.received[0].body.event, 'message.received')
    assert.deepEqual(messages.received[0].body.data, message)
    const byEvent = Object.fromEntries(all.received.map((d) => [d.body.event, d.body.data]))
    assert.deepEqual(byEvent, { 'conversation.created': conversation, 'message.received': message })
    assert.ok(all.received.every((d) => d.verified))
  })

  test("an account's events never reach another account's subscription", async () => {
    const owner = await createTestAccount(harness)
    const other = await createTestAccount(harness)
    const target = await receiver()
    await subscribe(other, target)
    await emit(owner)
    await harness.jobs!.drain()
    assert.equal(target.received.length, 0)
  })

  test('a failed delivery is retried after 1 min, 5 min, 30 min, 2 h, 6 h and 12 h, 7 attempts, then recorded as exhausted', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver(() => 500)
    const id = await subscribe(account, target)
    const event = await emit(account)
    await target.waitFor(1)
    await harness.jobs!.drain()
    const delays = [1 * MINUTE, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 6 * HOUR, 12 * HOUR]
    for (const [i, delay] of delays.entries()) {
      harness.clock.advance(delay - 1000)
      await harness.jobs!.drain()
      assert.equal(target.received.length, i + 1, `not before ${delay / MINUTE} min`)
      harness.clock.advance(1000)
      await harness.jobs!.drain()
      assert.equal(target.received.length, i + 2, `retry ${i + 1} after ${delay / MINUTE} min`)
    }
    harness.clock.advance(48 * HOUR)
    await harness.jobs!.drain()
    assert.equal(target.received.length, 7, 'dropped after the seventh attempt')
    assert.ok(target.received.every((d) => d.deliveryId === `contact.created:${event.id}` && d.verified))
    assert.equal(new Set(target.received.map((d) => d.timestamp)).size, 7, 'each attempt carries its own timestamp')
    const history = (await attempts(account, id)).reverse()
    assert.deepEqual(
      history.map((a) => [a.attempt, a.status_code, a.succeeded, a.delivery_state]),
      [1, 2, 3, 4, 5, 6, 7].map((n) => [n, 500, false, n < 7 ? 'retrying' : 'exhausted']),
    )
    for (const [i, a] of history.entries()) {
      const expected = i < 6 ? Date.parse(a.attempted_at) + delays[i] : null
      assert.equal(a.next_attempt_at ? Date.parse(a.next_attempt_at) : null, expected)
      assert.equal(a.event_id, `contact.created:${event.id}`)
    }
  })

  test('a retry after a failure that succeeds ends the delivery', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver((n) => (n === 1 ? 503 : 204))
    const id = await subscribe(account, target)
    await emit(account)
    await target.waitFor(1)
    await harness.jobs!.drain()
    harness.clock.advance(MINUTE)
    await harness.jobs!.drain()
    harness.clock.advance(24 * HOUR)
    await harness.jobs!.drain()
    assert.equal(target.received.length, 2)
    const history = await attempts(account, id)
    assert.deepEqual(
      history.map((a) => [a.attempt, a.status_code, a.delivery_state]),
      [
        [2, 204, 'succeeded'],
        [1, 503, 'retrying'],
      ],
    )
    assert.equal((await subscription(account, id)).consecutive_failures, 0)
  })

  test('a 410 answer disables the subscription at once, with disabled_reason gone_410', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver(() => 410)
    const id = await subscribe(account, target)
    await emit(account)
    await target.waitFor(1)
    await harness.jobs!.drain()
    const after410 = await subscription(account, id)
    assert.equal(after410.status, 'disabled')
    assert.equal(after410.disabled_reason, 'gone_410')
    const [only] = await attempts(account, id)
    assert.deepEqual([only.status_code, only.delivery_state, only.next_attempt_at], [410, 'dropped', null])
    await emit(account)
    harness.clock.advance(24 * HOUR)
    await harness.jobs!.drain()
    assert.equal(target.received.length, 1, 'nothing more is sent, neither retries nor new events')
  })

  test('25 failed attempts in a row disable the subscription; a success in between resets the count', async () => {
    const account = await createTestAccount(harness)
    let healthy = false
    const target = await receiver(() => (healthy ? 200 : 500))
    const id = await subscribe(account, target)
    for (let i = 0; i < 24; i++) await emit(account)
    await target.waitFor(24)
    await harness.jobs!.drain()
    assert.equal((await subscription(account, id)).consecutive_failures, 24)
    healthy = true
    await emit(account)
    await target.waitFor(25)
    await harness.jobs!.drain()
    const reset = await subscription(account, id)
    assert.deepEqual([reset.status, reset.consecutive_failures], ['enabled', 0])

    healthy = false
    for (let i = 0; i < 24; i++) await emit(account)
    await harness.jobs!.drain()
    assert.equal((await subscription(account, id)).status, 'enabled', '24 failures are not enough')
    await emit(account)
    await harness.jobs!.drain()
    const disabled = await subscription(account, id)
    assert.deepEqual([disabled.status, disabled.disabled_reason], ['disabled', 'consecutive_failures'])
    const sent = target.received.length
    harness.clock.advance(24 * HOUR)
    await harness.jobs!.drain()
    assert.equal(target.received.length, sent, 'pending retries of a disabled subscription are dropped')
  })

  test('enable turns a disabled subscription back on: later events are delivered', async () => {
    const account = await createTestAccount(harness)
    let gone = true
    const target = await receiver(() => (gone ? 410 : 200))
    const id = await subscribe(account, target)
    await emit(account)
    await target.waitFor(1)
    await harness.jobs!.drain()
    assert.equal((await subscription(account, id)).status, 'disabled')
    gone = false
    const response = await account.request({ method: 'POST', url: `/v1/webhook-subscriptions/${id}/enable` })
    assert.equal(response.statusCode, 200)
    assert.deepEqual(
      [json<{ status: string }>(response).status, json<{ disabled_reason: null }>(response).disabled_reason],
      ['enabled', null],
    )
    const event = await emit(account)
    await target.waitFor(2)
    assert.equal(target.received[1].deliveryId, `contact.created:${event.id}`)
  })

  test('a redirect is not followed: the 3xx counts as a failed attempt', async () => {
    const account = await createTestAccount(harness)
    const other = await receiver()
    const target = await receiver(() => ({ status: 307, headers: { location: other.url } }))
    const id = await subscribe(account, target)
    await emit(account)
    await target.waitFor(1)
    await harness.jobs!.drain()
    assert.equal(other.received.length, 0)
    const [first] = await attempts(account, id)
    assert.deepEqual([first.status_code, first.succeeded, first.delivery_state], [307, false, 'retrying'])
  })

  test('a receiver that takes longer than 5 s fails the attempt as a timeout', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver(() => 'hang')
    const id = await subscribe(account, target)
    await emit(account)
    await target.waitFor(1)
    await harness.jobs!.drain()
    const [first] = await attempts(account, id)
    assert.deepEqual([first.status_code, first.error, first.delivery_state], [null, 'timeout', 'retrying'])
    assert.ok(first.duration_ms >= 4900, `gave up after ${first.duration_ms} ms, before the 5 s timeout`)
  })

  test('a slow receiver does not delay deliveries to another subscription', async () => {
    const slowAccount = await createTestAccount(harness)
    const fastAccount = await createTestAccount(harness)
    // The slow receiver holds every answer until the test opens the gate.
    let open = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const slow = await receiver(async () => {
      await gate
      return 200
    })
    const fast = await receiver()
    await subscribe(slowAccount, slow)
    await subscribe(fastAccount, fast)
    for (let i = 0; i < 24; i++) await emit(slowAccount)
    await slow.waitFor(8)
    const event = await emit(fastAccount)
    const [got] = await fast.waitFor(1, 10_000)
    assert.equal(got.deliveryId, `contact.created:${event.id}`)
    assert.equal(slow.received.length, 8, 'at most 8 at once to one subscription, all still unanswered')
    open()
    await harness.jobs!.drain()
    assert.equal(slow.unique().length, 24)
  })

  test('after rotate-secret, deliveries are signed with the new secret only', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver()
    const id = await subscribe(account, target)
    const old = target.secret
    const rotated = json<{ secret: string }>(
      await account.request({ method: 'POST', url: `/v1/webhook-subscriptions/${id}/rotate-secret` }),
    )
    target.secret = rotated.secret
    await emit(account)
    const [got] = await target.waitFor(1)
    assert.equal(got.verified, true)
    target.secret = old
    await emit(account)
    await target.waitFor(2)
    assert.equal(target.received[1].verified, false, 'the old secret no longer verifies')
  })

  test('a deleted subscription receives no more retries', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver(() => 500)
    const id = await subscribe(account, target)
    await emit(account)
    await target.waitFor(1)
    await harness.jobs!.drain()
    await account.request({ method: 'DELETE', url: `/v1/webhook-subscriptions/${id}` })
    harness.clock.advance(24 * HOUR)
    await harness.jobs!.drain()
    assert.equal(target.received.length, 1)
  })

  test('a delivery claimed by a worker that died is attempted again once its lease expires', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver()
    await subscribe(account, target)
    await harness.jobs!.stop()
    try {
      const event = await emit(account)
      const dispatcher = new JobRunner({
        database: harness.database,
        clock: harness.clock,
        handlers: { [EVENT_DISPATCH_QUEUE]: dispatchHandler({ clock: harness.clock }) },
        concurrency: 1,
        leaseMs: 30_000,
      })
      await dispatcher.start()
      await dispatcher.drain()
      await dispatcher.stop()
      const claimed = await claimJobs(harness.database.orm, harness.clock, {
        queue: DELIVERY_QUEUE,
        limit: 10,
        perKey: 8,
        leaseMs: harness.config.jobLeaseSeconds * 1000,
      })
      assert.equal(claimed.length, 1, 'the dying worker holds the delivery')
      await harness.jobs!.start()
      await harness.jobs!.drain()
      assert.equal(target.received.length, 0, 'not while its lease holds')
      harness.clock.advance(harness.config.jobLeaseSeconds * 1000 + 1)
      await harness.jobs!.drain()
      assert.equal(target.received.length, 1)
      assert.equal(target.received[0].deliveryId, `contact.created:${event.id}`)
      assert.equal(target.received[0].verified, true)
    } finally {
      await harness.jobs!.start()
    }
  })

  test('the deliveries list is paginated, newest first', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver()
    const id = await subscribe(account, target)
    for (let i = 0; i < 3; i++) {
      await emit(account)
      await target.waitFor(i + 1)
      await harness.jobs!.drain()
      harness.clock.advance(1000)
    }
    const page = json<{ deliveries: Attempt[]; has_more: boolean; next_offset: number | null; limit: number }>(
      await account.request({ method: 'GET', url: `/v1/webhook-subscriptions/${id}/deliveries?limit=2` }),
    )
    assert.equal(page.deliveries.length, 2)
    assert.deepEqual([page.has_more, page.next_offset, page.limit], [true, 2, 2])
    assert.ok(Date.parse(page.deliveries[0].attempted_at) > Date.parse(page.deliveries[1].attempted_at))
    assert.equal(page.deliveries[0].event_id, target.received[2].deliveryId)
  })
})

describe('the SSRF guard on delivery', () => {
  test('an address that now resolves to loopback is refused at every attempt, and nothing reaches it', async () => {
    // on a shared PostgreSQL database the other harness's runner would take these jobs too
    await harness.jobs!.stop()
    const strict = await createHarness({ config: { allowPrivateTargets: false }, workers: true })
    const target = await receiver()
    try {
      const account = await createTestAccount(strict)
      const created = await account.request({
        method: 'POST',
        url: '/v1/webhook-subscriptions',
        payload: { url: 'https://hooks.example.com/herold', events: ['contact.created'] },
      })
      const { id } = json<{ id: string }>(created)
      // the name was public when subscribed; its address changed since (DNS is the subscriber's)
      await strict.database.query('UPDATE webhook_subscriptions SET url = $1 WHERE account_id = $2 AND id = $3', [
        target.url.replace('127.0.0.1', 'localhost'),
        account.accountId,
        id,
      ])
      await strict.database.orm.transaction((tx) =>
        recordEvent(tx, strict.clock, { accountId: account.accountId, name: 'contact.created', data: contactData() }),
      )
      await strict.jobs!.drain()
      strict.clock.advance(MINUTE)
      await strict.jobs!.drain()
      const history = json<{ deliveries: Attempt[] }>(
        await account.request({ method: 'GET', url: `/v1/webhook-subscriptions/${id}/deliveries` }),
      ).deliveries
      assert.deepEqual(
        history.map((a) => [a.attempt, a.error, a.status_code]),
        [
          [2, 'blocked_target', null],
          [1, 'blocked_target', null],
        ],
      )
      assert.equal(target.received.length, 0)
    } finally {
      await strict.close()
      await harness.jobs!.start()
    }
  })
})

describe('deliveries in batches per subscription', () => {
  test('deliveries of one subscription claimed together: the one that fails alone is retried, after 1 min', async () => {
    const account = await createTestAccount(harness)
    let failing = ''
    const seen = new Map<string, number>()
    const target = await receiver((_, delivery) => {
      const n = (seen.get(delivery.deliveryId) ?? 0) + 1
      seen.set(delivery.deliveryId, n)
      return delivery.deliveryId === failing && n === 1 ? 500 : 204
    })
    const id = await subscribe(account, target)
    await harness.jobs!.stop()
    const events: string[] = []
    try {
      for (let i = 0; i < 12; i++) events.push((await emit(account, 'contact.created', contactData(i))).wireId)
      failing = events[5]
    } finally {
      await harness.jobs!.start()
    }
    await harness.jobs!.drain()
    assert.deepEqual(new Set(target.received.map((r) => r.deliveryId)), new Set(events))
    assert.equal(target.received.length, 12, 'each delivery attempted once')
    const first = await attempts(account, id)
    assert.equal(first.filter((a) => a.succeeded && a.attempt === 1).length, 11)
    const [failed] = first.filter((a) => !a.succeeded)
    assert.deepEqual([failed.event_id, failed.status_code, failed.delivery_state], [failing, 500, 'retrying'])
    assert.equal(Date.parse(failed.next_attempt_at!), Date.parse(failed.attempted_at) + MINUTE)

    harness.clock.advance(MINUTE - 1000)
    await harness.jobs!.drain()
    assert.equal(target.received.length, 12, 'not before its minute')
    harness.clock.advance(1000)
    await harness.jobs!.drain()
    assert.equal(target.received.length, 13)
    assert.deepEqual(
      (await attempts(account, id))
        .filter((a) => a.event_id === failing)
        .map((a) => [a.attempt, a.status_code, a.delivery_state]),
      [
        [2, 204, 'succeeded'],
        [1, 500, 'retrying'],
      ],
    )
    const left = await harness.database.query('SELECT 1 FROM jobs WHERE account_id = $1', [account.accountId])
    assert.equal(left.length, 0)
  })

  test('a subscription whose receiver hangs and one that answers 500 never delay another of the same account', async () => {
    const account = await createTestAccount(harness)
    let open = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const hanging = await receiver(async () => {
      await gate
      return 204
    })
    const failing = await receiver(() => 500)
    const fast = await receiver()
    await subscribe(account, hanging)
    const failingId = await subscribe(account, failing)
    await subscribe(account, fast)
    const events: string[] = []
    for (let i = 0; i < 20; i++) events.push((await emit(account, 'contact.created', contactData(i))).wireId)
    // every delivery to the fast receiver arrives while the hanging one has not answered a single request
    const got = await fast.waitFor(20, 30_000)
    assert.deepEqual(new Set(got.map((r) => r.deliveryId)), new Set(events))
    await failing.waitFor(20, 30_000)
    // their records follow the answers
    let failed = await attempts(account, failingId)
    for (let i = 0; failed.length < 20 && i < 300; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      failed = await attempts(account, failingId)
    }
    assert.equal(failed.length, 20)
    assert.ok(failed.every((a) => a.status_code === 500 && a.delivery_state === 'retrying'))
    open()
    await harness.jobs!.drain()
    assert.equal(fast.received.length, 20, 'each once')
  })
})

describe('a 410 among a batch of deliveries', () => {
  test('disables the subscription at once: the deliveries waiting behind it are dropped, not sent', async () => {
    const account = await createTestAccount(harness)
    const target = await receiver(() => 410)
    const id = await subscribe(account, target)
    await harness.jobs!.stop()
    try {
      for (let i = 0; i < 24; i++) await emit(account, 'contact.created', contactData(i))
    } finally {
      await harness.jobs!.start()
    }
    await harness.jobs!.drain()
    const after410 = await subscription(account, id)
    assert.deepEqual([after410.status, after410.disabled_reason], ['disabled', 'gone_410'])
    assert.ok(target.received.length <= 8, `${target.received.length} requests: only those already in flight`)
    const states = await harness.database.query<{ state: string; n: number }>(
      'SELECT state, count(*)::int AS n FROM webhook_deliveries WHERE account_id = $1 GROUP BY state',
      [account.accountId],
    )
    assert.deepEqual(states, [{ state: 'dropped', n: 24 }])
    const left = await harness.database.query('SELECT 1 FROM jobs WHERE account_id = $1', [account.accountId])
    assert.equal(left.length, 0)
  })
})
