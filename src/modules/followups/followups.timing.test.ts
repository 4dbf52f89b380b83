import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { dueAt, instantOf, localParts } from './followups.timing.ts'

const HOUR = 3_600_000
const ZONES = [
  'Europe/Berlin',
  'America/New_York',
  'America/Sao_Paulo',
  'Australia/Lord_Howe', // a 30-minute DST shift
  'Pacific/Chatham', // +12:45 / +13:45
  'Asia/Kolkata',
  'America/St_Johns',
  'UTC',
]
// DST change days 2024-2030 and ordinary days: instants around them are where mistakes hide
const DST_DAYS = [
  '2026-03-29T00:00:00Z',
  '2026-10-25T00:00:00Z',
  '2026-03-08T05:00:00Z',
  '2026-11-01T05:00:00Z',
  '2026-04-05T00:00:00Z',
  '2026-10-04T00:00:00Z',
  '2025-03-30T00:00:00Z',
  '2027-10-31T00:00:00Z',
  '2030-03-31T00:00:00Z',
].map((s) => Date.parse(s))

const zone = fc.constantFrom(...ZONES)
const instant = fc.oneof(
  fc.integer({ min: Date.parse('2024-01-01T00:00:00Z'), max: Date.parse('2031-01-01T00:00:00Z') }),
  fc
    .tuple(fc.constantFrom(...DST_DAYS), fc.integer({ min: -3 * 24 * HOUR, max: 3 * 24 * HOUR }))
    .map(([d, o]) => d + o),
)
const sendTime = fc
  .tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
  .map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`)

const minutesOf = (ms: number, tz: string) => {
  const l = localParts(ms, tz)
  return l.hour * 60 + l.minute
}
const wantedMinutes = (time: string) => Number(time.slice(0, 2)) * 60 + Number(time.slice(3))
const dayNumber = (ms: number, tz: string) => {
  const l = localParts(ms, tz)
  return Date.UTC(l.year, l.month - 1, l.day) / (24 * HOUR)
}
/** whether the wall-clock time exists on that local day (false inside a spring-forward gap) */
const exists = (ms: number, tz: string, time: string) => {
  const l = localParts(ms, tz)
  const wanted = { ...l, hour: Number(time.slice(0, 2)), minute: Number(time.slice(3)), second: 0, millisecond: 0 }
  const at = instantOf(wanted, tz)
  const back = localParts(at, tz)
  return back.hour === wanted.hour && back.minute === wanted.minute
}

describe('follow-up send times', () => {
  test('examples: due at 02:00 with send time 09:30 goes at 09:30 that day in Europe/Berlin, on DST days too', () => {
    const tz = 'Europe/Berlin'
    // winter (UTC+1), the spring-forward day, summer (UTC+2), the fall-back day
    const cases: Array<[string, string]> = [
      ['2026-01-15T01:00:00Z', '2026-01-15T08:30:00.000Z'],
      ['2026-03-29T01:00:00Z', '2026-03-29T07:30:00.000Z'],
      ['2026-07-01T00:00:00Z', '2026-07-01T07:30:00.000Z'],
      ['2026-10-25T01:00:00Z', '2026-10-25T08:30:00.000Z'],
    ]
    for (const [due, expected] of cases) {
      const at = dueAt({ base: new Date(due), amount: 0, unit: 'hours', sendTime: '09:30', timezone: tz })
      assert.equal(at.toISOString(), expected, due)
    }
    // a day delay keeps the wall clock across the change: 10:00 on Saturday → 10:00 on Sunday (23 hours later)
    const saturday = new Date('2026-03-28T09:00:00Z')
    const sunday = dueAt({ base: saturday, amount: 1, unit: 'days', sendTime: null, timezone: tz })
    assert.equal(sunday.toISOString(), '2026-03-29T08:00:00.000Z')
    // a time in the skipped hour moves forward by the gap
    const gap = dueAt({ base: saturday, amount: 1, unit: 'days', sendTime: '02:30', timezone: tz })
    assert.equal(gap.toISOString(), '2026-03-29T01:30:00.000Z')
    assert.equal(minutesOf(gap.getTime(), tz), 3 * 60 + 30)
    // a repeated time is the earlier one (02:30 CEST, not CET)
    const repeated = dueAt({
      base: new Date('2026-10-24T09:00:00Z'),
      amount: 1,
      unit: 'days',
      sendTime: '02:30',
      timezone: tz,
    })
    assert.equal(repeated.toISOString(), '2026-10-25T00:30:00.000Z')
    // due after the send time: the next day
    const late = dueAt({
      base: new Date('2026-01-15T14:00:00Z'),
      amount: 0,
      unit: 'hours',
      sendTime: '09:30',
      timezone: tz,
    })
    assert.equal(late.toISOString(), '2026-01-16T08:30:00.000Z')
  })

  test('property: hours with a send time: never before the delay is over, at most a day (plus a DST shift) later, at the send time', () => {
    fc.assert(
      fc.property(zone, instant, fc.integer({ min: 0, max: 24 * 60 }), sendTime, (tz, base, hours, time) => {
        const raw = base + hours * HOUR
        const at = dueAt({ base: new Date(base), amount: hours, unit: 'hours', sendTime: time, timezone: tz }).getTime()
        assert.ok(at >= raw, 'not before the delay is over')
        assert.ok(at - raw < 26 * HOUR, 'within a day of it')
        if (exists(at, tz, time)) assert.equal(minutesOf(at, tz), wantedMinutes(time))
        else assert.ok(minutesOf(at, tz) > wantedMinutes(time), 'a skipped time moves forward')
      }),
      { numRuns: 3000 },
    )
  })

  test('property: hours without a send time are elapsed hours', () => {
    fc.assert(
      fc.property(zone, instant, fc.integer({ min: 0, max: 24 * 60 }), (tz, base, hours) => {
        const at = dueAt({ base: new Date(base), amount: hours, unit: 'hours', sendTime: null, timezone: tz })
        assert.equal(at.getTime(), base + hours * HOUR)
      }),
    )
  })

  test('property: days land on the calendar day N days later, at the send time or at the same wall clock', () => {
    fc.assert(
      fc.property(zone, instant, fc.integer({ min: 1, max: 400 }), fc.option(sendTime), (tz, base, days, time) => {
        const at = dueAt({ base: new Date(base), amount: days, unit: 'days', sendTime: time, timezone: tz }).getTime()
        assert.equal(dayNumber(at, tz), dayNumber(base, tz) + days, 'N calendar days later')
        assert.ok(at > base)
        if (time) {
          if (exists(at, tz, time)) assert.equal(minutesOf(at, tz), wantedMinutes(time))
        } else {
          const b = localParts(base, tz)
          const l = localParts(at, tz)
          const wall = `${b.hour}:${b.minute}:${b.second}`
          if (`${l.hour}:${l.minute}:${l.second}` !== wall) {
            // only when that wall-clock time does not exist on the target day
            assert.ok(!exists(at, tz, `${String(b.hour).padStart(2, '0')}:${String(b.minute).padStart(2, '0')}`))
          }
        }
      }),
      { numRuns: 3000 },
    )
  })

  test('property: 0 days with a send time is the next occurrence of it at or after the base', () => {
    fc.assert(
      fc.property(zone, instant, sendTime, (tz, base, time) => {
        const at = dueAt({ base: new Date(base), amount: 0, unit: 'days', sendTime: time, timezone: tz }).getTime()
        assert.ok(at >= base)
        assert.ok(at - base <= 26 * HOUR)
      }),
    )
  })

  test('0 days with a send time equal to the base is the base itself (a time equal to now is not past)', () => {
    const base = new Date('2026-03-10T08:30:00Z') // 09:30 in Berlin
    const at = dueAt({ base, amount: 0, unit: 'days', sendTime: '09:30', timezone: 'Europe/Berlin' })
    assert.equal(at.toISOString(), base.toISOString())
    const hours = dueAt({ base, amount: 0, unit: 'hours', sendTime: '09:30', timezone: 'Europe/Berlin' })
    assert.equal(hours.toISOString(), base.toISOString())
  })
})
