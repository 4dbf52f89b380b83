import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { timeOrderedId, timeOrderedIds } from './ids.ts'

/** What the API promises for an id (`format: uuid`), and a version 7 with the RFC 9562 variant. */
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** The time in milliseconds an id carries in its first 48 bits. */
const timeOf = (id: string) => Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16)

describe('time-ordered ids (UUID version 7)', () => {
  test('an id is a lower-case UUID of version 7 carrying the time it was made', () => {
    const before = Date.now()
    const id = timeOrderedId()
    assert.match(id, UUID_V7)
    assert.ok(timeOf(id) >= before && timeOf(id) <= Date.now())
  })

  test('ids sort in the order they were made, within a millisecond and when the clock steps back', () => {
    fc.assert(
      fc.property(
        // a clock of few distinct values: many ids in one millisecond, and steps back
        fc.array(fc.integer({ min: 1_800_000_000_000, max: 1_800_000_000_003 }), {
          minLength: 2,
          maxLength: 300,
        }),
        (clock) => {
          let tick = 0
          const next = timeOrderedIds(() => clock[tick++])
          const ids = clock.map(() => next())
          for (let i = 1; i < ids.length; i++) {
            assert.match(ids[i], UUID_V7)
            assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} before ${ids[i]}`)
          }
        },
      ),
    )
  })

  test('ids made in one millisecond differ in their random bits, not only in their counter', () => {
    const now = Date.now()
    const next = timeOrderedIds(() => now)
    const ids = Array.from({ length: 1000 }, () => next())
    assert.equal(new Set(ids).size, ids.length)
    // the last 10 hex digits (40 of the 42 random bits) are not a sequence
    const tails = new Set(ids.map((id) => id.slice(-10)))
    assert.ok(tails.size > 990)
    assert.ok(ids.every((id) => timeOf(id) === now))
    assert.deepEqual([...ids].sort(), ids)
  })
})
