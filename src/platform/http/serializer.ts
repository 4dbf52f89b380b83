/** Section 9: deprecated German field names and the English names returned beside them. */
export const GERMAN_TO_ENGLISH: Readonly<Record<string, string>> = {
  zustand: 'state',
  erstes_ereignis: 'first_event_at',
  letztes_ereignis: 'last_event_at',
  anzahl_ereignisse: 'event_count',
  letzter_fehler: 'last_error',
  art: 'kind',
  verbindung: 'connection',
  bestaetigung_gesendet: 'confirmation_sent',
  hinweis: 'notice',
  hinzugefuegt: 'added',
  verworfen: 'rejected',
  herkunft: 'origin',
  anzahl: 'count',
  geprueft: 'checked',
  gedeckelt: 'capped',
  gesendet: 'sent',
  zugestellt: 'delivered',
  gelesen: 'read',
  gescheitert: 'failed',
  fortsetzbar: 'resumable',
  wartet: 'queued',
  uebersprungen: 'skipped',
  kann_fortsetzen: 'can_resume',
  grund: 'reason',
  lage: 'phase',
  weiter_ab: 'resumes_at',
  abbruch_grund: 'stop_reason',
  tageslimit: 'daily_limit',
  verbunden: 'connected',
  war_verbunden: 'was_connected',
}

const ENGLISH_TO_GERMAN: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(GERMAN_TO_ENGLISH).map(([german, english]) => [english, german]),
)

const VALUE_MAPS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  state: {
    laeuft: 'running',
    wartet_auf_verbindung: 'waiting_for_first_event',
    nicht_verbunden: 'not_connected',
    intern: 'internal',
  },
  kind: { kalender: 'calendar', webhook: 'webhook', intern: 'internal' },
}

const REVERSE_VALUE_MAPS: Readonly<Record<string, Readonly<Record<string, string>>>> = Object.fromEntries(
  Object.entries(VALUE_MAPS).map(([field, map]) => [
    field,
    Object.fromEntries(Object.entries(map).map(([g, e]) => [e, g])),
  ]),
)

function englishValue(englishKey: string, value: unknown): unknown {
  const map = VALUE_MAPS[englishKey]
  return map && typeof value === 'string' && value in map ? map[value] : value
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * Prepares any response value for the wire: Dates become ISO 8601 UTC strings and every deprecated German key
 * gets its English equivalent beside it, recursively. The input is not changed; what needs no change (an array or
 * object without a Date or German key anywhere inside) is returned as it is, so a response already in wire form
 * (most of them) is walked but not copied.
 */
export function toWire(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString()
  if (Array.isArray(value)) {
    let out: unknown[] | null = null
    for (let i = 0; i < value.length; i++) {
      const inner = value[i]
      const wired = toWire(inner)
      if (out === null && wired !== inner) out = value.slice(0, i)
      if (out !== null) out.push(wired)
    }
    return out ?? value
  }
  if (!isPlainObject(value)) return value
  let out: Record<string, unknown> | null = null
  let german = false
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue
    const inner = value[key]
    const wired = toWire(inner)
    if (GERMAN_TO_ENGLISH[key] !== undefined) german = true
    if (out === null && wired !== inner) {
      out = {}
      for (const before in value) {
        if (before === key) break
        if (Object.hasOwn(value, before)) out[before] = value[before]
      }
    }
    if (out !== null) out[key] = wired
  }
  if (!german) return out ?? value
  const result: Record<string, unknown> = out ?? { ...value }
  for (const key of Object.keys(result)) {
    const english = GERMAN_TO_ENGLISH[key]
    if (english !== undefined && !(english in result)) result[english] = englishValue(english, result[key])
  }
  return result
}

/** Adds the deprecated German names beside the given English fields (for responses the spec lists with aliases). */
export function withGermanAliases<T extends Record<string, unknown>>(value: T, englishKeys: (keyof T & string)[]): T {
  const out: Record<string, unknown> = { ...value }
  for (const english of englishKeys) {
    const german = ENGLISH_TO_GERMAN[english]
    if (german === undefined || !(english in value)) continue
    const reverse = REVERSE_VALUE_MAPS[english]
    const inner = value[english]
    out[german] = reverse && typeof inner === 'string' && inner in reverse ? reverse[inner] : inner
  }
  return out as T
}
