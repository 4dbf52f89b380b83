import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { Type } from 'typebox'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/**
 * TypeBox writes JSON Schema 2020-12; OpenAPI 3.0.3 knows neither `type: "null"` nor `const`.
 * Rewrites both into their 3.0 forms (`nullable: true`, one-value `enum`).
 */
export function toOpenApi30(node: Json): Json {
  if (Array.isArray(node)) return node.map(toOpenApi30)
  if (node === null || typeof node !== 'object') return node
  const out: { [key: string]: Json } = {}
  for (const [key, value] of Object.entries(node)) {
    if (key.startsWith('~') || key === '$id') continue
    out[key] = value
  }
  if ('const' in out) {
    out.enum = [out.const]
    delete out.const
  }
  // JSON Schema's examples (the validator knows the keyword) as OpenAPI 3.0's single example
  if (Array.isArray(out.examples)) {
    if (out.examples.length > 0) out.example = out.examples[0]
    delete out.examples
  }
  if (out.type === 'null') {
    delete out.type
    out.nullable = true
  }
  for (const combiner of ['anyOf', 'oneOf'] as const) {
    const variants = out[combiner]
    if (!Array.isArray(variants) || !variants.some(isNullSchema)) continue
    const rest = variants.filter((v) => !isNullSchema(v))
    delete out[combiner]
    const only = rest.length === 1 ? rest[0] : null
    if (only && typeof only === 'object' && !Array.isArray(only)) {
      if ('$ref' in only) out.allOf = [only]
      else Object.assign(out, only)
    } else {
      out[combiner] = rest
    }
    out.nullable = true
  }
  for (const [key, value] of Object.entries(out)) out[key] = toOpenApi30(value)
  return out
}

/**
 * A property with a default is optional to the client (Ajv fills the default in): drops it from `required`, in nested
 * objects too, so the document and the clients generated from it do not demand `limit` on every list call. Copies
 * what it changes; the route's TypeBox schema is shared.
 */
export function defaultsOptional<S>(schema: S): S {
  if (Array.isArray(schema)) return schema.map(defaultsOptional) as S
  if (schema === null || typeof schema !== 'object') return schema
  const node = schema as Record<string, unknown>
  const out: Record<string, unknown> = { ...node }
  const properties = node.properties as Record<string, unknown> | undefined
  if (properties && typeof properties === 'object') {
    out.properties = Object.fromEntries(Object.entries(properties).map(([k, v]) => [k, defaultsOptional(v)]))
    if (Array.isArray(node.required)) {
      const required = node.required.filter((name: string) => !hasDefault(properties[name]))
      if (required.length) out.required = required
      else delete out.required
    }
  }
  for (const key of ['items', 'anyOf', 'oneOf', 'allOf']) if (key in node) out[key] = defaultsOptional(node[key])
  return out as S
}

const hasDefault = (schema: unknown) => typeof schema === 'object' && schema !== null && 'default' in schema

/** The request schemas of a route as the client sees them: parameters and fields with a default are optional. */
export function requestDefaultsOptional(route: RouteOptions): void {
  const schema = route.schema as Record<string, unknown> | undefined
  if (!schema) return
  for (const part of ['querystring', 'body', 'headers'])
    if (schema[part] && typeof schema[part] === 'object') schema[part] = defaultsOptional(schema[part])
}

function isNullSchema(value: Json): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && value.type === 'null'
}

export const openapi = fp(
  async (app: FastifyInstance, options: { publicUrl: string }) => {
    app.addHook('onRoute', requestDefaultsOptional)
    await app.register(swagger, {
      openapi: {
        openapi: '3.0.3',
        info: {
          title: 'Herold API',
          version: '1.0.0',
          description:
            'Multi-tenant customer-messaging and marketing backend. Authenticate with `Authorization: Bearer <API_KEY>`. ' +
            'Errors are `{error: {code, key, message}}`; branch on `code` and `key`. 120 requests per minute per key.',
        },
        servers: [{ url: options.publicUrl }],
        components: {
          securitySchemes: {
            bearerAuth: {
              type: 'http',
              scheme: 'bearer',
              description: 'An API key (hk_...). OAuth tokens are refused.',
            },
          },
        },
      },
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
      transformObject: (documentObject) => {
        const doc = 'openapiObject' in documentObject ? documentObject.openapiObject : documentObject.swaggerObject
        return toOpenApi30(doc as Json) as typeof doc
      },
    })
    await app.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { docExpansion: 'list', deepLinking: true },
      staticCSP: true,
    })
  },
  { name: 'herold-openapi' },
)

/** The OpenAPI routes themselves; registered under /v1. */
export async function openapiRoutes(app: FastifyInstance): Promise<void> {
  app.get(
    '/openapi.json',
    {
      config: { public: true },
      schema: {
        summary: 'This OpenAPI 3.0.3 document',
        tags: ['meta'],
        response: { 200: Type.Object({}, { additionalProperties: true, description: 'the OpenAPI 3.0.3 document' }) },
      },
    },
    async (_request, reply) => reply.type('application/json').send(JSON.stringify(app.swagger())),
  )
  app.get(
    '/openapi.yaml',
    {
      config: { public: true },
      schema: {
        summary: 'This OpenAPI 3.0.3 document as YAML',
        tags: ['meta'],
        response: {
          200: {
            description: 'the OpenAPI 3.0.3 document in YAML',
            content: { 'application/yaml': { schema: Type.String() } },
          },
        },
      },
    },
    async (_request, reply) => reply.type('application/yaml').send(app.swagger({ yaml: true })),
  )
}
