import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { cappedIndexes, contactZone, countryZone, isProtected, quietUntil } from './messaging.protection.ts'

const NIGHT = { from: '20:00', to: '08:00' }

describe('quiet hours: the window and its end', () => {
  test('in the evening part the window ends at 08:00 the next morning, in the early part the same morning', () => {
    // 21:30 in Berlin (CET, +01:00) on 2027-01-15
    assert.equal(
      quietUntil(new Date('2027-01-15T20:30:00Z'), NIGHT, 'Europe/Berlin')?.toISOString(),
      '2027-01-16T07:00:00.000Z',
    )
    assert.equal(
      quietUntil(new Date('2027-01-16T05:00:00Z'), NIGHT, 'Europe/Berlin')?.toISOString(),
      '2027-01-16T07:00:00.000Z',
    )
  })

  test('outside the window, and at its end exactly, nothing waits', () => {
    assert.equal(quietUntil(new Date('2027-01-15T12:00:00Z'), NIGHT, 'Europe/Berlin'), null)
    assert.equal(quietUntil(new Date('2027-01-16T07:00:00Z'), NIGHT, 'Europe/Berlin'), null)
    assert.equal(quietUntil(new Date('2027-01-15T18:59:59Z'), NIGHT, 'Europe/Berlin'), null)
  })

  test('across the spring change the end is 08:00 summer time (06:00 UTC), not 07:00 UTC', () => {
    // 2027-03-28 02:00 CET → 03:00 CEST in Berlin
    assert.equal(
      quietUntil(new Date('2027-03-27T21:00:00Z'), NIGHT, 'Europe/Berlin')?.toISOString(),
      '2027-03-28T06:00:00.000Z',
    )
  })

  test('across the autumn change the end is 08:00 winter time (07:00 UTC)', () => {
    // 2027-10-31 03:00 CEST → 02:00 CET
    assert.equal(
      quietUntil(new Date('2027-10-30T19:00:00Z'), NIGHT, 'Europe/Berlin')?.toISOString(),
      '2027-10-31T07:00:00.000Z',
    )
  })

  test('a window within one day (01:00–06:00) and an end in the spring gap (the instant after it)', () => {
    assert.equal(
      quietUntil(new Date('2027-01-15T02:00:00Z'), { from: '01:00', to: '06:00' }, 'UTC')?.toISOString(),
      '2027-01-15T06:00:00.000Z',
    )
    assert.equal(quietUntil(new Date('2027-01-15T07:00:00Z'), { from: '01:00', to: '06:00' }, 'UTC'), null)
    const gap = quietUntil(new Date('2027-03-28T00:30:00Z'), { from: '01:00', to: '02:30' }, 'Europe/Berlin')
    assert.equal(gap?.toISOString(), '2027-03-28T01:30:00.000Z')
  })

  test('property: any instant in the window waits until a later instant outside it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.parse('2027-01-01T00:00:00Z'), max: Date.parse('2028-12-31T00:00:00Z') }),
        fc.constantFrom('Europe/Berlin', 'America/New_York', 'Australia/Sydney', 'Asia/Kolkata', 'UTC'),
        (ms, zone) => {
          const at = new Date(ms)
          const until = quietUntil(at, NIGHT, zone)
          if (!until) return
          assert.ok(until.getTime() > at.getTime())
          assert.ok(until.getTime() - at.getTime() <= 13 * 3600_000)
          assert.equal(quietUntil(until, NIGHT, zone), null)
        },
      ),
    )
  })
})

describe('quiet hours: the contact’s time zone', () => {
  test('the custom field timezone first, then the phone number’s country, else the account’s', () => {
    assert.equal(contactZone({ phone: '+4915112345678', fields: { timezone: 'Asia/Tokyo' } }, 'UTC'), 'Asia/Tokyo')
    assert.equal(contactZone({ phone: '+4915112345678', fields: { timezone: 'nowhere' } }, 'UTC'), 'Europe/Berlin')
    assert.equal(contactZone({ phone: '+12125550123', fields: {} }, 'UTC'), 'America/New_York')
    assert.equal(contactZone({ phone: '+33612345678', fields: null }, 'UTC'), 'Europe/Paris')
    assert.equal(contactZone({ phone: '', fields: null }, 'Europe/Vienna'), 'Europe/Vienna')
  })

  test('a country with several zones gets its main one', () => {
    assert.equal(countryZone('US'), 'America/New_York')
    assert.equal(countryZone('PT'), 'Europe/Lisbon')
    assert.equal(countryZone('AT'), 'Europe/Vienna')
  })
})

describe('frequency cap: which sends it applies to and which it refuses', () => {
  test('only marketing templates of campaigns; utility and POST /messages sends never', () => {
    assert.equal(isProtected('newsletter', { provider_category: 'MARKETING' }), true)
    assert.equal(isProtected('followup', { provider_category: 'MARKETING' }), true)
    assert.equal(isProtected('automation', { provider_category: 'MARKETING' }), true)
    assert.equal(isProtected('automation', { provider_category: 'UTILITY' }), false)
    assert.equal(isProtected('api', { provider_category: 'MARKETING' }), false)
  })

  test('a batch with two sends to one contact lets through only what is left of the limit', () => {
    const refused = cappedIndexes(['a', 'b', 'a', 'a'], new Map([['b', 2]]), 2)
    assert.deepEqual([...refused].sort(), [1, 3])
  })

  test('property: after the batch no contact has more than the limit', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('a', 'b', 'c'), { maxLength: 30 }),
        fc.dictionary(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 4 })),
        fc.integer({ min: 1, max: 4 }),
        (batch, before, limit) => {
          const sent = new Map(Object.entries(before))
          const refused = cappedIndexes(batch, sent, limit)
          for (const contact of ['a', 'b', 'c']) {
            const passed = batch.filter((c, i) => c === contact && !refused.has(i)).length
            const had = sent.get(contact) ?? 0
            assert.ok(passed === 0 || had + passed <= limit)
            // nothing is refused while room is left
            const wanted = batch.filter((c) => c === contact).length
            assert.equal(passed, Math.min(wanted, Math.max(0, limit - had)))
          }
        },
      ),
    )
  })
})
