import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { Type } from 'typebox'

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

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
  // JSON Schema's examples (the validator knows the keyword) as OpenAPI 3.0's single example; after the merge above,
  // which can bring a variant's examples up
  if (Array.isArray(out.examples)) {
    if (out.examples.length > 0) out.example = out.examples[0]
    delete out.examples
  }
  // a map's patternProperties (TypeBox's Record), which 3.0 does not know, as additionalProperties
  const patterns = out.patternProperties
  if (patterns && typeof patterns === 'object' && !Array.isArray(patterns)) {
    const values = Object.values(patterns)
    if (values.length === 1 && !('additionalProperties' in out)) out.additionalProperties = values[0]
    delete out.patternProperties
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

/** Who answers for the API: the operator of the Herold server that serves the document (at its public address). */
export const documentContact = (publicUrl?: string) => ({ name: 'Herold', ...(publicUrl ? { url: publicUrl } : {}) })
/** The project is private (package.json `private: true`, no licence file): all rights reserved. */
export const documentLicense = { name: 'Proprietary' }

/** Every tag an operation of /v1 carries, declared with what it groups (spectral's operation-tag-defined). */
export const v1Tags = [
  { name: 'meta', description: 'This document, as JSON and as YAML.' },
  { name: 'account', description: 'The calling credential and its account.' },
  { name: 'contacts', description: 'Contacts: create (upsert), find, change, delete, tag.' },
  { name: 'contact fields', description: 'The custom fields every contact of the account can carry.' },
  { name: 'templates', description: 'Message templates: drafts, the provider’s approval, sends, statistics.' },
  { name: 'webhooks', description: 'Webhook subscriptions, the events they receive and their deliveries.' },
  { name: 'inbox', description: 'Conversations and their messages.' },
  { name: 'messages', description: 'Sending a message to a contact and following a template send.' },
  { name: 'settings', description: 'The account’s channel, coexistence, consent, follow-up timing and AI settings.' },
  { name: 'sandbox', description: 'Simulated inbound messages (sandbox accounts only).' },
  { name: 'automations', description: 'Automations, their runs and statistics.' },
  { name: 'newsletters', description: 'Newsletters: drafts, scheduling, recipients, clicks and statistics.' },
  { name: 'followups', description: 'Follow-up sequences, their steps and enrollments.' },
  { name: 'stats', description: 'The account’s statistics over the last 7, 30 or 90 days.' },
  { name: 'media', description: 'The media library.' },
  { name: 'knowledge', description: 'Knowledge documents and what the built-in AI answered from them.' },
  { name: 'team', description: 'The account’s team members.' },
  { name: 'tools', description: 'The tool server’s tools, called over plain HTTP.' },
]

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
          contact: documentContact(options.publicUrl),
          license: documentLicense,
        },
        servers: [{ url: options.publicUrl }],
        tags: v1Tags,
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
        operationId: 'getOpenApiDocument',
        summary: 'This OpenAPI 3.0.3 document',
        description:
          'The OpenAPI 3.0.3 document of /v1 as JSON, what clients are generated from; no credential needed.',
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
        operationId: 'getOpenApiDocumentYaml',
        summary: 'This OpenAPI 3.0.3 document as YAML',
        description: 'The same document as GET /v1/openapi.json, written as YAML; no credential needed.',
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
