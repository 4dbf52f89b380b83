import { isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js'
import { parsePhoneNumberFromString as parseWithFullMetadata } from 'libphonenumber-js/max'

// The contact rules that need no database: pure, and property-tested in contacts.rules.test.ts.

export type OptinState = 'none' | 'pending' | 'confirmed' | 'opted_out'
export type TagOrigin = 'system' | 'ki' | 'manuell'

export const MAX_TAGS_PER_CONTACT = 30
export const MAX_TAG_LENGTH = 40
export const TAG_COUNT_SAMPLE = 1000

/**
 * A phone number to E.164, or null when it is not a valid number. Spaces, hyphens, dots, slashes and parentheses are
 * ignored; a leading 00 is read as +. Without a leading + or 00 the number is read as a national one of `country`
 * (ISO 3166-1 alpha-2, such as DE: 0151 12345678 is +4915112345678); without a country it must be international.
 * Parsed once.
 */
export function normalizePhone(input: string, country?: string | null): string | null {
  const compact = input.trim().replace(/[\s\-./()]/g, '')
  if (/^(\+|00)\d{4,17}$/.test(compact)) {
    const parsed = parsePhoneNumberFromString(compact.replace(/^00/, '+'))
    return parsed?.isValid() ? parsed.number : null
  }
  if (!country || !/^\d{4,17}$/.test(compact) || !isSupportedCountry(country)) return null
  // A national number is checked against the country's full number plan: the default metadata knows only a
  // country's lengths, so `0151 123` (a German mobile prefix with three digits) passed as +49151123
  const parsed = parseWithFullMetadata(compact, country)
  return parsed?.isValid() ? parsed.number : null
}

/** Email addresses are compared and stored lower-cased, so Anna@X.de and anna@x.de are one contact. */
export function normalizeEmail(input: string): string {
  return input.trim().toLowerCase()
}

export interface SearchTerms {
  /** matched case-insensitively against name, email and phone */
  text: string
  /** the term with spaces and hyphens removed, when it looks like (part of) a phone number */
  phone: string | null
}

/**
 * What `q` searches for. A phone term matches however the caller spaced or hyphenated it: stored numbers are
 * E.164 (no separators), so separators are removed from the term, and a national trunk 0 or 00 prefix is dropped.
 */
export function searchTerms(q: string): SearchTerms | null {
  const text = q.trim()
  if (text === '') return null
  if (!/^\+?[\d\s\-./()]+$/.test(text) || !/\d/.test(text)) return { text, phone: null }
  const digits = text.replace(/[\s\-./()]/g, '')
  const phone = digits.startsWith('+') ? digits : digits.replace(/^0+/, '')
  return { text, phone: phone === '' ? null : phone }
}

/** Escapes LIKE wildcards so a term is matched literally. */
export function likeContains(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

const SYSTEM_TAG_NAMES = new Set(['kauf', 'gekauft', 'kunde', 'marketing', 'newsletter'])

/**
 * System tags describe what actually happened (a purchase, a marketing consent, where the contact came from);
 * only the service itself sets them. Compared case-insensitively.
 */
export function isSystemTagName(name: string): boolean {
  const lower = name.trim().toLowerCase()
  return SYSTEM_TAG_NAMES.has(lower) || lower.startsWith('herkunft:')
}

const ORIGIN_RANK: Record<TagOrigin, number> = { system: 3, ki: 2, manuell: 1 }

export interface ContactTag {
  name: string
  origin: TagOrigin
}

/** Each name once, under its strongest origin (system over ki over manuell), sorted by name. */
/** Code point order, which is UTF-8 byte order and PostgreSQL's COLLATE "C" (the list's page is written there). */
export function byCodePoint(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b))
}

export function displayTags(rows: ContactTag[]): ContactTag[] {
  const strongest = new Map<string, TagOrigin>()
  for (const { name, origin } of rows) {
    const current = strongest.get(name)
    if (!current || ORIGIN_RANK[origin] > ORIGIN_RANK[current]) strongest.set(name, origin)
  }
  return [...strongest.entries()]
    .map(([name, origin]) => ({ name, origin }))
    .sort((a, b) => byCodePoint(a.name, b.name))
}

export interface TagAddition {
  /** names to insert with origin manuell */
  added: string[]
  /** names refused: blank, or beyond the cap of 30 tags per contact */
  rejected: string[]
}

/**
 * Which of the requested names are added to a contact that already shows `existing` names. A name already
 * shown (under any origin) changes nothing and is neither added nor rejected.
 */
export function planTagAddition(existing: string[], requested: string[]): TagAddition {
  const shown = new Set(existing)
  const added: string[] = []
  const rejected: string[] = []
  for (const raw of requested) {
    const name = raw.trim()
    if (name === '' || name.length > MAX_TAG_LENGTH) {
      rejected.push(raw)
      continue
    }
    if (shown.has(name)) continue
    if (shown.size >= MAX_TAGS_PER_CONTACT) {
      rejected.push(name)
      continue
    }
    shown.add(name)
    added.push(name)
  }
  return { added, rejected }
}

export interface Addresses {
  email: string
  phone: string
}

export interface OptinReset {
  channel: 'chat' | 'email'
  from: OptinState
  address: string
}

/**
 * Consent belongs to an address: a changed email resets optin_email, a changed phone resets optin_chat.
 * Returns the resets that change something (a state that is already none is not a change).
 */
export function optinResets(
  before: Addresses & { optinChat: OptinState; optinEmail: OptinState },
  after: Addresses,
): OptinReset[] {
  const resets: OptinReset[] = []
  if (before.email !== after.email && before.optinEmail !== 'none') {
    resets.push({ channel: 'email', from: before.optinEmail, address: before.email })
  }
  if (before.phone !== after.phone && before.optinChat !== 'none') {
    resets.push({ channel: 'chat', from: before.optinChat, address: before.phone })
  }
  return resets
}

/** Splits the tags cell of an import line: comma, semicolon or pipe separated. */
export function splitTagCell(cell: string): string[] {
  return cell
    .split(/[,;|]/)
    .map((t) => t.trim())
    .filter((t) => t !== '')
}
