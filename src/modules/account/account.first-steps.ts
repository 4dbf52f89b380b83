import { sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'

/** The four states in one statement: each an EXISTS on its owner's table (reads are free), so each stops early. */
export async function firstSteps(db: Db, accountId: string) {
  const result = await db.execute(sql`
    SELECT
      EXISTS (SELECT 1 FROM channel_connections
        WHERE account_id = ${accountId} AND channel = 'chat' AND status = 'connected') AS connect_number,
      EXISTS (SELECT 1 FROM templates
        WHERE account_id = ${accountId} AND purpose = 'optin_confirm' AND state = 'approved') AS optin_template,
      EXISTS (SELECT 1 FROM contacts WHERE account_id = ${accountId}) AS import_contacts,
      (SELECT count(*) FROM (SELECT 1 FROM memberships WHERE account_id = ${accountId} LIMIT 2) m) > 1 AS invite_team`)
  const [row] = (result as unknown as { rows: Array<Record<string, unknown>> }).rows
  return {
    connect_number: Boolean(row?.connect_number),
    optin_template: Boolean(row?.optin_template),
    import_contacts: Boolean(row?.import_contacts),
    invite_team: Boolean(row?.invite_team),
  }
}
