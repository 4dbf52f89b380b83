import { type QueryKey, queryOptions } from '@tanstack/react-query'
import { call } from '../api/client.ts'

/**
 * A question to the API under its cache key: `ask` is the openapi-fetch call, so the answer's type is the
 * generated one; a refusal becomes an ApiError.
 */
export const apiQuery = <const K extends QueryKey, T>(
  queryKey: K,
  ask: () => Promise<{ data?: T; error?: unknown; response: Response }>,
) => queryOptions({ queryKey, queryFn: () => call(ask()) })

/** The first `limit` items of a list. */
export const firstPage = (limit: number) => ({ limit, offset: 0 })

/** What a query answers: `Answer<typeof mediaQuery>` or `Answer<ReturnType<typeof newsletterQuery>>`. */
export type Answer<Q extends { queryFn?: unknown }> = Awaited<
  ReturnType<Extract<Q['queryFn'], (...args: never[]) => unknown>>
>
