import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { GERMAN_TO_ENGLISH, toWire, withGermanAliases } from './serializer.ts'

test('a German key gets its English equivalent beside it, recursively in objects and arrays', () => {
  const wire = toWire({
    hinweis: 'x',
    items: [{ herkunft: 'manuell', nested: { anzahl: 3, list: [{ geprueft: 1000, gedeckelt: true }] } }],
  })
  assert.deepEqual(wire, {
    hinweis: 'x',
    notice: 'x',
    items: [
      {
        herkunft: 'manuell',
        origin: 'manuell',
        nested: { anzahl: 3, count: 3, list: [{ geprueft: 1000, checked: 1000, gedeckelt: true, capped: true }] },
      },
    ],
  })
})

test('state and kind values are mapped to English; phase values are unchanged', () => {
  assert.deepEqual(toWire({ zustand: 'laeuft', art: 'kalender', lage: 'warm' }), {
    zustand: 'laeuft',
    state: 'running',
    art: 'kalender',
    kind: 'calendar',
    lage: 'warm',
    phase: 'warm',
  })
  assert.deepEqual(toWire({ zustand: 'wartet_auf_verbindung' }), {
    zustand: 'wartet_auf_verbindung',
    state: 'waiting_for_first_event',
  })
  assert.deepEqual(toWire({ zustand: 'nicht_verbunden', art: 'intern' }), {
    zustand: 'nicht_verbunden',
    state: 'not_connected',
    art: 'intern',
    kind: 'internal',
  })
})

test('an English key already present is kept as it is', () => {
  assert.deepEqual(toWire({ zustand: 'laeuft', state: 'running' }), { zustand: 'laeuft', state: 'running' })
})

test('Dates become ISO 8601 UTC strings anywhere', () => {
  const at = new Date('2026-03-01T12:00:00+02:00')
  assert.deepEqual(toWire({ created_at: at, list: [{ at }] }), {
    created_at: '2026-03-01T10:00:00.000Z',
    list: [{ at: '2026-03-01T10:00:00.000Z' }],
  })
})

test('withGermanAliases adds the German names of the given English fields, mapping state values back', () => {
  assert.deepEqual(
    withGermanAliases({ added: ['a'], rejected: [], state: 'running', other: 1 }, ['added', 'rejected', 'state']),
    {
      added: ['a'],
      hinzugefuegt: ['a'],
      rejected: [],
      verworfen: [],
      state: 'running',
      zustand: 'laeuft',
      other: 1,
    },
  )
})

const germanKey = fc.constantFrom(...Object.keys(GERMAN_TO_ENGLISH))
const jsonTree = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.oneof(germanKey, fc.string({ maxLength: 8 })), tie('value'), { maxKeys: 4 }),
  ),
})).value

function everyObject(value: unknown, visit: (o: Record<string, unknown>) => void): void {
  if (Array.isArray(value)) for (const v of value) everyObject(v, visit)
  else if (value && typeof value === 'object') {
    visit(value as Record<string, unknown>)
    for (const v of Object.values(value)) everyObject(v, visit)
  }
}

test('property: wherever a German key is present, its English key is present too, and nothing is lost', () => {
  fc.assert(
    fc.property(jsonTree, (input) => {
      const wire = toWire(input)
      everyObject(wire, (o) => {
        for (const [german, english] of Object.entries(GERMAN_TO_ENGLISH)) {
          if (german in o) assert.ok(english in o, `${german} without ${english}`)
        }
      })
      assertContains(wire, input)
    }),
  )
})

/** Every key and value of `original` is in `wire` unchanged (wire may have more keys). */
function assertContains(wire: unknown, original: unknown): void {
  if (Array.isArray(original)) {
    assert.ok(Array.isArray(wire))
    assert.equal(wire.length, original.length)
    for (const [i, v] of original.entries()) assertContains(wire[i], v)
  } else if (original && typeof original === 'object') {
    assert.ok(wire && typeof wire === 'object')
    for (const [key, value] of Object.entries(original)) {
      assert.ok(Object.hasOwn(wire, key), `lost ${key}`)
      assertContains((wire as Record<string, unknown>)[key], value)
    }
  } else {
    assert.equal(wire, original)
  }
}
