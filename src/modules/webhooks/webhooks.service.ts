import { randomUUID } from 'node:crypto'
import type { Static } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { type EventName, recordTestEvent } from '../../platform/events/events.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { type Page, toPage } from '../../platform/http/pagination.ts'
import { cancelQueuedJobs, enqueue } from '../../platform/jobs/jobs.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import { CONTACT_EVENT_FIELDS } from '../contacts/index.ts'
import * as repository from './webhooks.repository.ts'
import {
  checkSubscriptionUrl,
  deliveryBody,
  generateSigningSecret,
  testEventOf,
  wireEventId,
} from './webhooks.rules.ts'
import type {
  CreateSubscriptionBody,
  Delivery,
  DeliveryAttempt,
  Subscription,
  SubscriptionWithSecret,
  UpdateSubscriptionBody,
} from './webhooks.schemas.ts'

export const DELIVERY_QUEUE = 'webhook.deliver'

export type SubscriptionView = Static<typeof Subscription>
export type SubscriptionWithSecretView = Static<typeof SubscriptionWithSecret>
export type DeliveryAttemptView = Static<typeof DeliveryAttempt>

export interface WebhooksServiceDeps {
  db: Db
  clock: Clock
  secrets: SecretBox
  allowPrivateTargets: boolean
}

export function subscriptionView(row: repository.SubscriptionRow): SubscriptionView {
  return {
    id: row.id,
    url: row.url,
    events: row.events as SubscriptionView['events'],
    status: row.status,
    disabled_reason: row.disabledReason ?? null,
    disabled_at: row.disabledAt ? row.disabledAt.toISOString() : null,
    consecutive_failures: row.consecutiveFailures,
    created_at: row.createdAt.toISOString(),
  }
}

/** The event a delivery or attempt carries, as the API names it. */
function eventOf(row: { eventName: string; eventId: string }) {
  return {
    event_id: wireEventId({ name: row.eventName, id: row.eventId }),
    event: row.eventName as DeliveryView['event'],
  }
}

function attemptView(row: repository.AttemptRow): DeliveryAttemptView {
  return {
    id: row.id,
    delivery_id: row.deliveryId,
    ...eventOf(row),
    attempt: row.attempt,
    attempted_at: row.attemptedAt.toISOString(),
    duration_ms: row.durationMs,
    succeeded: row.succeeded,
    status_code: row.statusCode,
    error: row.error as DeliveryAttemptView['error'],
    delivery_state: row.deliveryState,
    next_attempt_at: row.nextAttemptAt ? row.nextAttemptAt.toISOString() : null,
  }
}

/** What each event is, and the fields of its data (section 6). */
export const EVENT_TYPES: Array<{ name: EventName; description: string; data_fields: string[] }> = [
  {
    name: 'contact.created',
    description: 'a contact was created (API, import, landing page, or a first inbound message)',
    data_fields: CONTACT_EVENT_FIELDS,
  },
  {
    name: 'message.received',
    description: 'an inbound message was received from a contact',
    data_fields: [
      'id',
      'conversation_id',
      'contact_id',
      'channel',
      'direction',
      'type',
      'text',
      'media_url',
      'media_mime',
      'created_at',
    ],
  },
  {
    name: 'conversation.created',
    description: 'a conversation with a contact was created on a channel',
    data_fields: ['id', 'contact_id', 'channel', 'created_at'],
  },
]

/** The data of a test event: the event's own fields with example values, and test: true. */
function testData(name: EventName, at: Date): Record<string, unknown> {
  const created_at = at.toISOString()
  const contact = '00000000-0000-4000-8000-000000000001'
  const conversation = '00000000-0000-4000-8000-000000000002'
  if (name === 'contact.created') {
    return {
      test: true,
      id: contact,
      name: 'Test Contact',
      email: 'test@example.com',
      phone: '+4915100000000',
      optin_chat: 'none',
      optin_email: 'none',
      tags: [],
      language: 'de',
      source: 'api',
      fields: {},
      created_at,
    }
  }
  if (name === 'message.received') {
    return {
      test: true,
      id: '00000000-0000-4000-8000-000000000003',
      conversation_id: conversation,
      contact_id: contact,
      channel: 'chat',
      direction: 'inbound',
      type: 'text',
      text: 'This is a test event from Herold',
      media_url: '',
      media_mime: '',
      created_at,
    }
  }
  return { test: true, id: conversation, contact_id: contact, channel: 'chat', created_at }
}

export type DeliveryView = Static<typeof Delivery>

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function webhooksService(deps: WebhooksServiceDeps) {
  const { db, clock, secrets } = deps

  async function requireSubscription(tenant: TenantContext, id: string, tx: Db = db, lock = false) {
    const row = UUID.test(id) ? await repository.findSubscription(tx, tenant.accountId, id, { lock }) : null
    if (!row) throw notFound('webhook subscription')
    return row
  }

  async function deliveryView(tenant: TenantContext, row: repository.DeliveryRow): Promise<DeliveryView> {
    const event = await repository.findEvent(db, tenant.accountId, row.eventId)
    const history = await repository.attemptsOfDelivery(db, tenant.accountId, row.subscriptionId, row.id)
    const payload = event
      ? (JSON.parse(
          deliveryBody({ id: event.id, name: event.name, createdAt: event.createdAt, data: event.data }).toString(),
        ) as Record<string, unknown>)
      : {}
    return {
      id: row.id,
      subscription_id: row.subscriptionId,
      ...eventOf(row),
      state: row.state,
      attempts: row.attempts,
      next_attempt_at: row.nextAttemptAt ? row.nextAttemptAt.toISOString() : null,
      created_at: row.createdAt.toISOString(),
      finished_at: row.finishedAt ? row.finishedAt.toISOString() : null,
      payload,
      history: history.map(attemptView),
    }
  }

  async function requireDelivery(tenant: TenantContext, id: string, tx: Db = db) {
    const row = UUID.test(id) ? await repository.findDelivery(tx, tenant.accountId, id) : null
    if (!row) throw notFound('webhook delivery')
    return row
  }

  function enqueueDelivery(tx: Db, accountId: string, row: repository.DeliveryRow) {
    return enqueue(tx, clock, {
      accountId,
      queue: DELIVERY_QUEUE,
      payload: { deliveryId: row.id },
      concurrencyKey: row.subscriptionId,
    })
  }

  return {
    eventTypes: () => EVENT_TYPES,

    /** Changes the address or the events; a new url is checked as on create. The secret stays. */
    async update(tenant: TenantContext, id: string, input: Static<typeof UpdateSubscriptionBody>) {
      if (input.url === undefined && input.events === undefined) throw badRequest('Give url or events')
      if (input.url !== undefined) {
        const problem = checkSubscriptionUrl(input.url, deps.allowPrivateTargets)
        if (problem) throw badRequest(problem.message, problem.key)
      }
      return db.transaction(async (tx) => {
        await requireSubscription(tenant, id, tx, true)
        const row = await repository.updateSubscription(tx, tenant.accountId, id, {
          ...(input.url === undefined ? {} : { url: input.url }),
          ...(input.events === undefined ? {} : { events: [...new Set(input.events)] }),
        })
        return subscriptionView(row!)
      })
    },

    /** Stops deliveries at once (pending ones are dropped) until enable; disabling a disabled one changes nothing. */
    async disable(tenant: TenantContext, id: string): Promise<SubscriptionView> {
      return db.transaction(async (tx) => {
        const current = await requireSubscription(tenant, id, tx, true)
        if (current.status === 'disabled') return subscriptionView(current)
        const now = clock.now()
        const row = await repository.updateSubscription(tx, tenant.accountId, id, {
          status: 'disabled',
          disabledReason: 'manual',
          disabledAt: now,
        })
        await repository.dropPendingDeliveries(tx, tenant.accountId, id, now)
        await cancelQueuedJobs(tx, { accountId: tenant.accountId, queue: DELIVERY_QUEUE, concurrencyKey: id })
        return subscriptionView(row!)
      })
    },

    /** One delivery: its state, the exact payload the receiver gets, and its attempts. */
    async delivery(tenant: TenantContext, id: string): Promise<DeliveryView> {
      return deliveryView(tenant, await requireDelivery(tenant, id))
    },

    /**
     * Delivers a finished delivery's event again, from a first attempt (same event id: a receiver that deduplicates
     * by X-Service-Delivery sees the same id). The subscription must be enabled; a pending delivery is 409.
     */
    async redeliver(tenant: TenantContext, id: string): Promise<DeliveryView> {
      const row = await db.transaction(async (tx) => {
        const current = await requireDelivery(tenant, id, tx)
        const subscription = await requireSubscription(tenant, current.subscriptionId, tx, true)
        if (subscription.status !== 'enabled') {
          throw new AppError(409, 'subscription_disabled', 'The subscription is disabled: enable it first')
        }
        const restarted = await repository.restartDelivery(tx, tenant.accountId, id, clock.now())
        if (!restarted) throw new AppError(409, 'delivery_pending', 'This delivery is still pending: an attempt is due')
        await enqueueDelivery(tx, tenant.accountId, restarted)
        return restarted
      })
      return deliveryView(tenant, row)
    },

    /** Preview of a redelivery or a test event: the subscription it goes to. */
    async deliveryTarget(tenant: TenantContext, deliveryId: string) {
      const delivery = await requireDelivery(tenant, deliveryId)
      return {
        delivery: await deliveryView(tenant, delivery),
        subscription: subscriptionView(await requireSubscription(tenant, delivery.subscriptionId)),
      }
    },

    /**
     * Sends one signed test event (data with example values and test: true) to this subscription only, through the
     * normal delivery with its retries; the event must be one the subscription receives (default: its first).
     */
    async sendTest(tenant: TenantContext, id: string, eventName?: EventName): Promise<DeliveryView> {
      const row = await db.transaction(async (tx) => {
        const subscription = await requireSubscription(tenant, id, tx, true)
        if (subscription.status !== 'enabled') {
          throw new AppError(409, 'subscription_disabled', 'The subscription is disabled: enable it first')
        }
        const name = testEventOf(subscription.events, eventName)
        const now = clock.now()
        const eventId = randomUUID()
        await recordTestEvent(tx, {
          accountId: tenant.accountId,
          id: eventId,
          name,
          data: testData(name, now),
          createdAt: now,
        })
        const [delivery] = await repository.insertDeliveries(tx, [
          {
            accountId: tenant.accountId,
            id: randomUUID(),
            subscriptionId: id,
            eventId,
            eventName: name,
            nextAttemptAt: now,
            createdAt: now,
          },
        ])
        await enqueueDelivery(tx, tenant.accountId, delivery)
        return delivery
      })
      return deliveryView(tenant, row)
    },

    async create(
      tenant: TenantContext,
      input: Static<typeof CreateSubscriptionBody>,
    ): Promise<SubscriptionWithSecretView> {
      const problem = checkSubscriptionUrl(input.url, deps.allowPrivateTargets)
      if (problem) throw badRequest(problem.message, problem.key)
      const secret = generateSigningSecret()
      const row = await db.transaction(async (tx) => {
        const limit = await repository.lockWebhookLimit(tx, tenant.accountId)
        const count = await repository.countSubscriptions(tx, tenant.accountId)
        if (count >= limit) {
          throw new AppError(
            409,
            'webhook_limit_reached',
            `The plan allows ${limit} webhook subscriptions; delete one first`,
            { details: { limit } },
          )
        }
        return repository.insertSubscription(tx, {
          accountId: tenant.accountId,
          id: randomUUID(),
          url: input.url,
          events: [...new Set(input.events)],
          secretSealed: secrets.seal(secret),
          createdAt: clock.now(),
        })
      })
      return { ...subscriptionView(row), secret }
    },

    async list(tenant: TenantContext, page: { limit: number; offset: number }): Promise<Page<SubscriptionView>> {
      const rows = await repository.listSubscriptions(db, tenant.accountId, page.limit, page.offset)
      const cut = toPage(rows, page.limit, page.offset)
      return { ...cut, items: cut.items.map(subscriptionView) }
    },

    async get(tenant: TenantContext, id: string): Promise<SubscriptionView> {
      return subscriptionView(await requireSubscription(tenant, id))
    },

    /** Removes the subscription, its delivery history and its queued deliveries. */
    async remove(tenant: TenantContext, id: string): Promise<{ id: string; deleted: true }> {
      await db.transaction(async (tx) => {
        await requireSubscription(tenant, id, tx, true)
        await cancelQueuedJobs(tx, { accountId: tenant.accountId, queue: DELIVERY_QUEUE, concurrencyKey: id })
        await repository.deleteSubscription(tx, tenant.accountId, id)
      })
      return { id, deleted: true }
    },

    /** Turns a disabled subscription back on with a clean failure count; events from now on are delivered. */
    async enable(tenant: TenantContext, id: string): Promise<SubscriptionView> {
      return db.transaction(async (tx) => {
        const current = await requireSubscription(tenant, id, tx, true)
        if (current.status === 'enabled') return subscriptionView(current)
        const row = await repository.updateSubscription(tx, tenant.accountId, id, {
          status: 'enabled',
          disabledReason: null,
          disabledAt: null,
          consecutiveFailures: 0,
        })
        return subscriptionView(row!)
      })
    },

    /** A new secret replaces the old one at once; every later attempt, retries included, is signed with it. */
    async rotateSecret(tenant: TenantContext, id: string): Promise<SubscriptionWithSecretView> {
      const secret = generateSigningSecret()
      const row = await db.transaction(async (tx) => {
        await requireSubscription(tenant, id, tx, true)
        return repository.updateSubscription(tx, tenant.accountId, id, { secretSealed: secrets.seal(secret) })
      })
      return { ...subscriptionView(row!), secret }
    },

    async deliveries(
      tenant: TenantContext,
      id: string,
      page: { limit: number; offset: number },
    ): Promise<Page<DeliveryAttemptView>> {
      await requireSubscription(tenant, id)
      const rows = await repository.listAttempts(db, tenant.accountId, id, page.limit, page.offset)
      const cut = toPage(rows, page.limit, page.offset)
      return { ...cut, items: cut.items.map(attemptView) }
    },
  }
}

export type WebhooksService = ReturnType<typeof webhooksService>
