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

/** One field a request was refused for: `body.steps.0.tag` and the schema rule it breaks (`required`). */
export interface FieldProblem {
  path: string
  rule: string
  limit?: number
}

/** An answer of the API that is not a success: its words, never its raw JSON. */
export class ApiError extends Error {
  readonly status: number
  readonly code: string
  /** the error's finer reason (the envelope's key), such as keywords_overlap */
  readonly key: string
  /** the refused fields of a 400 (empty when the refusal is not about a field) */
  readonly fields: FieldProblem[]
  constructor(status: number, code: string, message: string, key = code, fields: FieldProblem[] = []) {
    super(message)
    this.status = status
    this.code = code
    this.key = key
    this.fields = fields
  }
}

// the schema validator's sentences, as the server words a refusal of /v1 (which has no `fields`)
const RULES: Array<[RegExp, (m: RegExpMatchArray) => { rule: string; extra?: string; limit?: number }]> = [
  [/^must have required property '(.+)'$/, (m) => ({ rule: 'required', extra: m[1] })],
  [/^must NOT have additional properties$/, () => ({ rule: 'additionalProperties' })],
  [/^must NOT have more than (\d+) characters$/, (m) => ({ rule: 'maxLength', limit: Number(m[1]) })],
  [/^must NOT have fewer than (\d+) characters$/, (m) => ({ rule: 'minLength', limit: Number(m[1]) })],
  [/^must NOT have more than (\d+) items$/, (m) => ({ rule: 'maxItems', limit: Number(m[1]) })],
  [/^must NOT have fewer than (\d+) items$/, (m) => ({ rule: 'minItems', limit: Number(m[1]) })],
  [/^must be >= (\S+)$/, (m) => ({ rule: 'minimum', limit: Number(m[1]) })],
  [/^must be <= (\S+)$/, (m) => ({ rule: 'maximum', limit: Number(m[1]) })],
  [/^must match format /, () => ({ rule: 'format' })],
  [/^must match pattern /, () => ({ rule: 'pattern' })],
  [/^must be equal to one of the allowed values$/, () => ({ rule: 'enum' })],
  [/^must be (string|integer|number|boolean|object|array|null)/, () => ({ rule: 'type' })],
]

/** The fields of a refusal: the envelope's `fields` (/app), else read from a schema message (`body/steps/0 must ...`). */
export function fieldsOf(error: { message?: string; fields?: unknown }): FieldProblem[] {
  if (Array.isArray(error.fields)) return error.fields as FieldProblem[]
  const found = /^(body|query|querystring|params)(\/\S*)? (must .+)$/.exec(error.message ?? '')
  if (!found) return []
  const steps = (found[2] ?? '').split('/').filter(Boolean)
  for (const [pattern, read] of RULES) {
    const match = pattern.exec(found[3])
    if (!match) continue
    const { rule, extra, limit } = read(match)
    const path = [found[1] === 'querystring' ? 'query' : found[1], ...steps, ...(extra ? [extra] : [])].join('.')
    return [{ path, rule, ...(limit === undefined ? {} : { limit }) }]
  }
  return [{ path: [found[1], ...steps].join('.'), rule: 'invalid' }]
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
  const body = result.error as
    | { error?: { code?: string; key?: string; message?: string; fields?: unknown } }
    | undefined
  throw new ApiError(
    result.response.status,
    body?.error?.code ?? 'unknown',
    body?.error?.message ?? '',
    body?.error?.key ?? body?.error?.code ?? 'unknown',
    result.response.status === 400 && body?.error ? fieldsOf(body.error) : [],
  )
}
