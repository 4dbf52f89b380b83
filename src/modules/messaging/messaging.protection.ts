import { parsePhoneNumberFromString } from 'libphonenumber-js'
import { wallClock } from '../../platform/wall-clock.ts'
import type { TemplateView } from '../templates/index.ts'
import type { SendOrigin, sendingSettings } from './messaging.tables.ts'

// The frequency cap and quiet hours as pure rules: which sends they apply to, a contact's time zone, whether an
// instant lies in the quiet window and when that window ends, and which of a batch's sends the cap lets through.

export type SendingSettingsRow = typeof sendingSettings.$inferSelect

/**
 * A new account's protection (an account without a settings row): at most one marketing message per contact in 16
 * hours, as Klaviyo's Smart Sending does by default; quiet hours off until the account names its window.
 */
export const DEFAULT_PROTECTION = {
  capEnabled: true,
  capMessages: 1,
  capWindowHours: 16,
  quietEnabled: false,
  quietFrom: '20:00',
  quietTo: '08:00',
} as const

export type Protection = Pick<
  SendingSettingsRow,
  'capEnabled' | 'capMessages' | 'capWindowHours' | 'quietEnabled' | 'quietFrom' | 'quietTo'
>

/**
 * Whether the frequency cap and quiet hours apply to a send: a marketing template queued by a campaign (newsletter,
 * follow-up step, automation). Utility templates, opt-in confirmations and POST /messages sends (the caller's own
 * transactional decision) are never capped, never counted and never held.
 */
export const isProtected = (origin: SendOrigin, view: Pick<TemplateView, 'provider_category'>) =>
  origin !== 'api' && view.provider_category === 'MARKETING'

/** `HH:MM` from 00:00 to 23:59. */
export const QUIET_TIME = /^([01][0-9]|2[0-3]):[0-5][0-9]$/

const minutesOf = (time: string) => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5))

/** A time zone Intl knows. */
export function isZone(timezone: string): boolean {
  try {
    wallClock(new Date(0), timezone)
    return true
  } catch {
    return false
  }
}

/**
 * The main zone of countries with several (Intl lists a country's zones alphabetically, which would put the USA on
 * Adak and Portugal on the Azores): the zone most of the country's people live in.
 */
const MAIN_ZONES: Record<string, string> = {
  AR: 'America/Argentina/Buenos_Aires',
  AU: 'Australia/Sydney',
  BR: 'America/Sao_Paulo',
  CA: 'America/Toronto',
  CD: 'Africa/Kinshasa',
  CL: 'America/Santiago',
  CN: 'Asia/Shanghai',
  CY: 'Asia/Nicosia',
  DE: 'Europe/Berlin',
  EC: 'America/Guayaquil',
  ES: 'Europe/Madrid',
  GB: 'Europe/London',
  GL: 'America/Nuuk',
  ID: 'Asia/Jakarta',
  KZ: 'Asia/Almaty',
  MN: 'Asia/Ulaanbaatar',
  MX: 'America/Mexico_City',
  MY: 'Asia/Kuala_Lumpur',
  NZ: 'Pacific/Auckland',
  PT: 'Europe/Lisbon',
  RU: 'Europe/Moscow',
  UA: 'Europe/Kyiv',
  US: 'America/New_York',
  UZ: 'Asia/Tashkent',
}

/** The zone a country's numbers are read in: its main zone, else the only (or first) one Intl lists. */
export function countryZone(country: string): string | null {
  const main = MAIN_ZONES[country]
  if (main) return main
  try {
    const locale = new Intl.Locale(`und-${country}`) as Intl.Locale & {
      getTimeZones?: () => string[] | undefined
      timeZones?: string[]
    }
    return (locale.getTimeZones?.() ?? locale.timeZones)?.[0] ?? null
  } catch {
    return null
  }
}

/**
 * A contact's time zone for quiet hours: the custom field `timezone` when it holds an IANA name, else the zone of
 * the phone number's country, else the account's.
 */
export function contactZone(
  contact: { phone: string; fields: Record<string, unknown> | null },
  accountTimezone: string,
): string {
  const own = contact.fields?.timezone
  if (typeof own === 'string' && own.includes('/') && isZone(own)) return own
  const country = parsePhoneNumberFromString(contact.phone)?.country
  const zone = country ? countryZone(country) : null
  return zone && isZone(zone) ? zone : accountTimezone
}

/** The instant a local date and time names in a zone (in a spring-forward gap: the instant after it). */
function instantOf(year: number, month: number, day: number, minutes: number, zone: string): Date {
  const wall = Date.UTC(year, month - 1, day, 0, minutes)
  const offsetAt = (ms: number) => {
    const c = wallClock(new Date(ms), zone)
    return Date.UTC(c.year, c.month - 1, c.day, c.hour, c.minute, c.second) - ms
  }
  let guess = wall - offsetAt(wall)
  guess = wall - offsetAt(guess)
  return new Date(guess)
}

/**
 * When the quiet window (`from`–`to`, local wall-clock times, over midnight when from is later than to) that `at`
 * lies in ends in `zone`; null when `at` is outside it. Intl does the zone work, so 08:00 is 08:00 local on both
 * sides of a daylight-saving change.
 */
export function quietUntil(at: Date, window: { from: string; to: string }, zone: string): Date | null {
  const local = wallClock(at, zone)
  const now = local.hour * 60 + local.minute
  const from = minutesOf(window.from)
  const to = minutesOf(window.to)
  if (from === to) return null
  const inside = from < to ? now >= from && now < to : now >= from || now < to
  if (!inside) return null
  const end = instantOf(local.year, local.month, local.day + (now < to ? 0 : 1), to, zone)
  return end.getTime() > at.getTime() ? end : null
}

/**
 * Which of a batch's protected sends the frequency cap lets through, in the batch's order: a contact with `sent`
 * counted sends in the window gets at most `limit - sent` more. Returns the indexes refused.
 */
export function cappedIndexes(contactIds: readonly string[], sent: ReadonlyMap<string, number>, limit: number) {
  const taken = new Map(sent)
  const refused = new Set<number>()
  contactIds.forEach((contactId, at) => {
    const n = taken.get(contactId) ?? 0
    if (n >= limit) {
      refused.add(at)
      return
    }
    taken.set(contactId, n + 1)
  })
  return refused
}
