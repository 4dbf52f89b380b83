import { asc, eq } from 'drizzle-orm'
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
