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

/**
 * What the platform itself answers, by status, for the routes it applies to (pipeline.ts adds each where it applies):
 * each names its `code` and, where finer, its `key`.
 */
export const platformErrors = {
  invalid:
    'bad_request: the path, query or body does not match the schema (the message names the field; unknown fields are refused, each named in unknown_fields)',
  idempotencyKeyInvalid: 'idempotency_key_invalid: malformed Idempotency-Key',
  unauthorized: 'unauthorized: missing or invalid API key or session',
  forbidden: 'forbidden (key apikey_scope_fehlt): the key lacks the scope; account_blocked: the account is blocked',
  csrf: 'csrf_invalid (key csrf_token_ungueltig): a change by a web-app session without its X-CSRF-Token',
  notFound: 'not_found: missing or belonging to another account',
  idempotencyInProgress:
    'idempotency_in_progress (Retry-After: 1): the first request with this Idempotency-Key still runs',
  payloadTooLarge: 'payload_too_large: the body exceeds the size limit',
  unsupportedMediaType: 'unsupported_media_type: the body is not JSON',
  idempotencyKeyMismatch: 'idempotency_key_mismatch: the same Idempotency-Key with another body, path or query string',
  rateLimited: 'rate_limited: over the requests per minute of this key; see Retry-After',
  internal: 'internal_error: an unexpected failure (never carries internals)',
  statusUnavailable: 'status_unavailable: the account status could not be checked; retry in a minute',
}

/**
 * A route's own error responses, to spread into its `response` schema: status to the codes (and keys) the route's
 * service can answer with, written `code (key k1, k2): when`. The platform's shared causes are appended to each.
 */
export function errorResponses(errors: Partial<Record<ErrorStatus, string>>): Record<number, ErrorResponse> {
  const out: Record<number, ErrorResponse> = {}
  for (const [status, description] of Object.entries(errors)) out[Number(status)] = { description, $ref: 'Error#' }
  return out
}

export type ErrorStatus = 400 | 401 | 403 | 404 | 405 | 409 | 410 | 413 | 415 | 422 | 429 | 500 | 502 | 503
export interface ErrorResponse {
  description: string
  $ref: 'Error#'
}
