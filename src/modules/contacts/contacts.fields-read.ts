import { asc, eq, type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { type CustomFieldType, type CustomFieldValue, contactFields } from './contacts.tables.ts'

/** One custom field definition as other modules read it (templates' check, sends, segments, previews). */
export interface FieldDefinition {
  key: string
  label: string
  type: CustomFieldType
  /** choice: the allowed values */
  options: string[] | null
  /** filled into a message when the contact has no value */
  defaultValue: CustomFieldValue | null
  maxLength: number | null
}

/** An account's custom field definitions, in their order (at most 50). */
export async function fieldDefinitionsOf(db: Db, accountId: string): Promise<FieldDefinition[]> {
  const rows = await db
    .select({
      key: contactFields.key,
      label: contactFields.label,
      type: contactFields.type,
      options: contactFields.options,
      defaultValue: contactFields.defaultValue,
      maxLength: contactFields.maxLength,
    })
    .from(contactFields)
    .where(eq(contactFields.accountId, accountId))
    .orderBy(asc(contactFields.position), asc(contactFields.key))
  return rows.map((row) => ({ ...row, options: row.options ?? null, defaultValue: row.defaultValue ?? null }))
}

/**
 * An account's custom field definitions, in their order, as one json array inside another module's statement
 * (`accountId` the SQL of its account id); fieldDefinitionsFromJson turns it back.
 */
export const fieldDefinitionsJsonSql = (accountId: SQL) =>
  sql`(SELECT coalesce(json_agg(json_build_object('key', f.key, 'label', f.label, 'type', f.type,
      'options', f.options, 'defaultValue', f.default_value, 'maxLength', f.max_length) ORDER BY f.position, f.key),
      '[]'::json) FROM ${contactFields} f WHERE f.account_id = ${accountId})`

export function fieldDefinitionsFromJson(value: unknown): FieldDefinition[] {
  const list = (typeof value === 'string' ? JSON.parse(value) : (value ?? [])) as FieldDefinition[]
  return list.map((d) => ({ ...d, options: d.options ?? null, defaultValue: d.defaultValue ?? null }))
}
