// A time zone's wall clock at an instant, for opening hours and the send times of follow-ups and automations:
// Intl does the time-zone work, so a local time means the same on both sides of a daylight-saving change.

const formatters = new Map<string, Intl.DateTimeFormat>()

/** Intl's 24-hour formatter of a zone, made once per zone; a RangeError for a zone Intl does not know. */
function formatterOf(timezone: string): Intl.DateTimeFormat {
  let format = formatters.get(timezone)
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      weekday: 'short',
    })
    formatters.set(timezone, format)
  }
  return format
}

export interface WallClock {
  year: number
  month: number
  day: number
  /** 0 to 23 */
  hour: number
  minute: number
  second: number
  /** Mon, Tue, … Sun */
  weekday: string
}

/** What a clock in `timezone` shows at an instant; a RangeError for a zone Intl does not know. */
export function wallClock(at: Date, timezone: string): WallClock {
  const parts: Record<string, string> = {}
  for (const part of formatterOf(timezone).formatToParts(at)) parts[part.type] = part.value
  return {
    year: Number(parts.year),
    month: Number(parts.month),
    day: Number(parts.day),
    hour: Number(parts.hour) % 24,
    minute: Number(parts.minute),
    second: Number(parts.second),
    weekday: parts.weekday,
  }
}
