import { sql } from 'drizzle-orm'
import { foreignKey, index, integer, jsonb, pgTable, primaryKey, text, uniqueIndex, uuid } from 'drizzle-orm/pg-core'
import { accountId, accountIdPrimaryKey } from '../../platform/auth/auth.tables.ts'
import { at, createdAt } from '../../platform/db/columns.ts'
import { CUSTOM_FIELD_TYPES, type CustomFieldValue } from './contacts.field-types.ts'

export const OPTIN_STATES = ['none', 'pending', 'confirmed', 'opted_out'] as const
export const ACQUISITIONS = ['marketing', 'automation', 'service'] as const
export const TAG_ORIGINS = ['system', 'ki', 'manuell'] as const
export { CUSTOM_FIELD_TYPES, type CustomFieldType, type CustomFieldValue } from './contacts.field-types.ts'

/**
 * A condition on a custom field as a newsletter segment stores it (jsonb); the API's schema, the rules and the SQL are
 * in contacts.field-conditions.ts (its FieldCondition is this shape).
 */
export interface StoredFieldCondition {
  field: string
  op:
    | 'equals'
    | 'not_equals'
    | 'is_set'
    | 'is_empty'
    | 'before'
    | 'after'
    | 'within_next_days'
    | 'greater_than'
    | 'less_than'
  value?: CustomFieldValue
  days?: number
  ignore_year?: boolean
}

/** An account's custom field definitions (issue 33): at most 50 per account, the key is the variable's name. */
export const contactFields = pgTable(
  'contact_fields',
  {
    accountId: accountId(),
    /** lower-case a-z0-9_, never a built-in variable's name */
    key: text('key').notNull(),
    label: text('label').notNull(),
    type: text('type', { enum: CUSTOM_FIELD_TYPES }).notNull(),
    /** choice: the allowed values, in order */
    options: jsonb('options').$type<string[]>(),
    /** filled into a message when the contact has no value */
    defaultValue: jsonb('default_value').$type<CustomFieldValue>(),
    /** text: at most this many characters */
    maxLength: integer('max_length'),
    position: integer('position').notNull().default(0),
    createdAt: createdAt(),
    updatedAt: at('updated_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ name: 'contact_fields_pk', columns: [t.accountId, t.key] })],
)

export type ContactField = typeof contactFields.$inferSelect

/**
 * One row per contact. Email and phone are '' when absent (the wire shows '' too); the partial unique indexes
 * decide duplicates, so two concurrent creates of one address can never both commit. The trigram search index
 * lives in the hand-written migration `contacts_search` (an expression GIN index drizzle-kit cannot express).
 */
export const contacts = pgTable(
  'contacts',
  {
    accountId: accountId(),
    id: uuid('id').notNull(),
    name: text('name').notNull().default(''),
    /** lower-cased; '' when none */
    email: text('email').notNull().default(''),
    /** E.164; '' when none */
    phone: text('phone').notNull().default(''),
    optinChat: text('optin_chat', { enum: OPTIN_STATES }).notNull().default('none'),
    optinEmail: text('optin_email', { enum: OPTIN_STATES }).notNull().default('none'),
    language: text('language').notNull().default(''),
    /** where the contact came from: api, import, and later chat, form, … */
    source: text('source').notNull().default('api'),
    acquisition: text('acquisition', { enum: ACQUISITIONS }).notNull().default('marketing'),
    /** custom field values by key, as their definitions in contact_fields allow; a cleared field is absent */
    fields: jsonb('fields').$type<Record<string, CustomFieldValue>>().notNull().default({}),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.id] }),
    // ascending: a backward scan serves ORDER BY created_at DESC, id DESC (a DESC NULLS LAST index would not)
    index('contacts_created_idx').on(t.accountId, t.createdAt, t.id),
    uniqueIndex('contacts_email_uq').on(t.accountId, t.email).where(sql`${t.email} <> ''`),
    uniqueIndex('contacts_phone_uq').on(t.accountId, t.phone).where(sql`${t.phone} <> ''`),
  ],
)

/** A tag on a contact under one origin; the same name may exist under several origins (strongest is shown). */
export const contactTags = pgTable(
  'contact_tags',
  {
    // no foreign key of its own: the one to contacts (account_id, id) implies the account and cascades from it,
    // and a second check per tag row cost the bulk import a sixth of its time (see the commit)
    accountId: uuid('account_id').notNull(),
    contactId: uuid('contact_id').notNull(),
    name: text('name').notNull(),
    origin: text('origin', { enum: TAG_ORIGINS }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.contactId, t.name, t.origin] }),
    index('contact_tags_name_idx').on(t.accountId, t.name),
    foreignKey({ columns: [t.accountId, t.contactId], foreignColumns: [contacts.accountId, contacts.id] }).onDelete(
      'cascade',
    ),
  ],
)

/**
 * The GDPR audit trail: one row per opt-in change, from any source. On the contact's deletion the row stays and
 * loses its personal fields (contact_id, address, evidence).
 */
export const consentRecords = pgTable(
  'consent_records',
  {
    accountId: accountId(),
    id: uuid('id').notNull(),
    contactId: uuid('contact_id'),
    channel: text('channel', { enum: ['chat', 'email'] }).notNull(),
    fromState: text('from_state', { enum: OPTIN_STATES }).notNull(),
    toState: text('to_state', { enum: OPTIN_STATES }).notNull(),
    /** who or what changed it: api, import, double_opt_in, inbound_message, … */
    source: text('source').notNull(),
    /** the email address or phone number the consent was about; null once anonymized */
    address: text('address'),
    evidence: jsonb('evidence').$type<Record<string, unknown>>().notNull().default({}),
    recordedAt: at('recorded_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.accountId, t.id] }),
    index('consent_records_contact_idx').on(t.accountId, t.contactId, t.recordedAt),
  ],
)

/** Contacts per account, kept in the transaction of every create and delete: the plan limit never counts rows. */
export const contactCounts = pgTable('contact_counts', {
  accountId: accountIdPrimaryKey(),
  count: integer('count').notNull().default(0),
})
