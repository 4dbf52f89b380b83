import { sql } from 'drizzle-orm'
import type { Db } from '../../src/platform/db/client.ts'

// Custom field definitions and values written straight into the contacts module's tables (issue 33): the tests of
// audiences by field do not depend on the definitions' routes.

export interface TestFieldDefinition {
  key: string
  type: 'text' | 'number' | 'date' | 'boolean' | 'choice'
  options?: string[]
  label?: string
}

/** The five fields the audience tests use: one of each type. */
export const FIVE_FIELDS: TestFieldDefinition[] = [
  { key: 'customer_no', type: 'text' },
  { key: 'visits', type: 'number' },
  { key: 'birthday', type: 'date' },
  { key: 'vip', type: 'boolean' },
  { key: 'level', type: 'choice', options: ['gold', 'silver', 'bronze'] },
]

export async function defineFields(db: Db, accountId: string, definitions: TestFieldDefinition[] = FIVE_FIELDS) {
  for (const [position, d] of definitions.entries()) {
    await db.execute(sql`INSERT INTO contact_fields (account_id, key, label, type, options, position)
      VALUES (${accountId}, ${d.key}, ${d.label ?? d.key}, ${d.type},
        ${d.options ? JSON.stringify(d.options) : null}::jsonb, ${position})`)
  }
}

/** Sets a contact's custom field values (the whole object). */
export async function setFieldValues(db: Db, accountId: string, contactId: string, values: Record<string, unknown>) {
  await db.execute(sql`UPDATE contacts SET fields = ${JSON.stringify(values)}::jsonb
    WHERE account_id = ${accountId} AND id = ${contactId}`)
}

export async function setTimezone(db: Db, accountId: string, timezone: string) {
  await db.execute(sql`UPDATE accounts SET timezone = ${timezone} WHERE id = ${accountId}`)
}
