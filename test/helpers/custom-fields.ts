import { and, eq } from 'drizzle-orm'
import { contactFields, contacts } from '../../src/modules/contacts/contacts.tables.ts'
import type { CustomFieldType, CustomFieldValue } from '../../src/modules/contacts/index.ts'
import type { Harness } from './harness.ts'

// Custom field definitions and values written straight into their tables, for the tests of what uses them (messages,
// previews) without going through the routes that manage them.

let position = 0

/** Defines a custom field of the account (key, type, and optionally a default and options). */
export async function defineField(
  harness: Harness,
  accountId: string,
  field: { key: string; type: CustomFieldType; defaultValue?: CustomFieldValue; options?: string[] },
): Promise<void> {
  await harness.database.orm.insert(contactFields).values({
    accountId,
    key: field.key,
    label: field.key,
    type: field.type,
    options: field.options ?? null,
    defaultValue: field.defaultValue ?? null,
    position: ++position,
  })
}

/** Sets a contact's custom field values (replacing all of them) and, when given, its language. */
export async function setFieldValues(
  harness: Harness,
  accountId: string,
  contactId: string,
  fields: Record<string, CustomFieldValue>,
  language?: string,
): Promise<void> {
  await harness.database.orm
    .update(contacts)
    .set({ fields, ...(language === undefined ? {} : { language }) })
    .where(and(eq(contacts.accountId, accountId), eq(contacts.id, contactId)))
}
