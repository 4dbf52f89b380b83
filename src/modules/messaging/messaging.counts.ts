import { type SQL, sql } from 'drizzle-orm'
import type { Db } from '../../platform/db/client.ts'
import { rows } from '../../platform/db/rows.ts'
import type { SendOrigin } from './messaging.tables.ts'

/** Which send records to count: always one account's, narrowed by any of the rest. */
export interface SendCountFilter {
  accountId: string
  origin?: SendOrigin
  /** the records of these origins (a follow-up's steps, say), or of the ids a subquery of the caller selects */
  originIds?: readonly string[] | SQL
  templateId?: string
  /** only records created at or after this instant */
  since?: Date | null
}

/** The columns send counts can be grouped by. */
export type SendCountKey = 'origin' | 'origin_id' | 'status' | 'reason'

export type SendCountRow<K extends SendCountKey> = { [key in K]: key extends 'reason' ? string | null : string } & {
  n: number
}

/**
 * The number of send records matching `filter`, grouped by `by`: the one place other modules read how their sends
 * went (a newsletter's status, a template's or a follow-up step's statistics), so the send table stays messaging's.
 */
export async function countSends<K extends SendCountKey>(
  db: Db,
  filter: SendCountFilter,
  by: readonly K[],
): Promise<Array<SendCountRow<K>>> {
  const where: SQL[] = [sql`account_id = ${filter.accountId}`]
  if (filter.origin) where.push(sql`origin = ${filter.origin}`)
  if (filter.originIds !== undefined) {
    const ids = filter.originIds
    where.push(
      Array.isArray(ids) ? sql`origin_id = ANY(${`{${ids.join(',')}}`}::uuid[])` : sql`origin_id IN (${ids as SQL})`,
    )
  }
  if (filter.templateId) where.push(sql`template_id = ${filter.templateId}`)
  if (filter.since) where.push(sql`created_at >= ${filter.since.toISOString()}::timestamptz`)
  const columns = sql.join(
    by.map((key) => sql.identifier(key)),
    sql`, `,
  )
  const grouped = by.length > 0 ? sql`${columns}, ` : sql``
  const groupBy = by.length > 0 ? sql` GROUP BY ${columns}` : sql``
  const result = await db.execute(
    sql`SELECT ${grouped}count(*)::int AS n FROM template_sends WHERE ${sql.join(where, sql` AND `)}${groupBy}`,
  )
  return rows<SendCountRow<K>>(result).map((r) => ({ ...r, n: Number(r.n) }))
}
