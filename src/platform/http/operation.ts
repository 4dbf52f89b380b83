import type { FastifyInstance } from 'fastify'
import type { Static, TObject, TSchema } from 'typebox'
import type { Permission } from '../auth/roles.ts'
import type { Scope } from '../auth/scopes.ts'
import type { TenantContext } from '../auth/tenant.ts'
import { type ErrorStatus, errorResponses } from './errors.ts'
import { withGermanAliases } from './serializer.ts'

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type SuccessStatus = 200 | 201 | 202 | 204

export type StaticOf<T> = T extends TSchema ? Static<T> : undefined

/** What an operation's handler receives, from a REST request or from a tool call's arguments alike. */
export interface OperationCall<P = unknown, Q = unknown, B = unknown> {
  tenant: TenantContext
  params: P
  query: Q
  body: B
}

/**
 * One operation of the REST API or the web app, written once: its method and path, the scope it needs, its schemas,
 * its documentation and its handler over the module's services. The module's routes mount it (`mountOperations`) and
 * a tool that stands for it takes its arguments, limits, scope and answer from it (`src/platform/tools/from-operation.ts`),
 * so a rule exists in one place. Operations that need the raw request or reply (files, streams, redirects, headers)
 * stay plain Fastify routes.
 */
export interface Operation<
  S = unknown,
  P extends TObject | undefined = TObject | undefined,
  Q extends TObject | undefined = TObject | undefined,
  B extends TSchema | undefined = TSchema | undefined,
  R extends TSchema = TSchema,
> {
  method: Method
  /** the OpenAPI path below its mount, `/templates/{id}` */
  path: string
  /** the public API under /v1 (the default) or the web app under /app */
  mount?: 'v1' | 'app'
  scope?: Scope | Scope[]
  permission?: Permission
  /** takes an Idempotency-Key (POST) */
  idempotent?: boolean
  /** the largest body it reads in bytes, where that is not the server's default */
  bodyLimit?: number
  operationId: string
  summary: string
  description?: string
  tags: string[]
  params?: P
  query?: Q
  body?: B
  /** the success status, 200 unless said; 204 sends no body (a tool still gets the handler's answer) */
  status?: SuccessStatus
  /**
   * where the status depends on the answer (201 created, 200 found; 201 sent, 202 queued): the answer each status
   * gives, and which status an answer gets
   */
  statusOf?: { responses: Partial<Record<SuccessStatus, TSchema>>; of(answer: object): SuccessStatus }
  /** the success answer */
  response: R
  /** the documented failures, as errorResponses takes them */
  errors?: Partial<Record<ErrorStatus, string>>
  /**
   * English fields of the answer that REST also gives under their deprecated German names (withGermanAliases);
   * `tags.origin`: the field origin of each item of tags (or of the object tags)
   */
  germanAliases?: string[]
  /** REST only: the answer as JSON text the database wrote, sent as it is; null: the handler's answer */
  json?(services: S, call: OperationCall<StaticOf<P>, StaticOf<Q>, StaticOf<B>>): Promise<string | null>
  /** the answer, before the serializer writes it by `response` (dates become strings, as on every route) */
  handle(services: S, call: OperationCall<StaticOf<P>, StaticOf<Q>, StaticOf<B>>): Promise<object>
}

// biome-ignore lint/suspicious/noExplicitAny: a list of operations of different schemas
export type AnyOperation<S = any> = Operation<S, any, any, any, any>

/**
 * The `operation` of a module whose handlers call the services `S` (`const operation = operationsUsing<Services>()`);
 * it only checks the definition's types and returns it.
 */
export function operationsUsing<S>() {
  return <
    P extends TObject | undefined = undefined,
    Q extends TObject | undefined = undefined,
    B extends TSchema | undefined = undefined,
    R extends TSchema = TSchema,
  >(
    definition: Operation<S, P, Q, B, R>,
  ): Operation<S, P, Q, B, R> => definition
}

/** `/templates/{id}` as Fastify writes it: `/templates/:id`. */
export const fastifyPath = (path: string) => path.replace(/\{([^}]+)\}/g, ':$1')

/** `GET /templates/{id}`, or `GET /app/...` for the web app's: how a tool names the operation it stands for. */
export const restName = (operation: AnyOperation) =>
  `${operation.method} ${operation.mount === 'app' ? '/app' : ''}${operation.path}`

/** Registers operations as Fastify routes, their handlers calling `services`. */
export function mountOperations<S>(app: FastifyInstance, services: S, operations: AnyOperation<S>[]): void {
  for (const operation of operations) {
    const status = operation.status ?? 200
    app.route({
      method: operation.method,
      url: fastifyPath(operation.path),
      config: {
        ...(operation.scope ? { scope: operation.scope } : {}),
        ...(operation.permission ? { permission: operation.permission } : {}),
        ...(operation.idempotent ? { idempotent: true } : {}),
      },
      ...(operation.bodyLimit ? { bodyLimit: operation.bodyLimit } : {}),
      schema: {
        operationId: operation.operationId,
        summary: operation.summary,
        ...(operation.description ? { description: operation.description } : {}),
        tags: operation.tags,
        ...(operation.params ? { params: operation.params } : {}),
        ...(operation.query ? { querystring: operation.query } : {}),
        ...(operation.body ? { body: operation.body } : {}),
        response: {
          ...(operation.errors ? errorResponses(operation.errors) : {}),
          ...(operation.statusOf?.responses ?? { [status]: operation.response }),
        },
      },
      handler: async (request, reply) => {
        const { tenant, params, query, body } = request
        const call = { tenant, params, query, body } as OperationCall<never, never, never>
        const json = operation.json ? await operation.json(services, call) : null
        if (json !== null) return reply.code(status).type('application/json; charset=utf-8').send(json)
        const answer = await operation.handle(services, call)
        const code = operation.statusOf ? operation.statusOf.of(answer) : status
        if (code === 204) return reply.code(204).send()
        const aliases = operation.germanAliases
        return reply.code(code).send(aliases ? aliased(answer as Record<string, unknown>, aliases) : answer)
      },
    })
  }
}

/** The answer with the German aliases of `fields`, a dotted one (`tags.origin`) on each item of its first part. */
function aliased(answer: Record<string, unknown>, fields: string[]): Record<string, unknown> {
  const out = withGermanAliases(
    answer,
    fields.filter((field) => !field.includes('.')),
  )
  for (const field of new Set(fields.filter((f) => f.includes('.')).map((f) => f.split('.')[0] as string))) {
    const inner = fields.filter((f) => f.startsWith(`${field}.`)).map((f) => f.slice(field.length + 1))
    const value = out[field]
    if (Array.isArray(value)) out[field] = value.map((item) => aliased(item, inner))
    else if (value !== null && typeof value === 'object') out[field] = aliased(value as Record<string, unknown>, inner)
  }
  return out
}
