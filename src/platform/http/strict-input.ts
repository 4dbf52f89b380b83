import { badRequest } from './errors.ts'

// Strict input: an object a caller sends may hold only the fields its schema names. A schema opens an object
// explicitly (additionalProperties true or a schema, patternProperties as Type.Record writes it); every other
// object is closed, so a misspelt field is refused by name instead of dropped.

type Schema = Record<string, unknown>

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** An object schema that names its fields and says nothing about others: closed by closeObjects. */
function isImplicitlyOpen(schema: Schema): boolean {
  return (
    isSchema(schema.properties) &&
    !('additionalProperties' in schema) &&
    !('patternProperties' in schema) &&
    !('unevaluatedProperties' in schema)
  )
}

const SUBSCHEMA_MAPS = ['properties', 'patternProperties', '$defs', 'definitions'] as const
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'prefixItems'] as const
const SUBSCHEMAS = ['items', 'additionalProperties', 'not', 'if', 'then', 'else'] as const

/**
 * A copy of a request schema with every object that names its fields closed (additionalProperties: false), nested
 * ones included. The parts of an allOf stay as they are: each would refuse the fields of the others.
 */
export function closeObjects<T>(schema: T, inAllOf = false): T {
  if (!isSchema(schema)) return schema
  const copy: Schema = { ...schema }
  if (!inAllOf && isImplicitlyOpen(copy)) copy.additionalProperties = false
  for (const key of SUBSCHEMA_MAPS) {
    const map = copy[key]
    if (isSchema(map))
      copy[key] = Object.fromEntries(Object.entries(map).map(([name, sub]) => [name, closeObjects(sub)]))
  }
  for (const key of SUBSCHEMA_LISTS) {
    const list = copy[key]
    if (Array.isArray(list)) copy[key] = list.map((sub) => closeObjects(sub))
  }
  if (Array.isArray(copy.allOf)) copy.allOf = copy.allOf.map((sub) => closeObjects(sub, true))
  for (const key of SUBSCHEMAS) if (isSchema(copy[key])) copy[key] = closeObjects(copy[key])
  return copy as T
}

/** The schemas a value may match: the variants of unions, with those whose constant fields disagree left out. */
function candidatesFor(schema: unknown, value: unknown): Schema[] {
  if (!isSchema(schema)) return []
  const variants = [schema.anyOf, schema.oneOf].flatMap((list) => (Array.isArray(list) ? list : []))
  const parts = (Array.isArray(schema.allOf) ? schema.allOf : []).flatMap((part) => candidatesFor(part, value))
  // a union's wrapper ({type: object, oneOf: [...]}) names no field of its own
  const own = variants.length === 0 || isSchema(schema.properties) ? [schema] : []
  if (variants.length === 0) return [...own, ...parts]
  const expanded = variants.flatMap((variant) => candidatesFor(variant, value))
  const agreeing = expanded.filter((variant) => constantsAgree(variant, value))
  return [...own, ...parts, ...(agreeing.length > 0 ? agreeing : expanded)]
}

/** A variant whose `const` (or one-value enum) fields differ from the value's is not the one meant (`type`). */
function constantsAgree(variant: Schema, value: unknown): boolean {
  if (!isSchema(value) || !isSchema(variant.properties)) return true
  for (const [name, field] of Object.entries(variant.properties)) {
    if (!isSchema(field) || !(name in value)) continue
    const constant =
      'const' in field ? field.const : Array.isArray(field.enum) && field.enum.length === 1 ? field.enum[0] : undefined
    if (constant !== undefined && value[name] !== constant) return false
  }
  return true
}

const isObjectSchema = (schema: Schema) => schema.type === 'object' || isSchema(schema.properties)

/** Whether one of the object schemas lets a field in, and the schemas its value must then meet. */
function fieldSchemas(objects: Schema[], name: string): { known: boolean; schemas: Schema[] } {
  let known = false
  const schemas: Schema[] = []
  for (const object of objects) {
    const named = isSchema(object.properties) ? object.properties[name] : undefined
    const pattern = Object.entries(isSchema(object.patternProperties) ? object.patternProperties : {}).find(
      ([expression]) => new RegExp(expression, 'u').test(name),
    )
    const open = named === undefined && !pattern && object.additionalProperties !== false
    if (named === undefined && !pattern && !open) continue
    known = true
    const next = named ?? pattern?.[1] ?? object.additionalProperties
    if (isSchema(next)) schemas.push(next)
  }
  return { known, schemas }
}

/**
 * The fields of a value its (closed) schema does not know, each with its path (`segment.tags`, `steps[0].wait`), in
 * the order they appear. A field is unknown when no variant a union could mean names it.
 */
export function unknownFields(schema: unknown, value: unknown, path = ''): string[] {
  const candidates = candidatesFor(schema, value)
  if (Array.isArray(value)) {
    const items = candidates.map((candidate) => candidate.items).filter(isSchema)
    if (items.length === 0) return []
    return value.flatMap((item, index) => unknownFields({ anyOf: items }, item, `${path}[${index}]`))
  }
  if (!isSchema(value)) return []
  const objects = candidates.filter(isObjectSchema)
  if (objects.length === 0) return []
  const found: string[] = []
  for (const [name, field] of Object.entries(value)) {
    const fieldPath = path ? `${path}.${name}` : name
    const { known, schemas } = fieldSchemas(objects, name)
    if (!known) found.push(fieldPath)
    else if (schemas.length > 0) found.push(...unknownFields({ anyOf: schemas }, field, fieldPath))
  }
  return found
}

const LISTED = 20

/** The sentence naming the unknown fields of a request part (`body.segment.tags is not a known field ...`). */
export function unknownFieldsMessage(where: string, fields: string[], noun = 'field'): string {
  const named = fields.slice(0, LISTED).map((field) => (where ? `${where}.${field}` : field))
  const more = fields.length > LISTED ? ` and ${fields.length - LISTED} more` : ''
  return fields.length === 1
    ? `${named[0]} is not a known ${noun}; nothing was changed (check its spelling)`
    : `${named.join(', ')}${more} are not known ${noun}s; nothing was changed (check their spelling)`
}

/**
 * For input that does not arrive over HTTP (the CLI's sequence file): 400 bad_request naming the fields the request
 * schema does not know; the service behind it checks the rest with its own words.
 */
export function refuseUnknownFields(schema: object, value: unknown, where: string): void {
  const unknown = unknownFields(closeObjects(schema), value)
  if (unknown.length > 0) {
    throw badRequest(unknownFieldsMessage(where, unknown), 'bad_request', { unknown_fields: unknown })
  }
}
