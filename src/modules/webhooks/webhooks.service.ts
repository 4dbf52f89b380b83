import { randomUUID } from 'node:crypto'
import type { Static } from 'typebox'
import type { TenantContext } from '../../platform/auth/tenant.ts'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { type Page, toPage } from '../../platform/http/pagination.ts'
import { cancelQueuedJobs } from '../../platform/jobs/jobs.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import { checkSubscriptionUrl, generateSigningSecret, wireEventId } from './webhooks.fns.ts'
import * as repository from './webhooks.repository.ts'
import type {
  CreateSubscriptionBody,
  DeliveryAttempt,
  Subscription,
  SubscriptionWithSecret,
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

function attemptView(row: repository.AttemptRow): DeliveryAttemptView {
  return {
    id: row.id,
    delivery_id: row.deliveryId,
    event_id: wireEventId({ name: row.eventName, id: row.eventId }),
    event: row.eventName as DeliveryAttemptView['event'],
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function webhooksService(deps: WebhooksServiceDeps) {
  const { db, clock, secrets } = deps

  async function requireSubscription(tenant: TenantContext, id: string, tx: Db = db, lock = false) {
    const row = UUID.test(id) ? await repository.findSubscription(tx, tenant.accountId, id, { lock }) : null
    if (!row) throw notFound('webhook subscription')
    return row
  }

  return {
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
