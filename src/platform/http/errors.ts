import { Type } from 'typebox'

/** The one error every layer throws; the error handler turns it into the envelope. */
export class AppError extends Error {
  readonly status: number
  readonly code: string
  readonly key: string
  readonly details: Record<string, unknown>
  readonly headers: Record<string, string>

  constructor(
    status: number,
    code: string,
    message: string,
    options: { key?: string; details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message)
    this.status = status
    this.code = code
    this.key = options.key ?? code
    this.details = options.details ?? {}
    this.headers = options.headers ?? {}
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, key: this.key, message: this.message, ...this.details } }
  }
}

export interface ErrorBody {
  error: { code: string; key: string; message: string; [detail: string]: unknown }
}

export const badRequest = (message: string, key = 'bad_request', details?: Record<string, unknown>) =>
  new AppError(400, 'bad_request', message, { key, details })

export const notFound = (what = 'resource') => new AppError(404, 'not_found', `${what} not found`)

export const ErrorSchema = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.String({ description: 'stable machine-readable code; branch on this' }),
        key: Type.String({ description: 'finer machine-readable reason (equals code when there is none finer)' }),
        message: Type.String({ description: 'human-readable English' }),
      },
      { additionalProperties: true },
    ),
  },
  { $id: 'Error', title: 'Error' },
)

/** Every error response a route may give, by status, as documented in the OpenAPI description. */
export const errorDescriptions: Record<number, string> = {
  400: 'bad_request: invalid request; idempotency_key_invalid: malformed Idempotency-Key',
  401: 'unauthorized: missing or invalid API key',
  403: 'forbidden (key apikey_scope_fehlt): missing scope; account_blocked: the account is blocked',
  404: 'not_found: missing or belonging to another account',
  409: 'a state conflict; idempotency_in_progress (Retry-After: 1) while the first request with the key runs',
  413: 'payload_too_large: the body exceeds the size limit',
  415: 'unsupported_media_type: the body is not JSON',
  422: 'idempotency_key_mismatch: same Idempotency-Key with a different body, path or query string',
  429: 'rate_limited: over 120 requests per minute for this key; see Retry-After',
  500: 'internal_error: an unexpected failure (never carries internals)',
  503: 'status_unavailable: the account status could not be checked; retry in a minute',
}
