import { useQuery, useQueryClient } from '@tanstack/react-query'
import { ApiError, app, call, setCsrfToken } from './api/client.ts'

export interface SessionShape {
  user: { id: string; email: string; name: string; language: 'de' | 'en' }
  account: { id: string; name: string; language: string; timezone: string }
  role: 'owner' | 'admin' | 'member' | 'viewer'
  scopes: string[]
  permissions: string[]
  csrf_token: string
}

/** The signed-in member, or null. */
export function useSession() {
  return useQuery({
    queryKey: ['session'],
    queryFn: async (): Promise<SessionShape | null> => {
      try {
        const session = (await call(app.GET('/app/session'))) as SessionShape
        setCsrfToken(session.csrf_token)
        return session
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) return null
        throw error
      }
    },
    staleTime: 60_000,
  })
}

/** After sign-in, setup, acceptance or a password change: the answer is the new session. */
export function useSetSession() {
  const queryClient = useQueryClient()
  return (session: unknown) => {
    const value = session as SessionShape | null
    if (value) setCsrfToken(value.csrf_token)
    queryClient.setQueryData(['session'], value)
    if (!value) queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== 'session' })
  }
}
