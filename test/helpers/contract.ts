import { readFileSync } from 'node:fs'
import type { LightMyRequestResponse } from 'fastify'

export interface DocResponse {
  description?: string
  content?: Record<string, unknown>
}
export interface DocParameter {
  name: string
  in: string
  required?: boolean
  schema?: JsonSchema
}
export interface DocOperation {
  parameters?: DocParameter[]
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> }
  responses: Record<string, DocResponse>
  security?: unknown[]
}
export interface Doc {
  paths: Record<string, Record<string, DocOperation>>
  components?: { schemas?: Record<string, JsonSchema> }
}
export interface JsonSchema {
  type?: string
  format?: string
  enum?: unknown[]
  minimum?: number
  minLength?: number
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  oneOf?: JsonSchema[]
  anyOf?: JsonSchema[]
  allOf?: JsonSchema[]
  $ref?: string
  default?: unknown
}

/** The committed public document, openapi/v1.json. */
export function committedDocument(name: 'v1' | 'app' = 'v1'): Doc {
  return JSON.parse(readFileSync(new URL(`../../openapi/${name}.json`, import.meta.url), 'utf8')) as Doc
}

/** The document's path a request URL falls under: literal segments win over parameters (/contacts/tags). */
export function documentedPath(doc: Doc, method: string, url: string): string | null {
  const path = url.split('?')[0]
  const candidates = Object.keys(doc.paths).filter((template) => {
    if (!doc.paths[template][method.toLowerCase()]) return false
    const pattern = template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')
    return new RegExp(`^${pattern}$`).test(path)
  })
  candidates.sort((a, b) => (a.match(/\{/g)?.length ?? 0) - (b.match(/\{/g)?.length ?? 0))
  return candidates[0] ?? null
}

const mentions = (text: string, word: string) => new RegExp(`(^|[^a-z0-9_])${word}([^a-z0-9_]|$)`).test(text)

/**
 * Why an answer breaks the document, or null when it keeps it: its status must be documented for the operation, and
 * an error's `code` and `key` must be named in that status's description.
 */
export function contractBreach(doc: Doc, method: string, url: string, response: LightMyRequestResponse): string | null {
  const path = documentedPath(doc, method, url)
  const where = `${method.toUpperCase()} ${path ?? url}`
  if (!path) return `${where}: no such operation in the document`
  const documented = doc.paths[path][method.toLowerCase()].responses[String(response.statusCode)]
  if (!documented) return `${where}: status ${response.statusCode} is not documented (${response.body.slice(0, 200)})`
  if (response.statusCode < 400) return null
  const error = errorOf(response)
  if (!error) return `${where}: ${response.statusCode} without the error envelope`
  const text = documented.description ?? ''
  for (const word of new Set([error.code, error.key]))
    if (!mentions(text, word)) return `${where}: ${response.statusCode} ${error.code}/${error.key} is not documented`
  return null
}

function errorOf(response: LightMyRequestResponse): { code: string; key: string } | null {
  try {
    const body = response.json() as { error?: { code?: unknown; key?: unknown } }
    const { code, key } = body.error ?? {}
    return typeof code === 'string' && typeof key === 'string' ? { code, key } : null
  } catch {
    return null
  }
}
