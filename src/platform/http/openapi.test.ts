import assert from 'node:assert/strict'
import { test } from 'node:test'
import { defaultsOptional, toOpenApi30 } from './openapi.ts'

test('a nullable union becomes the type with nullable: true', () => {
  assert.deepEqual(toOpenApi30({ anyOf: [{ type: 'string', maxLength: 3 }, { type: 'null' }] }), {
    type: 'string',
    maxLength: 3,
    nullable: true,
  })
})

test('a nullable reference keeps the reference under allOf', () => {
  assert.deepEqual(toOpenApi30({ anyOf: [{ $ref: '#/components/schemas/X' }, { type: 'null' }] }), {
    allOf: [{ $ref: '#/components/schemas/X' }],
    nullable: true,
  })
})

test("JSON Schema's examples become OpenAPI 3.0's example; a property named examples stays", () => {
  assert.deepEqual(
    toOpenApi30({
      type: 'object',
      examples: [{ a: 1 }],
      properties: { examples: { type: 'array', examples: [[1]] } },
    }),
    { type: 'object', example: { a: 1 }, properties: { examples: { type: 'array', example: [1] } } },
  )
})

test('const becomes a one-value enum, recursively', () => {
  assert.deepEqual(toOpenApi30({ properties: { a: { type: 'string', const: 'x' } } }), {
    properties: { a: { type: 'string', enum: ['x'] } },
  })
})

test('a union of several types with null keeps the rest and is nullable', () => {
  assert.deepEqual(toOpenApi30({ anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] }), {
    anyOf: [{ type: 'string' }, { type: 'integer' }],
    nullable: true,
  })
})

test('a property with a default is not required, in nested objects too, and the input is left as it was', () => {
  const query = {
    type: 'object',
    required: ['limit', 'q'],
    properties: {
      limit: { type: 'integer', default: 50 },
      q: { type: 'string' },
      segment: { type: 'object', required: ['mode'], properties: { mode: { type: 'string', default: 'all' } } },
    },
  }
  const before = structuredClone(query)
  assert.deepEqual(defaultsOptional(query), {
    type: 'object',
    required: ['q'],
    properties: {
      limit: { type: 'integer', default: 50 },
      q: { type: 'string' },
      segment: { type: 'object', properties: { mode: { type: 'string', default: 'all' } } },
    },
  })
  assert.deepEqual(query, before)
})
