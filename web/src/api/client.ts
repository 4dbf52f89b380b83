import createClient, { type Middleware } from 'openapi-fetch'
import type { paths as AppPaths } from './app.ts'
import type { paths as V1Paths } from './v1.ts'

/** The session's CSRF token, from GET /app/session; sent on every change. */
let csrfToken = ''
export function setCsrfToken(token: string): void {
  csrfToken = token
}

const csrf: Middleware = {
  onRequest({ request }) {
    if (request.method !== 'GET' && csrfToken) request.headers.set('x-csrf-token', csrfToken)
    return request
  },
}

/** An answer of the API that is not a success: its words, never its raw JSON. */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  /** the error's finer reason (the envelope's key), such as keywords_overlap */
  readonly key: string
  constructor(status: number, code: string, message: string, key = code) {
    super(message)
    this.status = status
    this.code = code
    this.key = key
  }
}

// the API at the same origin; the session cookie goes along by itself
export const v1 = createClient<V1Paths>({ baseUrl: '', credentials: 'same-origin' })
export const app = createClient<AppPaths>({ baseUrl: '', credentials: 'same-origin' })
v1.use(csrf)
app.use(csrf)

/** Unwraps an openapi-fetch result: its data, or an ApiError with the API's message. */
export async function call<T>(promise: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: { data?: T; error?: unknown; response: Response }
  try {
    result = await promise
  } catch {
    throw new ApiError(0, 'network', '')
  }
  if (result.response.ok) return result.data as T
  const body = result.error as { error?: { code?: string; key?: string; message?: string } } | undefined
  throw new ApiError(
    result.response.status,
    body?.error?.code ?? 'unknown',
    body?.error?.message ?? '',
    body?.error?.key ?? body?.error?.code ?? 'unknown',
  )
}
