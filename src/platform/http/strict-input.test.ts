import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Type } from 'typebox'
import { discriminated } from './schemas.ts'
import { closeObjects, unknownFields } from './strict-input.ts'

const Step = discriminated([
  Type.Object({ type: Type.Literal('add_tag'), tag: Type.String() }),
  Type.Object({ type: Type.Literal('wait'), duration: Type.Object({ hours: Type.Integer() }) }),
])
const Body = Type.Object({
  name: Type.String(),
  segment: Type.Optional(Type.Union([Type.Object({ tags_any: Type.Array(Type.String()) }), Type.Null()])),
  variables: Type.Optional(Type.Record(Type.String(), Type.String())),
  extra: Type.Optional(Type.Object({}, { additionalProperties: true })),
  steps: Type.Optional(Type.Array(Step)),
})
// biome-ignore lint/suspicious/noExplicitAny: the closed copy is read as plain JSON Schema
type Json = Record<string, any>
const closed = closeObjects(Body) as unknown as Json

test('objects that name their fields are closed, nested ones too; the original schema is left as it was', () => {
  assert.equal(closed.additionalProperties, false)
  assert.equal(closed.properties.segment.anyOf[0].additionalProperties, false)
  assert.equal(
    (closed.properties.steps.items.oneOf[1].properties.duration as { additionalProperties?: boolean })
      .additionalProperties,
    false,
  )
  assert.equal('additionalProperties' in Body, false)
})

test('maps the schema opens stay open: a record and an explicit additionalProperties true', () => {
  assert.equal('additionalProperties' in closed.properties.variables, false)
  assert.equal(closed.properties.extra.additionalProperties, true)
  assert.deepEqual(unknownFields(closed, { name: 'a', variables: { anything: 'x' }, extra: { free: 1 } }), [])
})

test('the parts of an allOf are not closed (each would refuse the fields of the others)', () => {
  const both: Json = closeObjects(
    Type.Object({ x: Type.Unsafe({ allOf: [Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })] }) }),
  )
  assert.equal('additionalProperties' in both.properties.x.allOf[0], false)
})

test('unknown fields are named by path, in order, through nullable objects and arrays', () => {
  assert.deepEqual(unknownFields(closed, { name: 'a', emial: 'x', segment: { tags: ['x'] } }), [
    'emial',
    'segment.tags',
  ])
  assert.deepEqual(unknownFields(closed, { name: 'a', segment: null }), [])
})

test('a union member is chosen by its type: a field of another variant is unknown', () => {
  const value = {
    name: 'a',
    steps: [
      { type: 'add_tag', tag: 'x', duration: {} },
      { type: 'wait', duration: { hours: 1, minutes: 2 } },
    ],
  }
  assert.deepEqual(unknownFields(closed, value), ['steps[0].duration', 'steps[1].duration.minutes'])
})
