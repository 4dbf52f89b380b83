import { bigint, boolean, index, integer, jsonb, pgTable, primaryKey, text, uuid } from 'drizzle-orm/pg-core'
import { accountId, accountIdPrimaryKey } from '../../platform/auth/auth.tables.ts'
import { at } from '../../platform/db/columns.ts'

export const ASSIGNMENT_MODES = ['off', 'round_robin'] as const
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const
export type Weekday = (typeof WEEKDAYS)[number]
/** Opening ranges per weekday, local wall-clock times `HH:MM` (`to` may be `24:00`). */
export type WeeklyHours = Partial<Record<Weekday, Array<{ from: string; to: string }>>>

/** The inbox's routing of an account: automatic assignment, opening hours and the away message (one row or none). */
export const inboxSettings = pgTable('inbox_settings', {
  accountId: accountIdPrimaryKey(),
  assignmentMode: text('assignment_mode', { enum: ASSIGNMENT_MODES }).notNull().default('off'),
  /** open conversations a member may have before automatic assignment passes them over */
  assignmentLimit: integer('assignment_limit').notNull().default(10),
  hoursEnabled: boolean('hours_enabled').notNull().default(false),
  timezone: text('timezone').notNull().default('UTC'),
  weeklyHours: jsonb('weekly_hours').$type<WeeklyHours>().notNull().default({}),
  /** local dates `YYYY-MM-DD` on which the business is closed all day */
  daysOff: jsonb('days_off').$type<string[]>().notNull().default([]),
  awayEnabled: boolean('away_enabled').notNull().default(false),
  awayMessage: text('away_message').notNull().default(''),
  /** a conversation gets the away message at most once in this many minutes */
  awayIntervalMinutes: integer('away_interval_minutes').notNull().default(720),
  updatedAt: at('updated_at').notNull().defaultNow(),
})

/** Whether a member takes conversations now, and when they were last given one (the round-robin's order). */
export const memberAvailability = pgTable(
  'member_availability',
  {
    accountId: accountId(),
    userId: uuid('user_id').notNull(),
    available: boolean('available').notNull().default(false),
    lastAssignedAt: at('last_assigned_at'),
    /** the account's assignment count when this member was last given one: the smallest goes next */
    lastTurn: bigint('last_turn', { mode: 'number' }).notNull().default(0),
    updatedAt: at('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.userId], name: 'member_availability_pk' })],
)

/** Unassigned conversations waiting for a member with room, first come first served. */
export const assignmentQueue = pgTable(
  'assignment_queue',
  {
    accountId: accountId(),
    conversationId: uuid('conversation_id').notNull(),
    queuedAt: at('queued_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.conversationId], name: 'assignment_queue_pk' }),
    index('assignment_queue_order_idx').on(t.accountId, t.queuedAt, t.conversationId),
  ],
)

/** Every assignment the inbox made by itself: to whom, and why (`round_robin` at once, `queue` when room came). */
export const conversationAssignments = pgTable(
  'conversation_assignments',
  {
    accountId: accountId(),
    id: uuid('id').notNull(),
    conversationId: uuid('conversation_id').notNull(),
    assigneeId: uuid('assignee_id'),
    reason: text('reason').notNull(),
    /** the member whose action caused it (null: a customer's message) */
    actorId: uuid('actor_id'),
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.id], name: 'conversation_assignments_pk' }),
    index('conversation_assignments_conversation_idx').on(t.accountId, t.conversationId, t.createdAt),
  ],
)

export const AWAY_STATES = ['queued', 'sending', 'sent', 'skipped', 'failed'] as const

/** The away messages owed to customers who wrote outside opening hours: queued, then sent, skipped or failed. */
export const awayReplies = pgTable(
  'away_replies',
  {
    accountId: accountId(),
    id: uuid('id').notNull(),
    conversationId: uuid('conversation_id').notNull(),
    contactId: uuid('contact_id').notNull(),
    inboundMessageId: uuid('inbound_message_id').notNull(),
    state: text('state', { enum: AWAY_STATES }).notNull(),
    reason: text('reason'),
    messageId: uuid('message_id'),
    createdAt: at('created_at').notNull(),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.id], name: 'away_replies_pk' }),
    index('away_replies_conversation_idx').on(t.accountId, t.conversationId, t.createdAt),
  ],
)
