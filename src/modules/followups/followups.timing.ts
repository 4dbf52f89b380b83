import { type WallClock, wallClock } from '../../platform/wall-clock.ts'

/**
 * When a follow-up step is due, in the account's timezone (pure; property-tested over timezones and DST days).
 *
 * - `hours`: the delay in elapsed hours after the base; with a send time, the first occurrence of that local time at
 *   or after it (due at 02:00 with send time 09:30: 09:30 that day; due at 15:00: 09:30 the next day).
 * - `days`: that many calendar days later in the timezone, at the same local time of day as the base (so across a
 *   DST change the wall clock is kept, not 24-hour periods); with a send time, at the send time on that day (for a
 *   delay of 0 days, the next day when that time is already past; the base's own instant is not past).
 * A local time that does not exist (the hour skipped when clocks go forward) moves forward by the gap (02:30 on the
 * spring day in Europe/Berlin is 03:30); one that occurs twice (clocks go back) is the earlier one.
 */

export type DelayUnit = 'hours' | 'days'

/** A wall-clock time with its milliseconds. */
export type LocalDateTime = Omit<WallClock, 'weekday'> & { millisecond: number }

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** Whether `timezone` is an IANA name this runtime knows. */
export function isTimezone(timezone: string): boolean {
  if (!timezone || timezone.length > 64) return false
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone })
    return true
  } catch {
    return false
  }
}

/** HH:MM, 00:00 to 23:59. */
export const SEND_TIME = /^([01]\d|2[0-3]):[0-5]\d$/

/** The wall clock in `timezone` at an instant. */
export function localParts(instantMs: number, timezone: string): LocalDateTime {
  const { year, month, day, hour, minute, second } = wallClock(new Date(instantMs), timezone)
  return { year, month, day, hour, minute, second, millisecond: ((instantMs % 1000) + 1000) % 1000 }
}

const wallMs = (l: LocalDateTime) => Date.UTC(l.year, l.month - 1, l.day, l.hour, l.minute, l.second, l.millisecond)

/** The offset of `timezone` from UTC at an instant (local minus UTC). */
export function offsetAt(instantMs: number, timezone: string): number {
  return wallMs(localParts(instantMs, timezone)) - instantMs
}

/** The instant of a wall-clock time in `timezone`: gaps move forward, repeated times take the earlier one. */
export function instantOf(local: LocalDateTime, timezone: string): number {
  const wall = wallMs(local)
  const before = offsetAt(wall - DAY, timezone)
  const after = offsetAt(wall + DAY, timezone)
  const candidates = [...new Set([wall - before, wall - after])].filter((t) => wallMs(localParts(t, timezone)) === wall)
  if (candidates.length > 0) return Math.min(...candidates)
  // a gap: the offset before the change maps the missing time forward by the gap's length
  return wall - before
}

/** The calendar date `days` after a local date (month and year overflow handled by Date.UTC). */
function addDays(local: LocalDateTime, days: number): Pick<LocalDateTime, 'year' | 'month' | 'day'> {
  const d = new Date(Date.UTC(local.year, local.month - 1, local.day + days))
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }
}

function atTime(date: Pick<LocalDateTime, 'year' | 'month' | 'day'>, sendTime: string): LocalDateTime {
  const [hour, minute] = sendTime.split(':').map(Number)
  return { ...date, hour, minute, second: 0, millisecond: 0 }
}

export interface DueInput {
  /** the enrollment (first step) or the previous step's time */
  base: Date
  amount: number
  unit: DelayUnit
  /** HH:MM or null for no fixed time */
  sendTime: string | null
  timezone: string
}

export function dueAt(input: DueInput): Date {
  const { base, amount, unit, sendTime, timezone } = input
  const baseMs = base.getTime()
  if (unit === 'hours') {
    const raw = baseMs + amount * HOUR
    if (!sendTime) return new Date(raw)
    const local = localParts(raw, timezone)
    let candidate = instantOf(atTime(local, sendTime), timezone)
    if (candidate < raw) candidate = instantOf(atTime(addDays(local, 1), sendTime), timezone)
    return new Date(candidate)
  }
  const local = localParts(baseMs, timezone)
  const date = addDays(local, amount)
  if (!sendTime) return new Date(instantOf({ ...local, ...date }, timezone))
  let candidate = instantOf(atTime(date, sendTime), timezone)
  if (candidate < baseMs) candidate = instantOf(atTime(addDays({ ...local, ...date }, 1), sendTime), timezone)
  return new Date(candidate)
}
