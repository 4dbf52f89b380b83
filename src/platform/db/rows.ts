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
