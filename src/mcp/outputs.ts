import type { TSchema } from 'typebox'
import { GERMAN_TO_ENGLISH } from '../platform/http/serializer.ts'
import { catalogue } from './catalogue.ts'

/**
 * The output schemas of the tools (MCP outputSchema) are the REST operations' own response schemas, declared with
 * each tool in its module (`<domain>.tools.ts`); here they become plain JSON for a client.
 */

/** The REST schemas other schemas name with Type.Ref (registered with app.addSchema by their modules). */
const REGISTERED: Record<string, TSchema> = Object.fromEntries(
  catalogue
    .flatMap((tool) => tool.references ?? [])
    .map((schema) => [(schema as unknown as { $id: string }).$id, schema]),
)

const GERMAN = new Set(Object.keys(GERMAN_TO_ENGLISH))

/**
 * A schema as plain JSON for a client: the REST schemas' references resolved and their $id names dropped (one output
 * schema embeds an entity more than once, and a client compiles all of them with one validator, where a repeated $id
 * is an error); the deprecated German aliases, which REST adds and a tool's answer may lack, are not required.
 */
export function plainSchema(schema: unknown): Record<string, unknown> {
  const resolve = (value: unknown, depth: number): unknown => {
    if (Array.isArray(value)) return value.map((v) => resolve(v, depth))
    if (value === null || typeof value !== 'object') return value
    const node = value as Record<string, unknown>
    if (typeof node.$ref === 'string' && REGISTERED[node.$ref] && depth < 10) {
      return resolve(REGISTERED[node.$ref], depth + 1)
    }
    const out: Record<string, unknown> = {}
    for (const [key, inner] of Object.entries(node)) {
      if (key === '$id') continue
      if (key === 'required' && Array.isArray(inner)) {
        out.required = inner.filter((name) => !GERMAN.has(name as string))
        continue
      }
      out[key] = key === 'properties' ? resolveProperties(inner, depth) : resolve(inner, depth)
    }
    return out
  }
  const resolveProperties = (properties: unknown, depth: number) =>
    Object.fromEntries(Object.entries(properties as Record<string, unknown>).map(([k, v]) => [k, resolve(v, depth)]))
  return JSON.parse(JSON.stringify(resolve(schema, 0)))
}
