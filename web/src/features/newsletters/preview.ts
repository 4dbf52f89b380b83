/** A custom field as the preview needs it (GET /app/contact-fields). */
export interface PreviewField {
  key: string
  label: string
  type: string
  default: string | number | boolean | null
}

/** The contact a preview is written for: what the template variables and the custom fields come from. */
export interface PreviewContactValues {
  name: string
  email: string | null
  phone: string | null
  language?: string | null
  fields?: Record<string, string | number | boolean> | null
}

/** yes and no per language, as the server writes a boolean field into a message (templates.fields.ts). */
const BOOLEAN_WORDS: Readonly<Record<string, readonly [string, string]>> = {
  de: ['ja', 'nein'],
  en: ['yes', 'no'],
  fr: ['oui', 'non'],
  es: ['sí', 'no'],
  it: ['sì', 'no'],
  nl: ['ja', 'nee'],
}

function localeOf(language: string): string {
  const tag = language.trim().replace(/_/g, '-')
  if (tag === '') return 'en'
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? 'en'
  } catch {
    return 'en'
  }
}

/**
 * A field's value as a message shows it, as the server formats it: a number with the language's separators, a date
 * numeric in German and long otherwise, a boolean as ja/nein, yes/no, …; text and choice as they are.
 */
export function fieldText(value: string | number | boolean, type: string, language: string): string {
  const locale = localeOf(language)
  const primary = locale.split('-')[0].toLowerCase()
  if (type === 'number' && typeof value === 'number' && Number.isFinite(value)) {
    return new Intl.NumberFormat(locale, { maximumFractionDigits: 20 }).format(value)
  }
  if (type === 'date' && typeof value === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const day = new Date(`${value}T00:00:00Z`)
    if (Number.isNaN(day.getTime())) return value
    return new Intl.DateTimeFormat(locale, { dateStyle: primary === 'de' ? 'medium' : 'long', timeZone: 'UTC' }).format(
      day,
    )
  }
  if (type === 'boolean' && typeof value === 'boolean') {
    const [yes, no] = BOOLEAN_WORDS[primary] ?? BOOLEAN_WORDS.en
    return value ? yes : no
  }
  return String(value)
}

/**
 * A contact's values for the template variables, as the server fills them (`name` is the first word), and the
 * account's custom fields: the contact's value, else the field's default, else its label in brackets (a contact
 * without either is refused by the server's send, which the server's preview names).
 */
export function previewText(
  text: string,
  contact: PreviewContactValues | null,
  fallback: string,
  fields: readonly PreviewField[] = [],
  language = 'en',
): string {
  const full = contact?.name.trim().replace(/\s+/g, ' ') ?? ''
  const values: Record<string, string> = {
    name: full === '' ? fallback : full.split(' ')[0],
    full_name: full === '' ? fallback : full,
    email: contact?.email ?? '',
    phone: contact?.phone ?? '',
  }
  const valueLanguage = contact?.language?.trim() ? contact.language : language
  for (const field of fields) {
    if (field.key in values) continue
    const own = contact?.fields?.[field.key]
    const value = own ?? field.default
    const shown = value === null || value === undefined ? '' : fieldText(value, field.type, valueLanguage)
    values[field.key] = shown.trim() === '' ? `[${field.label}]` : shown
  }
  return text.replace(/\{\{\s*([a-z][a-z0-9_]*)\s*\}\}/g, (whole, key: string) => values[key] ?? whole)
}
