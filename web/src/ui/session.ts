import { queryOptions, useQuery, useQueryClient } from '@tanstack/react-query'
import type { paths } from '../api/app.ts'
import { ApiError, app, call, setCsrfToken } from '../api/client.ts'

/** The signed-in member, their account, role and CSRF token, as GET /app/session answers. */
export type SessionShape = paths['/app/session']['get']['responses'][200]['content']['application/json']

/** GET /app/session: the signed-in member, or null. */
export const sessionQuery = queryOptions({
  queryKey: ['session'],
  queryFn: async (): Promise<SessionShape | null> => {
    try {
      const session = await call(app.GET('/app/session'))
      setCsrfToken(session.csrf_token)
      return session
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return null
      throw error
    }
  },
  staleTime: 60_000,
})

/** The signed-in member, or null. */
export function useSession() {
  return useQuery(sessionQuery)
}

/** The member of a page under the signed-in layout route (which renders no page without one). */
export function useSignedIn(): SessionShape {
  const session = useSession().data
  if (!session) throw new Error('useSignedIn outside the signed-in layout')
  return session
}

/** After sign-in, setup, acceptance or a password change: the answer is the new session. */
export function useSetSession() {
  const queryClient = useQueryClient()
  return (session: unknown) => {
    const value = session as SessionShape | null
    if (value) setCsrfToken(value.csrf_token)
    queryClient.setQueryData(sessionQuery.queryKey, value)
    if (!value) queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== 'session' })
  }
}
