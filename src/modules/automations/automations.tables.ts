import { sql } from 'drizzle-orm'
import { foreignKey, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { accountRowKey, accountTable } from '../../platform/auth/auth.tables.ts'
import { at, timestamps } from '../../platform/db/columns.ts'
import type { RunLogEntry, Step, Trigger } from './automations.rules.ts'

export const AUTOMATION_STATUSES = ['draft', 'active', 'paused'] as const
export const RUN_STATES = ['running', 'waiting', 'completed', 'failed', 'cancelled'] as const
export type RunState = (typeof RUN_STATES)[number]

/** An automation: one trigger and ordered steps; the steps are kept as the safety rules left them. */
export const automations = accountTable(
  'automations',
  {
    name: text('name').notNull(),
    status: text('status', { enum: AUTOMATION_STATUSES }).notNull(),
    intent: text('intent').notNull(),
    trigger: jsonb('trigger').$type<Trigger>().notNull(),
    /** the trigger's type, for the index that finds the active automations a signal starts */
    triggerKind: text('trigger_kind').notNull(),
    steps: jsonb('steps').$type<Step[]>().notNull(),
    /** what the safety rules changed on the last create or update */
    notice: text('notice'),
    /** signs the automation's outbound webhook steps (AES-GCM sealed) */
    signingSecretSealed: text('signing_secret_sealed').notNull(),
    ...timestamps(),
  },
  (t) => [
    index('automations_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
    index('automations_trigger_idx').on(t.accountId, t.triggerKind).where(sql`${t.status} = 'active'`),
  ],
)

/** The source of an automation's trigger: an incoming webhook address, a calendar feed, or Herold itself. */
export const automationSources = pgTable(
  'automation_sources',
  {
    accountId: uuid('account_id').notNull(),
    id: uuid('id').notNull(),
    automationId: uuid('automation_id').notNull(),
    kind: text('kind', { enum: ['webhook', 'calendar', 'internal'] }).notNull(),
    /** the secret inside a webhook address (AES-GCM sealed: the address is shown on every read) */
    secretSealed: text('secret_sealed'),
    feedUrl: text('feed_url'),
    firstEventAt: at('first_event_at'),
    lastEventAt: at('last_event_at'),
    eventCount: integer('event_count').notNull().default(0),
    lastError: text('last_error'),
    lastErrorAt: at('last_error_at'),
    lastPolledAt: at('last_polled_at'),
    createdAt: at('created_at').notNull(),
  },
  (t) => [
    accountRowKey(t),
    uniqueIndex('automation_sources_id_uq').on(t.id),
    uniqueIndex('automation_sources_automation_uq').on(t.accountId, t.automationId),
    foreignKey({
      name: 'automation_sources_automation_fk',
      columns: [t.accountId, t.automationId],
      foreignColumns: [automations.accountId, automations.id],
    }).onDelete('cascade'),
  ],
)

/** A calendar event seen in a feed, with the run it started (rescheduled events move their start). */
export const automationCalendarEvents = pgTable(
  'automation_calendar_events',
  {
    accountId: uuid('account_id').notNull(),
    sourceId: uuid('source_id').notNull(),
    uid: text('uid').notNull(),
    startsAt: at('starts_at').notNull(),
    contactId: uuid('contact_id'),
    runId: uuid('run_id'),
  },
  (t) => [
    primaryKey({ name: 'automation_calendar_events_pk', columns: [t.accountId, t.sourceId, t.uid] }),
    foreignKey({
      name: 'automation_calendar_events_source_fk',
      columns: [t.accountId, t.sourceId],
      foreignColumns: [automationSources.accountId, automationSources.id],
    }).onDelete('cascade'),
  ],
)

/** One run of an automation for a contact: the steps as they were at its start, a pointer and a log. */
export const automationRuns = pgTable(
  'automation_runs',
  {
    accountId: uuid('account_id').notNull(),
    id: uuid('id').notNull(),
    automationId: uuid('automation_id').notNull(),
    contactId: uuid('contact_id'),
    state: text('state', { enum: RUN_STATES }).notNull(),
    /** what started it: event, webhook, calendar, manual */
    source: text('source').notNull(),
    stepIndex: integer('step_index').notNull().default(0),
    steps: jsonb('steps').$type<Step[]>().notNull(),
    data: jsonb('data').$type<Record<string, unknown>>().notNull().default({}),
    log: jsonb('log').$type<RunLogEntry[]>().notNull().default([]),
    waitUntil: at('wait_until'),
    /** `automation_paused` while its automation is paused, `until` for a wait step */
    waitReason: text('wait_reason'),
    /** why it failed or was cancelled */
    reason: text('reason'),
    ...timestamps(),
    finishedAt: at('finished_at'),
  },
  (t) => [
    accountRowKey(t),
    index('automation_runs_automation_idx').on(t.accountId, t.automationId, t.createdAt.desc(), t.id.desc()),
    index('automation_runs_contact_idx').on(t.accountId, t.contactId).where(sql`${t.contactId} IS NOT NULL`),
    index('automation_runs_paused_idx')
      .on(t.accountId, t.automationId)
      .where(sql`${t.waitReason} = 'automation_paused'`),
    foreignKey({
      name: 'automation_runs_automation_fk',
      columns: [t.accountId, t.automationId],
      foreignColumns: [automations.accountId, automations.id],
    }).onDelete('cascade'),
  ],
)
