// Instants in the account's timezone: schedules are entered and shown in it.

/** The offset of a timezone from UTC at an instant, in milliseconds. */
function zoneOffset(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(instant))
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0)
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'))
  return asUtc - Math.floor(instant / 1000) * 1000
}

/**
 * A wall-clock date and time (`YYYY-MM-DD`, `HH:MM`) in a timezone as an ISO instant with its zone (UTC), or null
 * when the input is not a date and time.
 */
export function zonedToIso(date: string, time: string, timeZone: string): string | null {
  const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date)
  const t = /^(\d{2}):(\d{2})$/.exec(time)
  if (!d || !t) return null
  const wall = Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3]), Number(t[1]), Number(t[2]))
  let instant = wall - zoneOffset(wall, timeZone)
  // near a DST change the offset at the guess differs from the one at the result: take the second look
  instant = wall - zoneOffset(instant, timeZone)
  return new Date(instant).toISOString()
}

/** An instant shown in a timezone, in the member's language. */
export function formatInZone(iso: string | null | undefined, language: string, timeZone: string): string {
  if (!iso) return '–'
  return new Intl.DateTimeFormat(language === 'de' ? 'de-DE' : 'en-GB', {
    dateStyle: 'medium',
    timeStyle: 'short',
    timeZone,
  }).format(new Date(iso))
}

/** A date (`YYYY-MM-DD`) in a timezone, `days` from now: the date picker's bounds. */
export function dateInZone(timeZone: string, days = 0): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' })
  return parts.format(new Date(Date.now() + days * 86_400_000))
}
