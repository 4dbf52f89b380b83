import { and, type Column, desc, eq, type SQL, sql } from 'drizzle-orm'
import type { PgSelect, PgTable, PgUpdateSetSource } from 'drizzle-orm/pg-core'
import type { Db } from './client.ts'

// The query shapes of tables whose rows an account owns (accountTable in auth.tables.ts): every query names the
// account first, so a query without it looks wrong at a glance.

/** The rows of `accountId` in `table` that also meet `conditions`. */
export const inAccount = (table: { accountId: Column }, accountId: string, ...conditions: (SQL | undefined)[]) =>
  and(eq(table.accountId, accountId), ...conditions)

/** The row `id` of `accountId` in `table`. */
export const accountRowById = (table: { accountId: Column; id: Column }, accountId: string, id: string) =>
  inAccount(table, accountId, eq(table.id, id))

/** The rows of `accountId` in `table` about the contact `contactId` that also meet `conditions`. */
export const ofContact = (
  table: { accountId: Column; contactId: Column },
  accountId: string,
  contactId: string,
  ...conditions: (SQL | undefined)[]
) => inAccount(table, accountId, eq(table.contactId, contactId), ...conditions)

/**
 * A page of `query` newest first by `at` (then id), from `offset`, with one row more than `limit` so the caller can
 * tell whether more exist. `query` is a select made `$dynamic()`.
 */
export const newestFirst = <Q extends PgSelect>(
  query: Q,
  by: { at: Column; id: Column },
  page: { limit: number; offset: number },
) =>
  query
    .orderBy(desc(by.at), desc(by.id))
    .limit(page.limit + 1)
    .offset(page.offset)

type AccountTable = PgTable & { accountId: Column; id: Column }

/** The row `id` of `accountId` in `table`, or null; `lock` holds it (FOR UPDATE) to the end of the transaction. */
export async function findAccountRow<T extends AccountTable>(
  db: Db,
  table: T,
  accountId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<T['$inferSelect'] | null> {
  const query = db
    .select()
    .from(table as PgTable)
    .where(accountRowById(table, accountId, id))
  const [row] = options.lock ? await query.for('update') : await query
  return (row as T['$inferSelect'] | undefined) ?? null
}

/** A repository's finder of a row of `table` by account and id, as findAccountRow: `findTemplate(db, accountId, id)`. */
export const accountRowFinder =
  <T extends AccountTable>(table: T) =>
  (db: Db, accountId: string, id: string, options: { lock?: boolean } = {}) =>
    findAccountRow(db, table, accountId, id, options)

/** Sets `change` on the row `id` of `accountId` in `table` (none when another account's). */
export async function updateAccountRow<T extends AccountTable>(
  tx: Db,
  table: T,
  accountId: string,
  id: string,
  change: PgUpdateSetSource<T>,
): Promise<void> {
  await tx
    .update(table)
    .set(change)
    .where(accountRowById(table, accountId, id))
}

type ContactTable = PgTable & { accountId: Column; contactId: Column }

/** Deletes the rows about the contact `contactId` in `table` (DELETE /contacts/{id}); how many went. */
export async function deleteContactRows<T extends ContactTable>(
  tx: Db,
  table: T,
  accountId: string,
  contactId: string,
): Promise<number> {
  const removed = await tx
    .delete(table as PgTable)
    .where(ofContact(table, accountId, contactId))
    .returning({ one: sql`1` })
  return removed.length
}

/** Sets `change` on the rows about the contact `contactId` in `table` (GDPR anonymization); how many. */
export async function updateContactRows<T extends ContactTable>(
  tx: Db,
  table: T,
  accountId: string,
  contactId: string,
  change: PgUpdateSetSource<T>,
): Promise<number> {
  const changed = await tx
    .update(table)
    .set(change)
    .where(ofContact(table, accountId, contactId))
    .returning({ one: sql`1` })
  return changed.length
}
