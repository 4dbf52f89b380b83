import type { RouteOptions } from 'fastify'
import { documentContact, documentLicense, type Json, toOpenApi30 } from './openapi.ts'

type Schema = Record<string, unknown>

interface Operation {
  method: string
  url: string
  public: boolean
  schema: Schema
}

/**
 * /app routes registered outside the /app plugin (the tool server's consent step and POST
 * /app/{tool_name}, which bring their own session check): kept by method and path, so a process that builds several
 * servers (the tests) lists each once.
 */
const outside = new Map<string, Operation>()

/** Adds a route of another plugin under /app to the app document (call it from that plugin's onRoute hook). */
export function collectOutsideAppRoute(route: RouteOptions): void {
  const methods = Array.isArray(route.method) ? route.method : [route.method]
  const schema = { ...((route.schema ?? {}) as Schema) }
  delete schema.hide
  for (const method of methods) {
    if (method === 'HEAD') continue
    const operation = {
      method: method.toLowerCase(),
      url: route.url,
      public: (route.config as { public?: boolean } | undefined)?.public === true,
      schema,
    }
    outside.set(`${operation.method} ${operation.url}`, operation)
  }
  route.schema = { ...((route.schema ?? {}) as Schema), hide: true }
}

/**
 * The second OpenAPI document: the routes only the web app needs (under /app), which the public /v1 document leaves
 * out. Routes are collected as they are registered and written from their TypeBox schemas (plain JSON Schema).
 */
export class AppDocument {
  #operations: Operation[] = []

  collect(route: RouteOptions): void {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    const schema = (route.schema ?? {}) as Schema
    for (const method of methods) {
      if (method === 'HEAD') continue
      this.#operations.push({
        method: method.toLowerCase(),
        url: route.url,
        public: (route.config as { public?: boolean } | undefined)?.public === true,
        schema,
      })
    }
    // the /v1 document leaves these out
    schema.hide = true
    route.schema = schema
  }

  document(): Schema {
    const paths: Record<string, Record<string, unknown>> = {}
    const own = new Set(this.#operations.map((op) => `${op.method} ${op.url}`))
    const operations = [
      ...this.#operations,
      ...[...outside.values()].filter((op) => !own.has(`${op.method} ${op.url}`)),
    ]
    for (const op of operations) {
      if (op.url.endsWith('/openapi.json')) continue
      const path = op.url.replace(/:([A-Za-z_]+)/g, '{$1}')
      const parameters: unknown[] = []
      for (const [where, key] of [
        ['path', 'params'],
        ['query', 'querystring'],
      ] as const) {
        const properties = (op.schema[key] as { properties?: Record<string, unknown>; required?: string[] })?.properties
        const required = (op.schema[key] as { required?: string[] })?.required ?? []
        for (const [name, schema] of Object.entries(properties ?? {}))
          parameters.push({ name, in: where, required: where === 'path' || required.includes(name), schema })
      }
      const responses: Record<string, unknown> = {}
      // a route with another body or answer than JSON names it in consumes and produces
      const consumes = (op.schema.consumes as string[] | undefined)?.[0]
      const produces = (op.schema.produces as string[] | undefined)?.[0] ?? 'application/json'
      for (const [status, schema] of Object.entries((op.schema.response as Schema | undefined) ?? {}))
        responses[status] = { description: 'success', content: { [produces]: { schema } } }
      if (Object.keys(responses).length === 0) responses['2XX'] = { description: 'success' }
      responses.default = {
        description: 'an error: {"error": {"code", "key", "message"}}',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      }
      paths[path] ??= {}
      paths[path][op.method] = {
        ...(op.schema.operationId ? { operationId: op.schema.operationId } : {}),
        summary: op.schema.summary,
        ...(op.schema.description ? { description: op.schema.description } : {}),
        tags: ['app'],
        security: op.public ? [] : [{ session: [] }],
        ...(parameters.length ? { parameters } : {}),
        ...(op.schema.body
          ? { requestBody: { required: true, content: { 'application/json': { schema: op.schema.body } } } }
          : {}),
        ...(consumes
          ? {
              requestBody: {
                required: true,
                content: { [consumes]: { schema: { type: 'string', format: 'binary' } } },
              },
            }
          : {}),
        responses,
      }
    }
    // plain JSON Schema (TypeBox) written in OpenAPI 3.0's forms, as the /v1 document is
    return toOpenApi30({
      openapi: '3.0.3',
      info: {
        title: 'Herold web app routes',
        version: '1.0.0',
        description:
          'Routes only the web app uses (sign-in, setup, invitations, password resets, API keys, team management, the live template check, the CSV contact import). They take the session cookie; every POST, PUT, PATCH and DELETE with a session must carry X-CSRF-Token (from GET /app/session). Not a public API: integrations use /v1 with an API key.',
        contact: documentContact(),
        license: documentLicense,
      },
      // relative: the server that serves this document (GET /app/openapi.json)
      servers: [{ url: '/', description: 'the Herold server serving this document' }],
      tags: [{ name: 'app', description: 'The web app’s own routes; they take the session cookie.' }],
      paths,
      components: {
        securitySchemes: { session: { type: 'apiKey', in: 'cookie', name: 'herold_session' } },
        schemas: {
          Error: {
            type: 'object',
            required: ['error'],
            properties: {
              error: {
                type: 'object',
                required: ['code', 'key', 'message'],
                properties: { code: { type: 'string' }, key: { type: 'string' }, message: { type: 'string' } },
              },
            },
          },
        },
      },
    } as Json) as Schema
  }
}
