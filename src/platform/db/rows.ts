import { getTableColumns, type SQL, sql, type Table } from 'drizzle-orm'

/** The rows of a raw statement's result, as either driver gives them (`{rows}` from pg and PGlite, or an array). */
export function rows<T>(result: unknown): T[] {
  return ((result as { rows?: T[] }).rows ?? (result as T[])) as T[]
}

/**
 * A row of `table` read as one jsonb value inside a larger statement: `(SELECT to_jsonb(table) FROM table WHERE …)`.
 * Lets a hot path fold a lookup another module owns into a statement of its own; rowFromJson turns it back.
 */
export function rowAsJsonSql(table: Table, where: SQL): SQL {
  return sql`(SELECT to_jsonb(${table}) FROM ${table} WHERE ${where} LIMIT 1)`
}

/** The typed row (as the query builder gives it) of a `to_jsonb` value of the table's row; null stays null. */
export function rowFromJson<T extends Table>(table: T, value: unknown): T['$inferSelect'] | null {
  if (value === null || value === undefined) return null
  const json = (typeof value === 'string' ? JSON.parse(value) : value) as Record<string, unknown>
  const row: Record<string, unknown> = {}
  for (const [key, column] of Object.entries(getTableColumns(table))) {
    const raw = json[column.name]
    row[key] = raw === null || raw === undefined ? null : column.mapFromDriverValue(raw)
  }
  return row as T['$inferSelect']
}

/**
 * Rows as one JSON array for jsonb_to_recordset: the named properties under their snake_case column names, a
 * missing one as its default or null (dates become ISO strings through JSON).
 */
export function recordsJson<T extends object, K extends keyof T & string>(
  list: readonly T[],
  keys: readonly K[],
  defaults: { [P in K]?: unknown } = {},
): string {
  const columns = keys.map((key) => [key, key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] as const)
  return JSON.stringify(
    list.map((row) => {
      const record: Record<string, unknown> = {}
      for (const [key, column] of columns) record[column] = row[key] ?? defaults[key] ?? null
      return record
    }),
  )
}

/**
 * The rows of a JSON array as a relation to join a table with:
 * `(SELECT * FROM jsonb_to_recordset(json) AS alias(columns) LIMIT count) AS alias`, `count` being the array's length.
 * The LIMIT is the planner's estimate of its rows; jsonb_to_recordset's own is always 100. Against 100 rows, and a
 * table whose statistics are stale or missing (PGlite has no autovacuum; a table that grew since its last ANALYZE),
 * a hash join over every row of the account looked cheaper than the primary key's probes: a status update of 3 sends
 * read all 50,000 of its account's (78 ms on PGlite, against 1.9 ms by the key).
 */
export function recordsetSql(json: string, count: number, alias: string, columns: string): SQL {
  if (!/^[a-z_][a-z0-9_]*$/.test(alias)) throw new Error(`recordsetSql: ${alias} is not a plain alias`)
  const shape = sql.raw(`${alias}(${columns})`)
  return sql`(SELECT * FROM jsonb_to_recordset(${json}::jsonb) AS ${shape} LIMIT ${count}::int) AS ${sql.raw(alias)}`
}
