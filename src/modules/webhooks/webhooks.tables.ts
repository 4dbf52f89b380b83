import { boolean, foreignKey, index, integer, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { accountRowKey, accountTable } from '../../platform/auth/auth.tables.ts'
import { at, createdAt } from '../../platform/db/columns.ts'

export const webhookSubscriptions = accountTable(
  'webhook_subscriptions',
  {
    url: text('url').notNull(),
    events: text('events').array().notNull(),
    /** the signing secret, AES-256-GCM sealed (platform/secrets.ts); an HMAC key must stay readable */
    secretSealed: text('secret_sealed').notNull(),
    status: text('status', { enum: ['enabled', 'disabled'] })
      .notNull()
      .default('enabled'),
    disabledReason: text('disabled_reason', { enum: ['gone_410', 'consecutive_failures', 'manual'] }),
    disabledAt: at('disabled_at'),
    /** failed attempts since the last success, over all events; 25 disables the subscription */
    consecutiveFailures: integer('consecutive_failures').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [index('webhook_subscriptions_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc())],
)

/** One event owed to one subscription: pending until it succeeds, its attempts run out, or it is dropped. */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    accountId: uuid('account_id').notNull(),
    id: uuid('id').notNull(),
    subscriptionId: uuid('subscription_id').notNull(),
    eventId: uuid('event_id').notNull(),
    eventName: text('event_name').notNull(),
    state: text('state', { enum: ['pending', 'succeeded', 'exhausted', 'dropped'] })
      .notNull()
      .default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: at('next_attempt_at'),
    createdAt: createdAt(),
    finishedAt: at('finished_at'),
  },
  (t) => [
    accountRowKey(t),
    // a re-run dispatch job cannot owe the same event twice
    uniqueIndex('webhook_deliveries_event_uq').on(t.accountId, t.subscriptionId, t.eventId),
    foreignKey({
      columns: [t.accountId, t.subscriptionId],
      foreignColumns: [webhookSubscriptions.accountId, webhookSubscriptions.id],
      name: 'webhook_deliveries_subscription_fk',
    }).onDelete('cascade'),
  ],
)

/** Every HTTP attempt, readable through GET /webhook-subscriptions/{id}/deliveries. */
export const webhookDeliveryAttempts = pgTable(
  'webhook_delivery_attempts',
  {
    accountId: uuid('account_id').notNull(),
    id: uuid('id').notNull(),
    subscriptionId: uuid('subscription_id').notNull(),
    deliveryId: uuid('delivery_id').notNull(),
    eventId: uuid('event_id').notNull(),
    eventName: text('event_name').notNull(),
    attempt: integer('attempt').notNull(),
    attemptedAt: at('attempted_at').notNull(),
    durationMs: integer('duration_ms').notNull(),
    statusCode: integer('status_code'),
    error: text('error'),
    succeeded: boolean('succeeded').notNull(),
    /** the delivery's state right after this attempt */
    deliveryState: text('delivery_state', { enum: ['retrying', 'succeeded', 'exhausted', 'dropped'] }).notNull(),
    nextAttemptAt: at('next_attempt_at'),
  },
  (t) => [
    accountRowKey(t),
    index('webhook_delivery_attempts_list_idx').on(t.accountId, t.subscriptionId, t.attemptedAt.desc(), t.id.desc()),
    foreignKey({
      columns: [t.accountId, t.subscriptionId],
      foreignColumns: [webhookSubscriptions.accountId, webhookSubscriptions.id],
      name: 'webhook_delivery_attempts_subscription_fk',
    }).onDelete('cascade'),
  ],
)
