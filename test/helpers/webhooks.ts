import assert from 'node:assert/strict'
import { after, afterEach, before } from 'node:test'
import type { EventName } from '../../src/platform/events/events.ts'
import { createHarness, type Harness, json, type TestAccount } from './harness.ts'
import { type Answer, type ReceivedDelivery, startReceiver, type WebhookReceiver } from './webhook-receiver.ts'

// What the webhooks test files share: a harness whose workers deliver to receivers on this machine, the receivers
// (closed after each test), a subscription made over the API, and a contact.created event's data.

/** The test file's harness (set before its tests run, by withWebhooksHarness). */
export let harness: Harness
const receivers: WebhookReceiver[] = []

/**
 * The file's harness, made before its tests (workers running, deliveries to this machine allowed) and closed after
 * them (read it as `harness`); the receivers a test started are closed after it.
 */
export function withWebhooksHarness(): void {
  before(async () => {
    harness = await createHarness({ config: { allowPrivateTargets: true }, workers: true })
  })
  after(() => harness.close())
  afterEach(async () => {
    for (const receiver of receivers.splice(0)) await receiver.close()
  })
}

/** A receiver on loopback on the harness's clock; `answer` gets the number of the request (1, 2, …) and the request. */
export async function receiver(
  answer?: (n: number, delivery: ReceivedDelivery) => Answer | Promise<Answer>,
): Promise<WebhookReceiver> {
  let n = 0
  const r = await startReceiver({
    now: () => harness.clock.now(),
    answer: answer ? (delivery) => answer(++n, delivery) : undefined,
  })
  receivers.push(r)
  return r
}

/** Subscribes `target` to `events` through POST /v1/webhook-subscriptions and hands it the secret; the id. */
export async function subscribe(
  account: TestAccount,
  target: WebhookReceiver,
  events: EventName[] = ['contact.created'],
): Promise<string> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/webhook-subscriptions',
    payload: { url: target.url, events },
  })
  assert.equal(response.statusCode, 201, response.body)
  const body = json<{ id: string; secret: string }>(response)
  target.secret = body.secret
  return body.id
}

/** A contact.created event's data as the contacts module writes it (`n` tells the contacts apart). */
export const contactData = (n = 1) => ({
  id: crypto.randomUUID(),
  name: `Contact ${n}`,
  email: `c${n}@example.com`,
  phone: '',
  optin_chat: 'none',
  optin_email: 'none',
  tags: [],
  language: 'de',
  source: 'api',
  created_at: harness.clock.now().toISOString(),
})
