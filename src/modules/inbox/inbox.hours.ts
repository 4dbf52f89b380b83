import { wallClock } from '../../platform/wall-clock.ts'
import { WEEKDAYS, type Weekday, type WeeklyHours } from './inbox.routing.tables.ts'

/**
 * Opening hours as pure rules: weekly ranges of local wall-clock time in an IANA time zone, and days off (local
 * dates). Intl does the time-zone work, so a range "09:00–17:00" means 09:00 on the business's clock on both sides
 * of a daylight-saving change.
 */
export interface OpeningHours {
  timezone: string
  weekly: WeeklyHours
  daysOff: readonly string[]
}

/** A time zone Intl knows (an IANA name such as Europe/Berlin). */
export function isTimezone(timezone: string): boolean {
  try {
    wallClock(new Date(0), timezone)
    return true
  } catch {
    return false
  }
}

interface LocalTime {
  /** YYYY-MM-DD */
  date: string
  weekday: Weekday
  /** minutes since local midnight */
  minutes: number
  /** the same wall-clock time as if it were UTC, in ms (for offsets) */
  wallMs: number
}

export function localTime(at: Date, timezone: string): LocalTime {
  const { year, month, day, hour, minute, second, weekday } = wallClock(at, timezone)
  const twoDigits = (n: number) => String(n).padStart(2, '0')
  return {
    date: `${year}-${twoDigits(month)}-${twoDigits(day)}`,
    weekday: weekday.toLowerCase().slice(0, 3) as Weekday,
    minutes: hour * 60 + minute,
    wallMs: Date.UTC(year, month - 1, day, hour, minute, second),
  }
}

/** `HH:MM` (00:00–24:00) as minutes since midnight. */
export const minutesOf = (time: string) => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5))

/** Whether the business is open at an instant: not a day off, and inside one of that weekday's ranges. */
export function isOpenAt(hours: OpeningHours, at: Date): boolean {
  const local = localTime(at, hours.timezone)
  if (hours.daysOff.includes(local.date)) return false
  return (hours.weekly[local.weekday] ?? []).some(
    (range) => minutesOf(range.from) <= local.minutes && local.minutes < minutesOf(range.to),
  )
}

/** The instant a local date and time names in a time zone (in a spring-forward gap: the instant after it). */
export function instantOf(date: string, minutes: number, timezone: string): Date {
  const [year, month, day] = date.split('-').map(Number)
  const wall = Date.UTC(year, month - 1, day, 0, minutes)
  const offsetAt = (ms: number) => localTime(new Date(ms), timezone).wallMs - ms
  let guess = wall - offsetAt(wall)
  guess = wall - offsetAt(guess)
  return new Date(guess)
}

/** The next time the business opens after `at` (within two weeks), or null when it is open or never opens. */
export function nextOpening(hours: OpeningHours, at: Date): Date | null {
  if (isOpenAt(hours, at)) return null
  const today = localTime(at, hours.timezone)
  const [year, month, day] = today.date.split('-').map(Number)
  for (let offset = 0; offset <= 14; offset++) {
    const calendar = new Date(Date.UTC(year, month - 1, day + offset))
    const date = calendar.toISOString().slice(0, 10)
    if (hours.daysOff.includes(date)) continue
    const weekday = WEEKDAYS[(calendar.getUTCDay() + 6) % 7]
    const starts = (hours.weekly[weekday] ?? []).map((r) => minutesOf(r.from)).sort((a, b) => a - b)
    for (const start of starts) {
      const instant = instantOf(date, start, hours.timezone)
      if (instant.getTime() > at.getTime() && isOpenAt(hours, instant)) return instant
    }
  }
  return null
}

/** What is wrong with weekly ranges (from before to, no overlaps), or null. */
export function weeklyHoursProblem(weekly: WeeklyHours): string | null {
  for (const day of WEEKDAYS) {
    const ranges = [...(weekly[day] ?? [])].sort((a, b) => minutesOf(a.from) - minutesOf(b.from))
    for (const [i, range] of ranges.entries()) {
      if (minutesOf(range.from) >= minutesOf(range.to)) return `${day}: ${range.from}–${range.to} ends before it starts`
      if (i > 0 && minutesOf(range.from) < minutesOf(ranges[i - 1].to)) return `${day}: ranges overlap`
    }
  }
  return null
}

/** Whether `YYYY-MM-DD` is a real calendar date. */
export function isCalendarDate(date: string): boolean {
  const parsed = new Date(`${date}T00:00:00Z`)
  return !Number.isNaN(parsed.getTime()) && parsed.toISOString().slice(0, 10) === date
}
