import { and, asc, eq, inArray, type SQL, sql } from 'drizzle-orm'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import {
  changedDefinition,
  checkFieldValues,
  DEFAULT_MAX_LENGTH,
  FALSE_TEXTS,
  type FieldDefinitionChange,
  type FieldDefinitionInput,
  type FieldValueChange,
  MAX_FIELDS,
  NUMBER_LIMIT,
  newDefinition,
  TRUE_TEXTS,
} from './contacts.fields.rules.ts'
import { type FieldDefinition, fieldDefinitionsOf } from './contacts.fields-read.ts'
import { rowsOf } from './contacts.repository.ts'
import { type ContactField, contactFields, contacts } from './contacts.tables.ts'

// Custom field definitions (issue 33): an account's fields, and what a change of one does to the contacts' values.

type FieldRow = ContactField

const definitionOf = (row: FieldRow): FieldDefinition => ({
  key: row.key,
  label: row.label,
  type: row.type,
  options: row.options ?? null,
  defaultValue: row.defaultValue ?? null,
  maxLength: row.maxLength ?? null,
})

/** A definition as the API shows it: the definition, its place and its times. */
export function fieldView(row: FieldRow) {
  const { defaultValue, maxLength, ...definition } = definitionOf(row)
  return {
    ...definition,
    default: defaultValue,
    max_length: maxLength,
    position: row.position,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  }
}
export type FieldView = ReturnType<typeof fieldView>

/** Definition changes of one account take turns (the limit of 50, a type change and the contact writes it checks). */
async function lockDefinitions(tx: Db, accountId: string): Promise<void> {
  await tx.execute(sql`SELECT pg_advisory_xact_lock(hashtextextended(${`herold_contact_fields:${accountId}`}, 0))`)
}

/** What a stored key can look like (a key in a path that cannot be one is no field: a 404, never a query). */
const STORED_KEY = /^[a-z0-9_]{1,100}$/

async function fieldRow(db: Db, accountId: string, key: string, lock: boolean): Promise<FieldRow | undefined> {
  if (!STORED_KEY.test(key)) return undefined
  const query = db
    .select()
    .from(contactFields)
    .where(and(eq(contactFields.accountId, accountId), eq(contactFields.key, key)))
  const [row] = lock ? await query.for('update') : await query
  return row
}

/**
 * The definitions of these keys for a contact write in the caller's transaction, share-locked: a concurrent type
 * change waits for the write (and the write for it), so no value of the old type slips past the conversion.
 */
export async function definitionsForWrite(tx: Db, accountId: string, keys: string[]): Promise<FieldDefinition[]> {
  if (keys.length === 0) return []
  const rows = await tx
    .select()
    .from(contactFields)
    .where(and(eq(contactFields.accountId, accountId), inArray(contactFields.key, keys)))
    .for('share')
  return rows.map(definitionOf)
}

/**
 * Checks a contact write's `fields` against the account's definitions (in the caller's transaction, before anything
 * is written): an unknown key is 400 field_unknown, a value that breaks its field's rule 400 field_invalid.
 */
export async function checkedFieldChange(
  tx: Db,
  accountId: string,
  input: Readonly<Record<string, unknown>> | undefined,
): Promise<FieldValueChange | null> {
  if (input === undefined) return null
  const keys = Object.keys(input)
  const definitions = await definitionsForWrite(tx, accountId, keys)
  const checked = checkFieldValues(definitions, input)
  if (checked.unknown.length > 0) {
    const names = checked.unknown.join(', ')
    throw badRequest(`Unknown custom field${checked.unknown.length > 1 ? 's' : ''}: ${names}`, 'field_unknown', {
      field: `fields.${checked.unknown[0]}`,
      fields: checked.unknown,
    })
  }
  if (checked.invalid.length > 0) throw badRequest(checked.invalid.join('; '), 'field_invalid')
  return checked.change
}

// --- a value converted to a definition, in SQL: convertValue of contacts.fields.rules.ts for a jsonb value ---

const textArray = (values: readonly string[]) =>
  sql`ARRAY(SELECT jsonb_array_elements_text(${JSON.stringify(values)}::jsonb))`
const NUMBER_PATTERN = '^[+-]?[0-9]+([.,][0-9]+)?([eE][+-]?[0-9]{1,2})?$'
const DATE_PATTERN = '^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$'

/** The jsonb value `v` converted to the definition, or NULL when it does not fit. */
export function convertedSql(v: SQL, to: Pick<FieldDefinition, 'type' | 'options' | 'maxLength'>): SQL {
  const s = sql`(${v} #>> '{}')`
  switch (to.type) {
    case 'text':
      return sql`CASE WHEN char_length(${s}) <= ${to.maxLength ?? DEFAULT_MAX_LENGTH}::int THEN to_jsonb(${s}) END`
    case 'number': {
      // CASE, not AND: the cast runs only on a text the pattern accepted
      const n = sql`replace(btrim(${s}), ',', '.')::numeric`
      return sql`CASE jsonb_typeof(${v}) WHEN 'number' THEN ${v} WHEN 'string' THEN
        CASE WHEN btrim(${s}) ~ ${NUMBER_PATTERN} THEN
          CASE WHEN abs(${n}) < ${NUMBER_LIMIT}::numeric THEN to_jsonb((${n})::float8) END END END`
    }
    case 'date':
      return sql`CASE WHEN jsonb_typeof(${v}) = 'string' AND ${s} ~ ${DATE_PATTERN} AND left(${s}, 4) <> '0000' THEN
        CASE WHEN extract(day FROM (left(${s}, 8) || '01')::date + interval '1 month' - interval '1 day')
          >= right(${s}, 2)::int THEN ${v} END END`
    case 'boolean':
      return sql`CASE jsonb_typeof(${v}) WHEN 'boolean' THEN ${v} WHEN 'string' THEN
        CASE WHEN lower(btrim(${s})) = ANY(${textArray(TRUE_TEXTS)}) THEN 'true'::jsonb
          WHEN lower(btrim(${s})) = ANY(${textArray(FALSE_TEXTS)}) THEN 'false'::jsonb END END`
    case 'choice':
      return sql`CASE WHEN ${s} = ANY(${textArray(to.options ?? [])}) THEN to_jsonb(${s}) END`
  }
}

/** Whether changing `from` into `to` may leave a stored value that does not fit. */
function needsValueCheck(from: FieldDefinition, to: FieldDefinition): boolean {
  if (from.type !== to.type) return true
  if (to.type === 'text') return (to.maxLength ?? DEFAULT_MAX_LENGTH) < (from.maxLength ?? DEFAULT_MAX_LENGTH)
  if (to.type === 'choice') return (from.options ?? []).some((o) => !(to.options ?? []).includes(o))
  return false
}

function storedValue(key: string): SQL {
  return sql`(${contacts.fields} -> ${key}::text)`
}

const hasValue = (accountId: string, key: string) =>
  sql`${contacts.accountId} = ${accountId}::uuid AND ${contacts.fields} ? ${key}::text`

async function incompatibleValues(tx: Db, accountId: string, to: FieldDefinition): Promise<number> {
  const result = await tx.execute(sql`SELECT count(*)::int AS n FROM ${contacts}
    WHERE ${hasValue(accountId, to.key)} AND (${convertedSql(storedValue(to.key), to)}) IS NULL`)
  return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0)
}

function incompatible(count: number, key: string, to: FieldDefinition): AppError {
  const what =
    to.type === 'choice'
      ? `not one of the options ${(to.options ?? []).join(', ')}`
      : to.type === 'text'
        ? `longer than ${to.maxLength ?? DEFAULT_MAX_LENGTH} characters`
        : `not convertible to ${to.type}`
  return new AppError(
    409,
    'field_values_incompatible',
    `${count} contact${count === 1 ? ' has a' : 's have a'} value of ${key} ${what}; change or clear ${count === 1 ? 'it' : 'them'} first`,
    { details: { field: key, count } },
  )
}

export function contactFieldsService(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps

  return {
    /** The account's definitions in their order (at most 50). */
    async list(accountId: string): Promise<FieldView[]> {
      const rows = await db
        .select()
        .from(contactFields)
        .where(eq(contactFields.accountId, accountId))
        .orderBy(asc(contactFields.position), asc(contactFields.key))
      return rows.map(fieldView)
    },

    async get(accountId: string, key: string): Promise<FieldView> {
      const row = await fieldRow(db, accountId, key, false)
      if (!row) throw notFound('contact field')
      return fieldView(row)
    },

    /** How many contacts have a value of the field (what deleting it removes). */
    async valueCount(accountId: string, key: string): Promise<number> {
      if (!(await fieldRow(db, accountId, key, false))) throw notFound('contact field')
      const result = await db.execute(sql`SELECT count(*)::int AS n FROM ${contacts} WHERE ${hasValue(accountId, key)}`)
      return Number(rowsOf<{ n: number }>(result)[0]?.n ?? 0)
    },

    async create(accountId: string, input: FieldDefinitionInput): Promise<FieldView> {
      const definition = newDefinition(input)
      return db.transaction(async (tx) => {
        await lockDefinitions(tx, accountId)
        const [{ n, last }] = await tx
          .select({
            n: sql<number>`count(*)::int`,
            last: sql<number>`coalesce(max(${contactFields.position}), 0)::int`,
          })
          .from(contactFields)
          .where(eq(contactFields.accountId, accountId))
        if (await fieldRow(tx, accountId, definition.key, false)) {
          throw new AppError(409, 'field_exists', `A custom field with the key ${definition.key} exists`, {
            details: { field: definition.key },
          })
        }
        if (Number(n) >= MAX_FIELDS) {
          throw badRequest(`An account has at most ${MAX_FIELDS} custom fields`, 'field_limit', { limit: MAX_FIELDS })
        }
        const now = clock.now()
        const [row] = await tx
          .insert(contactFields)
          .values({ accountId, ...definition, position: Number(last) + 1, createdAt: now, updatedAt: now })
          .returning()
        return fieldView(row)
      })
    },

    /**
     * Changes a definition. A new type converts every stored value in one statement; when some would not fit (nor
     * after a removed option or a shorter max_length) nothing changes: 409 field_values_incompatible with the count.
     */
    async update(accountId: string, key: string, change: FieldDefinitionChange): Promise<FieldView> {
      return db.transaction(async (tx) => {
        await lockDefinitions(tx, accountId)
        const row = await fieldRow(tx, accountId, key, true)
        if (!row) throw notFound('contact field')
        const current = definitionOf(row)
        const next = changedDefinition(current, change)
        if (needsValueCheck(current, next)) {
          const count = await incompatibleValues(tx, accountId, next)
          if (count > 0) throw incompatible(count, key, next)
          if (current.type !== next.type) {
            await tx.execute(sql`UPDATE ${contacts}
              SET fields = jsonb_set(${contacts.fields}, ARRAY[${key}::text], ${convertedSql(storedValue(key), next)})
              WHERE ${hasValue(accountId, key)}`)
          }
        }
        const [saved] = await tx
          .update(contactFields)
          .set({
            label: next.label,
            type: next.type,
            options: next.options,
            defaultValue: next.defaultValue,
            maxLength: next.maxLength,
            updatedAt: clock.now(),
          })
          .where(and(eq(contactFields.accountId, accountId), eq(contactFields.key, key)))
          .returning()
        return fieldView(saved)
      })
    },

    /** Removes the definition and its value from every contact of the account (one statement); 404 when none. */
    async delete(accountId: string, key: string): Promise<{ valuesRemoved: number }> {
      if (!STORED_KEY.test(key)) throw notFound('contact field')
      return db.transaction(async (tx) => {
        await lockDefinitions(tx, accountId)
        const removed = await tx
          .delete(contactFields)
          .where(and(eq(contactFields.accountId, accountId), eq(contactFields.key, key)))
          .returning({ key: contactFields.key })
        if (removed.length === 0) throw notFound('contact field')
        const result = await tx.execute(sql`UPDATE ${contacts} SET fields = ${contacts.fields} - ${key}::text
          WHERE ${hasValue(accountId, key)} RETURNING 1`)
        return { valuesRemoved: rowsOf(result).length }
      })
    },

    /** The definitions as the import and the export read them. */
    definitions: (accountId: string) => fieldDefinitionsOf(db, accountId),
  }
}

export type ContactFieldsService = ReturnType<typeof contactFieldsService>

/**
 * Creates text fields for an import (--create-fields) in one transaction, within the limit of 50; the keys are new
 * (the caller derived them from the file's header against the existing ones).
 */
export async function createImportFields(
  db: Db,
  clock: Clock,
  accountId: string,
  fields: Array<{ key: string; label: string }>,
): Promise<FieldDefinition[]> {
  if (fields.length === 0) return []
  return db.transaction(async (tx) => {
    await lockDefinitions(tx, accountId)
    const existing = await fieldDefinitionsOf(tx, accountId)
    if (existing.length + fields.length > MAX_FIELDS) {
      throw badRequest(
        `--create-fields would make ${existing.length + fields.length} custom fields; an account has at most ${MAX_FIELDS} (it has ${existing.length})`,
        'field_limit',
        { limit: MAX_FIELDS },
      )
    }
    const definitions = fields.map((f) => newDefinition({ key: f.key, label: f.label.slice(0, 80), type: 'text' }))
    const [{ last }] = await tx
      .select({ last: sql<number>`coalesce(max(${contactFields.position}), 0)::int` })
      .from(contactFields)
      .where(eq(contactFields.accountId, accountId))
    const now = clock.now()
    await tx.insert(contactFields).values(
      definitions.map((d, i) => ({
        accountId,
        ...d,
        position: Number(last) + 1 + i,
        createdAt: now,
        updatedAt: now,
      })),
    )
    return definitions
  })
}
