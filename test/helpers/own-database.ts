import { sql } from 'drizzle-orm'
import { type Database, type Db, openDatabase } from '../../src/platform/db/client.ts'
import { rows } from '../../src/platform/db/rows.ts'
import { createScratchDatabase } from './scratch-database.ts'

/**
 * A database of the test file's own, for tests whose subject is the statistics or the rows a statement reads: a
 * scratch PostgreSQL database beside HEROLD_TEST_DATABASE_URL when it is set, else PGlite in memory. Not migrated.
 */
export async function openOwnDatabase(prefix: string): Promise<{ database: Database; close(): Promise<void> }> {
  const shared = process.env.HEROLD_TEST_DATABASE_URL || undefined
  const own = shared ? await createScratchDatabase(shared, prefix) : null
  const database = await openDatabase({ databaseUrl: own?.url, dataDir: 'memory://', poolSize: 2 })
  return {
    database,
    async close() {
      await database.close()
      await own?.drop().catch(() => {})
    },
  }
}

/**
 * The rows the transaction has read so far from `table` and its indexes, by the database's own per-transaction
 * counters (index entries returned, table rows fetched, rows read by sequential scans): what a statement read is the
 * difference around it.
 */
export async function rowsReadSoFar(tx: Db, table: string): Promise<number> {
  if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new Error(`rowsReadSoFar: ${table} is not a plain table name`)
  const result = await tx.execute(
    sql.raw(`SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(c.oid)
        + pg_stat_get_xact_tuples_fetched(c.oid)), 0)::bigint AS n
      FROM pg_class c
      WHERE c.oid = '${table}'::regclass OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = '${table}'::regclass)`),
  )
  return Number(rows<{ n: number | string }>(result)[0]?.n ?? 0)
}
