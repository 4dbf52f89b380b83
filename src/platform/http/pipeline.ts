import type {
  FastifyContextConfig,
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  RouteOptions,
} from 'fastify'
import fp from 'fastify-plugin'
import { Type } from 'typebox'
import { authenticateApiKey, bearerToken, cachedApiKey, type ResolvedKey, requireScope } from '../auth/authenticate.ts'
import type { CredentialCache } from '../auth/credential-cache.ts'
import type { Scope } from '../auth/scopes.ts'
import { sessionOfRequest } from '../auth/sessions.ts'
import type { TenantContext } from '../auth/tenant.ts'
import type { Clock } from '../clock.ts'
import type { Db } from '../db/client.ts'
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  type IdempotencyScope,
  isValidIdempotencyKey,
  refuseClaim,
  releaseIdempotencyKey,
  requestFingerprint,
} from '../idempotency/idempotency.ts'
import type { RateDecision, RateLimiter } from '../rate-limit/rate-limiter.ts'
import { AppError, badRequest, ErrorSchema, platformErrors } from './errors.ts'
import { MAX_BODY_DEPTH, nestsDeeperThan } from './json-depth.ts'
import { addNoStore } from './security-headers.ts'
import { toWire } from './serializer.ts'
import { closeObjects, unknownFields, unknownFieldsMessage } from './strict-input.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** no credential needed (the OpenAPI document, health checks, public pages) */
    public?: boolean
    /** the scope a credential must carry (on /app several may be named, checked in order); omitted: any valid one */
    scope?: Scope | readonly Scope[]
    /** accepts an Idempotency-Key header (section 8) */
    idempotent?: boolean
  }
  interface FastifyRequest {
    tenant: TenantContext
    idempotency: { scope: IdempotencyScope; replayed: boolean } | null
  }
}

export interface PipelineOptions {
  db: Db
  clock: Clock
  rateLimiter: RateLimiter
  /** the process's credential cache; without one every request reads its key from the database */
  credentials?: CredentialCache<ResolvedKey>
}

/** The rules every route follows (sections 5, 7, 8, 9), opted into by a route's `config`. */
export const pipeline = fp<PipelineOptions>(
  async (app, { db, clock, rateLimiter, credentials }) => {
    app.decorateRequest('tenant', null as unknown as TenantContext)
    app.decorateRequest('idempotency', null)
    app.addSchema(ErrorSchema)
    installJsonParser(app)

    // Each API route gets the hooks it needs as its own (a hook added to the app would run, and cost, on every
    // request of every route): the credential check on every /v1 route that needs one, the Idempotency-Key hooks on
    // the routes that accept the header.
    app.addHook('onRoute', (route) => {
      if (isApiRoute(route.url) || route.url?.startsWith('/app/')) closeInput(route)
      documentRoute(route)
      if (!isApiRoute(route.url)) return
      const config = (route.config ?? {}) as FastifyContextConfig
      if (!config.public) route.onRequest = [authenticate, ...hooksOf(route.onRequest)]
      if (config.idempotent) {
        route.preValidation = [claimIdempotency, ...hooksOf(route.preValidation)]
        route.onSend = [...hooksOf(route.onSend), completeIdempotency]
        route.onRequestAbort = [...hooksOf(route.onRequestAbort), releaseIdempotency]
        route.onTimeout = [...hooksOf(route.onTimeout), releaseIdempotency]
      }
    })

    // Cache-Control: no-store on the API's answers; added after the hooks above, so it runs first, refusals included
    app.addHook('onRoute', addNoStore)

    // Synchronous when the key is in the credential cache and the rate limiter counts in this process (an
    // integration's steady traffic on one server): no promise between the request and its handler.
    const authenticate = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      const header = request.headers.authorization
      try {
        const tenant = header && credentials ? cachedApiKey(bearerToken(header), credentials) : undefined
        if (tenant && rateLimiter.consumeNow) {
          admit(request, tenant)
          applyRate(reply, rateLimiter.consumeNow(rateKey(tenant), tenant.actor.requestsPerMinute))
          done()
          return
        }
      } catch (error) {
        done(error as Error)
        return
      }
      authenticateAndCount(request, reply).then(() => done(), done)
    }

    const authenticateAndCount = async (request: FastifyRequest, reply: FastifyReply) => {
      // the web app calls /v1 with its session cookie (and its CSRF token on changes); integrations with a key
      const session = request.headers.authorization ? null : await sessionOfRequest(db, clock, request)
      const tenant =
        session?.tenant ?? (await authenticateApiKey(db, bearerToken(request.headers.authorization), credentials))
      admit(request, tenant)
      applyRate(reply, await rateLimiter.consume(rateKey(tenant), tenant.actor.requestsPerMinute))
    }

    const claimIdempotency = async (request: FastifyRequest, reply: FastifyReply) => {
      const header = request.headers['idempotency-key']
      if (header === undefined) return
      const key = Array.isArray(header) ? header.join(',') : header
      if (!isValidIdempotencyKey(key)) {
        throw new AppError(
          400,
          'idempotency_key_invalid',
          'Idempotency-Key must be 1 to 255 printable ASCII characters without spaces',
        )
      }
      const scope = { accountId: request.tenant.accountId, apiKeyId: request.tenant.actor.keyId ?? 'oauth', key }
      const claim = await claimIdempotencyKey(
        db,
        clock,
        scope,
        requestFingerprint(request.method, request.url, request.body),
      )
      refuseClaim(claim, {
        key: 'Idempotency-Key',
        request: 'request',
        other: 'a different body, path or query string',
      })
      if (claim.kind === 'replay') {
        request.idempotency = { scope, replayed: true }
        reply.headers(claim.headers).header('idempotent-replayed', 'true').code(claim.status)
        return reply.send(claim.body)
      }
      request.idempotency = { scope, replayed: false }
    }

    // toWire is synchronous: a callback hook spares every response a promise
    app.addHook('preSerialization', (_request, _reply, payload, done) => done(null, toWire(payload)))

    const completeIdempotency = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
      const idempotency = request.idempotency
      if (!idempotency || idempotency.replayed) return payload
      request.idempotency = null
      const contentType = reply.getHeader('content-type')
      await completeIdempotencyKey(db, idempotency.scope, {
        status: reply.statusCode,
        headers: contentType ? { 'content-type': String(contentType) } : {},
        body: typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '',
      })
      return payload
    }

    // A request that ended without a response (client gone, process error) frees its key.
    const releaseIdempotency = async (request: FastifyRequest) => {
      if (request.idempotency && !request.idempotency.replayed) {
        await releaseIdempotencyKey(db, request.idempotency.scope).catch(() => {})
      }
    }

    app.setNotFoundHandler((request, reply) => {
      reply
        .code(404)
        .send(new AppError(404, 'not_found', `No route ${request.method} ${request.url.split('?')[0]}`).toBody())
    })
    app.setErrorHandler((error: FastifyError, request, reply) => sendError(error, request, reply))
  },
  { name: 'herold-pipeline' },
)

const rateKey = (tenant: TenantContext) => `key:${tenant.actor.keyId}`

/** The credential's tenant on the request if its scope allows the route (a refused request is not counted). */
function admit(request: FastifyRequest, tenant: TenantContext): void {
  request.tenant = tenant
  const scope = request.routeOptions.config.scope
  if (scope) requireScopes(tenant, scope)
}

/** Refuses a credential that lacks one of a route's scopes (the first missing one is named). */
export function requireScopes(tenant: TenantContext, scope: Scope | readonly Scope[]): void {
  if (typeof scope === 'string') requireScope(tenant, scope)
  else for (const one of scope) requireScope(tenant, one)
}

/** The rate headers on the reply; 429 when the credential's rate is spent. */
function applyRate(reply: FastifyReply, rate: RateDecision): void {
  reply.header('ratelimit-policy', `${rate.limit};w=60`)
  reply.header('ratelimit', `limit=${rate.limit}, remaining=${rate.remaining}, reset=${rate.resetSeconds}`)
  if (!rate.allowed) {
    throw new AppError(429, 'rate_limited', `Rate limit of ${rate.limit} requests per minute exceeded`, {
      headers: { 'retry-after': String(rate.resetSeconds) },
    })
  }
}

/**
 * Strict input: the body and query schemas refuse fields they do not name (nested objects too; maps the schema opens
 * stay open), and a route without query parameters takes none. The copy is what validates and what is documented.
 */
function closeInput(route: RouteOptions): void {
  route.schema ??= {}
  const schema = route.schema as Record<string, unknown>
  if ('x-herold-closed' in schema) return
  Object.defineProperty(schema, 'x-herold-closed', { value: true, enumerable: false })
  if (schema.body) schema.body = closeBody(schema.body as Record<string, unknown>)
  schema.querystring = schema.querystring ? closeObjects(schema.querystring) : NO_QUERY
}

/** A body schema, or one per content type (`{content: {'application/json': {schema}}}`), closed. */
function closeBody(body: Record<string, unknown>): Record<string, unknown> {
  const content = body.content as Record<string, { schema: unknown }> | undefined
  if (!content) return closeObjects(body)
  const closed = Object.entries(content).map(([type, media]) => [
    type,
    { ...media, schema: closeObjects(media.schema) },
  ])
  return { ...body, content: Object.fromEntries(closed) }
}

/** The body schema that validated this request (the one of its content type when the route has several). */
function bodySchemaOf(request: FastifyRequest): unknown {
  const body = (request.routeOptions.schema as { body?: Record<string, unknown> } | undefined)?.body
  const content = body?.content as Record<string, { schema: unknown }> | undefined
  if (!content) return body
  const type = String(request.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase()
  return content[type]?.schema
}

const NO_QUERY = Type.Object({}, { additionalProperties: false })

/** A route option's hooks as an array (Fastify takes one function or an array). */
// biome-ignore lint/suspicious/noExplicitAny: hooks of every kind pass through
function hooksOf(hooks: any): any[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks]
}

/** The API lives under /v1 and needs a credential; pages, health checks and /docs outside it do not. */
function isApiRoute(url: string | undefined): boolean {
  return url?.startsWith('/v1/') === true
}

function installJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // A POST without a body (submit, cancel) may still carry Content-Type: application/json.
    const text = typeof body === 'string' ? body : body.toString('utf8')
    if (text.trim() === '') return done(null, undefined)
    parse(request, text, (error, value) => {
      if (error) return done(new AppError(400, 'bad_request', 'The body is not valid JSON'), undefined)
      // refused here, before a schema or a tool walks it recursively and overflows the stack (a 500)
      if (nestsDeeperThan(value, MAX_BODY_DEPTH)) {
        return done(
          new AppError(400, 'bad_request', `The body nests deeper than ${MAX_BODY_DEPTH} levels`, { key: 'too_deep' }),
          undefined,
        )
      }
      done(null, value)
    })
  })
}

function toAppError(error: FastifyError | AppError, request: FastifyRequest): AppError {
  if (error instanceof AppError) return error
  if (error.validation) return validationError(error, request)
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(413, 'payload_too_large', 'The request body is too large')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(415, 'unsupported_media_type', 'Unsupported Content-Type; send application/json')
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError(400, 'bad_request', 'Content-Length does not match the body')
  }
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) {
    return new AppError(status, status === 404 ? 'not_found' : 'bad_request', error.message || 'Invalid request')
  }
  return new AppError(500, 'internal_error', 'An unexpected error occurred')
}

/** A refused request part: its unknown fields by path when it has any (all of them), else Ajv's first complaint. */
function validationError(error: FastifyError, request: FastifyRequest): AppError {
  const context = error.validationContext
  const part = context === 'querystring' ? 'query' : context
  if (context === 'body' || context === 'querystring') {
    const fields =
      context === 'body'
        ? unknownFields(bodySchemaOf(request), request.body)
        : unknownFields(request.routeOptions.schema?.querystring, request.query)
    if (fields.length > 0) {
      const noun = context === 'body' ? 'field' : 'parameter'
      return badRequest(unknownFieldsMessage(part ?? context, fields, noun), 'bad_request', { unknown_fields: fields })
    }
  }
  return badRequest(error.message.replace(/^querystring/, 'query'))
}

function sendError(error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply): void {
  const appError = withFields(toAppError(error, request), error, request.url)
  if (appError.status >= 500 && appError.code === 'internal_error') {
    request.log.error({ err: error }, 'unhandled error')
  }
  reply.headers(appError.headers).code(appError.status).send(appError.toBody())
}

/** One refused field of a request, for the console to name it in the member's language (docs/web-app.md). */
export interface FieldProblem {
  /** where: `body`, `query` or `params`, then the property names and array positions, `.`-separated */
  path: string
  /** the schema rule it breaks: required, maxLength, minLength, format, enum, minimum, maximum, type, ... */
  rule: string
  /** the rule's bound where it has one (a length, a minimum) */
  limit?: number
}

/** A schema refusal on an /app route carries `fields` beside the message; /v1 answers stay as the spec shows them. */
function withFields(appError: AppError, error: FastifyError | AppError, url: string): AppError {
  if (!url.startsWith('/app/') || error instanceof AppError || !error.validation) return appError
  const where = error.validationContext === 'querystring' ? 'query' : (error.validationContext ?? 'body')
  const fields = error.validation.map((problem) => fieldProblem(where, problem))
  return new AppError(appError.status, appError.code, appError.message, {
    key: appError.key,
    details: { ...appError.details, fields },
    headers: appError.headers,
  })
}

function fieldProblem(where: string, problem: NonNullable<FastifyError['validation']>[number]): FieldProblem {
  const params = problem.params as Record<string, unknown>
  const steps = problem.instancePath.split('/').filter(Boolean)
  // a missing property is reported on its parent object: the field is the property
  if (problem.keyword === 'required') steps.push(String(params.missingProperty))
  if (problem.keyword === 'additionalProperties') steps.push(String(params.additionalProperty))
  const limit = typeof params.limit === 'number' ? params.limit : undefined
  return { path: [where, ...steps].join('.'), rule: problem.keyword, ...(limit === undefined ? {} : { limit }) }
}

const errorRef = { $ref: 'Error#' } as const

/** Adds what every route shares to its OpenAPI description: security, scope, error responses, Idempotency-Key. */
function documentRoute(route: RouteOptions): void {
  const config = (route.config ?? {}) as FastifyContextConfig
  route.schema ??= {}
  const schema = route.schema as Record<string, unknown>
  // HEAD routes share the GET route's schema object: describe it once.
  if (schema.hide || !isApiRoute(route.url) || 'x-herold-documented' in schema) return
  Object.defineProperty(schema, 'x-herold-documented', { value: true, enumerable: false })
  if (!config.public) {
    schema.security = [{ bearerAuth: [] }]
    schema['x-scope'] = config.scope ?? null
    const scopeText = config.scope
      ? `Scope: ${[config.scope]
          .flat()
          .map((scope) => `\`${scope}\``)
          .join(', ')}.`
      : 'Scope: none (any valid API key).'
    schema.description = schema.description ? `${schema.description}\n\n${scopeText}` : scopeText
  } else {
    schema.security = []
  }
  if (config.idempotent) {
    const existing = schema.headers as { properties?: Record<string, unknown>; required?: string[] } | undefined
    schema.headers = Type.Object({
      ...(existing?.properties ?? {}),
      'idempotency-key': Type.Optional(
        Type.String({
          description:
            '1-255 printable ASCII characters without spaces; the same key within 24 hours replays the first response',
        }),
      ),
    })
  }
  schema.response ??= {}
  const response = schema.response as Record<string, { description?: string; $ref?: string }>
  for (const [status, causes] of sharedErrors(route, schema)) {
    const own = response[status]
    if (!own) response[status] = { description: causes.join('; '), ...errorRef }
    else if (own.$ref === errorRef.$ref)
      response[status] = { ...own, description: [own.description, ...causes].join('; ') }
  }
}

/** The platform's error causes that apply to a route, by status: what its config and schema make possible. */
function sharedErrors(route: RouteOptions, schema: Record<string, unknown>): Map<number, string[]> {
  const config = (route.config ?? {}) as { public?: boolean; idempotent?: boolean }
  const errors = new Map<number, string[]>()
  const add = (status: number, cause: string) => errors.set(status, [...(errors.get(status) ?? []), cause])
  if (schema.body || schema.querystring || schema.params) add(400, platformErrors.invalid)
  if (config.idempotent) add(400, platformErrors.idempotencyKeyInvalid)
  if (!config.public) {
    add(401, platformErrors.unauthorized)
    add(403, platformErrors.forbidden)
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    if (methods.some((m) => m !== 'GET' && m !== 'HEAD')) add(403, platformErrors.csrf)
  }
  if (schema.params) add(404, platformErrors.notFound)
  if (config.idempotent) add(409, platformErrors.idempotencyInProgress)
  if (schema.body) {
    add(413, platformErrors.payloadTooLarge)
    add(415, platformErrors.unsupportedMediaType)
  }
  if (config.idempotent) add(422, platformErrors.idempotencyKeyMismatch)
  if (!config.public) add(429, platformErrors.rateLimited)
  add(500, platformErrors.internal)
  if (!config.public) add(503, platformErrors.statusUnavailable)
  return errors
}
