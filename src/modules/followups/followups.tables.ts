import { sql } from 'drizzle-orm'
import { foreignKey, index, integer, jsonb, pgTable, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { accountIdPrimaryKey, accountTable } from '../../platform/auth/auth.tables.ts'
import { at, timestamps } from '../../platform/db/columns.ts'

export const SEQUENCE_STATUSES = ['draft', 'paused', 'active'] as const
export type SequenceStatus = (typeof SEQUENCE_STATUSES)[number]
export const ENROLLMENT_STATUSES = ['active', 'completed', 'stopped'] as const
export type EnrollmentStatus = (typeof ENROLLMENT_STATUSES)[number]
export const DELAY_UNITS = ['hours', 'days'] as const
export type DelayUnit = (typeof DELAY_UNITS)[number]

/** What enrolls a contact: its chat opt-in becoming confirmed (the default), or a tag being added. */
export type SequenceTrigger = { type: 'optin_confirmed' } | { type: 'tag_added'; tag: string }

/** A follow-up sequence: timed template messages for every contact it enrolls. */
export const followupSequences = accountTable(
  'followup_sequences',
  {
    name: text('name').notNull(),
    status: text('status', { enum: SEQUENCE_STATUSES }).notNull(),
    trigger: jsonb('trigger').$type<SequenceTrigger>().notNull(),
    /** the trigger's type, for the index that finds the active sequences a signal enrolls into */
    triggerKind: text('trigger_kind').notNull(),
    ...timestamps(),
  },
  (t) => [
    index('followup_sequences_created_idx').on(t.accountId, t.createdAt.desc(), t.id.desc()),
    index('followup_sequences_trigger_idx').on(t.accountId, t.triggerKind).where(sql`${t.status} = 'active'`),
  ],
)

/** A step: its text goes out as the marketing template `template_id` (the approval is the template's). */
export const followupSteps = accountTable(
  'followup_steps',
  {
    sequenceId: uuid('sequence_id').notNull(),
    position: integer('position').notNull(),
    text: text('text').notNull(),
    /** after enrollment for the first step, after the previous step's time otherwise */
    delayAmount: integer('delay_amount').notNull(),
    delayUnit: text('delay_unit', { enum: DELAY_UNITS }).notNull(),
    /** HH:MM overriding the account's follow-up send time; null: the account's */
    sendTime: text('send_time'),
    templateId: uuid('template_id'),
    ...timestamps(),
  },
  (t) => [
    uniqueIndex('followup_steps_position_uq').on(t.accountId, t.sequenceId, t.position),
    index('followup_steps_template_idx').on(t.accountId, t.templateId).where(sql`${t.templateId} IS NOT NULL`),
    foreignKey({
      name: 'followup_steps_sequence_fk',
      columns: [t.accountId, t.sequenceId],
      foreignColumns: [followupSequences.accountId, followupSequences.id],
    }).onDelete('cascade'),
  ],
)

/** PATCH /settings/followup-timing: the account's send time and timezone for follow-ups (null: none, the account's). */
export const followupSettings = pgTable('followup_settings', {
  accountId: accountIdPrimaryKey(),
  sendTime: text('send_time'),
  timezone: text('timezone'),
  updatedAt: at('updated_at').notNull(),
})

/**
 * A contact in a sequence. While active, `next_position` is the step its job (`job_id`, due `next_due_at`) sends;
 * `base_at` is the time that step's delay counts from (the enrollment, or the previous step's time).
 */
export const followupEnrollments = accountTable(
  'followup_enrollments',
  {
    sequenceId: uuid('sequence_id').notNull(),
    contactId: uuid('contact_id').notNull(),
    status: text('status', { enum: ENROLLMENT_STATUSES }).notNull(),
    stopReason: text('stop_reason'),
    nextPosition: integer('next_position'),
    baseAt: at('base_at'),
    nextDueAt: at('next_due_at'),
    jobId: uuid('job_id'),
    enrolledAt: at('enrolled_at').notNull(),
    finishedAt: at('finished_at'),
    updatedAt: at('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('followup_enrollments_active_uq')
      .on(t.accountId, t.sequenceId, t.contactId)
      .where(sql`${t.status} = 'active'`),
    index('followup_enrollments_sequence_idx').on(t.accountId, t.sequenceId, t.status),
    index('followup_enrollments_contact_idx').on(t.accountId, t.contactId),
    foreignKey({
      name: 'followup_enrollments_sequence_fk',
      columns: [t.accountId, t.sequenceId],
      foreignColumns: [followupSequences.accountId, followupSequences.id],
    }).onDelete('cascade'),
  ],
)
