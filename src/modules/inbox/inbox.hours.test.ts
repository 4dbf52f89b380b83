import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { instantOf, isOpenAt, nextOpening, type OpeningHours, weeklyHoursProblem } from './inbox.hours.ts'

const weekdays = { from: '09:00', to: '17:00' }
const berlin: OpeningHours = {
  timezone: 'Europe/Berlin',
  weekly: { mon: [weekdays], tue: [weekdays], wed: [weekdays], thu: [weekdays], fri: [weekdays] },
  daysOff: ['2026-12-24'],
}
const newYork: OpeningHours = {
  timezone: 'America/New_York',
  weekly: {
    mon: [
      { from: '08:00', to: '12:00' },
      { from: '13:00', to: '18:00' },
    ],
    sun: [{ from: '00:00', to: '24:00' }],
  },
  daysOff: [],
}
const at = (iso: string) => new Date(iso)

describe('opening hours', () => {
  test('Europe/Berlin: 09:00 local is 08:00 UTC before the spring change (29 March 2026) and 07:00 UTC after it', () => {
    // Monday 23 March 2026, CET (UTC+1)
    assert.equal(isOpenAt(berlin, at('2026-03-23T07:59:00Z')), false)
    assert.equal(isOpenAt(berlin, at('2026-03-23T08:00:00Z')), true)
    assert.equal(isOpenAt(berlin, at('2026-03-23T15:59:00Z')), true)
    assert.equal(isOpenAt(berlin, at('2026-03-23T16:00:00Z')), false)
    // Monday 30 March 2026, CEST (UTC+2)
    assert.equal(isOpenAt(berlin, at('2026-03-30T06:59:00Z')), false)
    assert.equal(isOpenAt(berlin, at('2026-03-30T07:00:00Z')), true)
    assert.equal(isOpenAt(berlin, at('2026-03-30T14:59:00Z')), true)
    assert.equal(isOpenAt(berlin, at('2026-03-30T15:00:00Z')), false)
    // Monday 26 October 2026, after the autumn change (25 October): CET again
    assert.equal(isOpenAt(berlin, at('2026-10-26T07:30:00Z')), false)
    assert.equal(isOpenAt(berlin, at('2026-10-26T08:30:00Z')), true)
  })

  test('a day off is closed all day; the weekend is closed', () => {
    assert.equal(isOpenAt(berlin, at('2026-12-24T10:00:00Z')), false)
    assert.equal(isOpenAt(berlin, at('2026-12-23T10:00:00Z')), true)
    assert.equal(isOpenAt(berlin, at('2026-03-28T10:00:00Z')), false)
  })

  test('America/New_York: several ranges a day, across the change of 8 March 2026 (EST to EDT) and 1 November', () => {
    // Monday 2 March 2026, EST (UTC−5): 08:00–12:00 is 13:00–17:00 UTC, the lunch hour closed
    assert.equal(isOpenAt(newYork, at('2026-03-02T12:59:00Z')), false)
    assert.equal(isOpenAt(newYork, at('2026-03-02T13:00:00Z')), true)
    assert.equal(isOpenAt(newYork, at('2026-03-02T17:30:00Z')), false)
    assert.equal(isOpenAt(newYork, at('2026-03-02T18:00:00Z')), true)
    // Monday 9 March 2026, EDT (UTC−4)
    assert.equal(isOpenAt(newYork, at('2026-03-09T12:00:00Z')), true)
    assert.equal(isOpenAt(newYork, at('2026-03-09T16:30:00Z')), false)
    // Sunday 8 March, the day of the change: open all day, 24:00 included up to midnight
    assert.equal(isOpenAt(newYork, at('2026-03-08T06:30:00Z')), true)
    assert.equal(isOpenAt(newYork, at('2026-03-09T03:59:00Z')), true)
    // Monday 2 November, EST again
    assert.equal(isOpenAt(newYork, at('2026-11-02T12:30:00Z')), false)
    assert.equal(isOpenAt(newYork, at('2026-11-02T13:30:00Z')), true)
  })

  test('the next opening is the local start of the next range, across a change of offset', () => {
    // Saturday 28 March 2026 (CET); Monday 30 March opens at 09:00 CEST = 07:00 UTC
    assert.equal(nextOpening(berlin, at('2026-03-28T10:00:00Z'))?.toISOString(), '2026-03-30T07:00:00.000Z')
    assert.equal(nextOpening(berlin, at('2026-03-30T08:00:00Z')), null)
    // 23 December after hours: the 24th is off, the 25th (Friday) opens at 09:00 CET
    assert.equal(nextOpening(berlin, at('2026-12-23T17:00:00Z'))?.toISOString(), '2026-12-25T08:00:00.000Z')
    assert.equal(nextOpening({ ...berlin, weekly: {} }, at('2026-03-28T10:00:00Z')), null)
  })

  test('instantOf and the local time agree at every minute of a year (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2027, 0, 1) }),
        fc.constantFrom('Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'UTC'),
        (ms, timezone) => {
          const instant = new Date(Math.floor(ms / 60_000) * 60_000)
          const parts = new Intl.DateTimeFormat('sv-SE', {
            timeZone: timezone,
            dateStyle: 'short',
            timeStyle: 'short',
            hourCycle: 'h23',
          }).format(instant)
          const [date, time] = parts.split(' ')
          const minutes = Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5))
          const back = instantOf(date, minutes, timezone)
          // a wall time that happens twice (autumn) names one of its two instants
          assert.ok(Math.abs(back.getTime() - instant.getTime()) % 3_600_000 === 0)
          assert.equal(
            new Intl.DateTimeFormat('sv-SE', {
              timeZone: timezone,
              dateStyle: 'short',
              timeStyle: 'short',
              hourCycle: 'h23',
            }).format(back),
            parts,
          )
        },
      ),
    )
  })

  test('ranges that end before they start or overlap are named', () => {
    assert.match(weeklyHoursProblem({ mon: [{ from: '10:00', to: '09:00' }] }) ?? '', /ends before it starts/)
    assert.match(
      weeklyHoursProblem({
        tue: [
          { from: '09:00', to: '12:00' },
          { from: '11:00', to: '14:00' },
        ],
      }) ?? '',
      /overlap/,
    )
    assert.equal(weeklyHoursProblem(berlin.weekly), null)
  })
})
