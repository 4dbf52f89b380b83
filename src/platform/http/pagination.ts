import { type TSchema, Type } from 'typebox'

export interface PageBounds {
  maxLimit: number
  defaultLimit: number
  maxOffset?: number
}

/** The `limit` and `offset` query parameters, to spread into a route's querystring schema. */
export function paginationQuery(bounds: PageBounds) {
  return {
    limit: Type.Integer({ minimum: 1, maximum: bounds.maxLimit, default: bounds.defaultLimit }),
    offset: Type.Integer({
      minimum: 0,
      default: 0,
      ...(bounds.maxOffset === undefined ? {} : { maximum: bounds.maxOffset }),
    }),
  }
}

/**
 * The OFFSET to give the database for a list whose offset the spec bounds only from below: past any row count a
 * table can reach the page is empty either way, and a number beyond bigint (1e21) would fail the query.
 */
export const databaseOffset = (offset: number) => Math.min(offset, Number.MAX_SAFE_INTEGER)

export const pageFields = {
  limit: Type.Integer(),
  offset: Type.Integer(),
  has_more: Type.Boolean(),
  next_offset: Type.Union([Type.Integer(), Type.Null()]),
}

/** A page response schema: `{[name]: [item], limit, offset, has_more, next_offset}`. */
export function pageSchema<N extends string, S extends TSchema>(name: N, item: S) {
  return Type.Object({ [name]: Type.Array(item), ...pageFields } as {
    [K in N]: ReturnType<typeof Type.Array<S>>
  } & typeof pageFields)
}

export interface Page<T> {
  items: T[]
  limit: number
  offset: number
  has_more: boolean
  next_offset: number | null
}

/**
 * Cuts a page from rows fetched with `LIMIT limit + 1`: the extra row only tells whether more exist,
 * so no query has to count the whole table.
 */
export function toPage<T>(rows: T[], limit: number, offset: number): Page<T> {
  const hasMore = rows.length > limit
  return {
    items: hasMore ? rows.slice(0, limit) : rows,
    limit,
    offset,
    has_more: hasMore,
    next_offset: hasMore ? offset + limit : null,
  }
}

/** A page as the API answers it, its items under the list's name: `{ newsletters: [...], limit, offset, has_more, … }`. */
export function namedPage<K extends string, P extends { items: unknown[] }>(name: K, { items, ...page }: P) {
  return { [name]: items, ...page } as Record<K, P['items']> & Omit<P, 'items'>
}
