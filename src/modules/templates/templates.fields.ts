// Custom fields in messages (issue 33) as pure functions: which texts need the account's fields, and how a stored
// value becomes text in the contact's language. The values themselves are read by the caller (one read per batch).
import type { CustomFieldValue, FieldDefinition } from '../contacts/index.ts'
import { CONTACT_VARIABLES, extractVariables, type TemplateTexts } from './templates.variables.ts'

const BUILT_IN: ReadonlySet<string> = new Set(CONTACT_VARIABLES)
const NAMED = /^[a-z][a-z0-9_]*$/

/**
 * Whether the texts use a named variable that is not one of the built-in contact variables: only then can a custom
 * field be among them, and only then are the account's field definitions worth reading.
 */
export function mayUseCustomFields(texts: TemplateTexts): boolean {
  return extractVariables(texts).some((v) => NAMED.test(v) && !BUILT_IN.has(v))
}

/** The locale of a language code as templates and contacts write it (`de`, `en_US`); English when unusable. */
function localeOf(language: string): string {
  const tag = language.trim().replace(/_/g, '-')
  if (tag === '') return 'en'
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? 'en'
  } catch {
    return 'en'
  }
}

const primary = (language: string) => localeOf(language).split('-')[0].toLowerCase()

/** yes and no per language (primary subtag); any other language uses the English words. */
export const BOOLEAN_WORDS: Readonly<Record<string, readonly [string, string]>> = {
  de: ['ja', 'nein'],
  en: ['yes', 'no'],
  fr: ['oui', 'non'],
  es: ['sí', 'no'],
  it: ['sì', 'no'],
  nl: ['ja', 'nee'],
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/**
 * A stored value as a message shows it, in `language`: a number with the language's separators (de 1.234,5; en
 * 1,234.5); a date `YYYY-MM-DD` numeric in German (24.12.2026) and in the language's long form otherwise (en December
 * 24, 2026; fr 24 décembre 2026); a boolean as ja/nein, yes/no, …; text and choice as they are.
 */
export function formatFieldValue(value: CustomFieldValue, type: FieldDefinition['type'], language: string): string {
  const locale = localeOf(language)
  if (type === 'number' && typeof value === 'number' && Number.isFinite(value)) {
    return new Intl.NumberFormat(locale, { maximumFractionDigits: 20 }).format(value)
  }
  if (type === 'date' && typeof value === 'string' && DATE.test(value)) {
    const day = new Date(`${value}T00:00:00Z`)
    if (Number.isNaN(day.getTime())) return value
    const dateStyle = primary(language) === 'de' ? 'medium' : 'long'
    return new Intl.DateTimeFormat(locale, { dateStyle, timeZone: 'UTC' }).format(day)
  }
  if (type === 'boolean' && typeof value === 'boolean') {
    const [yes, no] = BOOLEAN_WORDS[primary(language)] ?? BOOLEAN_WORDS.en
    return value ? yes : no
  }
  return String(value)
}

/**
 * The text of each custom field for one contact: its stored value, else the definition's default; a field with
 * neither (or with an empty text) is absent, so a template using it is refused for this contact.
 */
export function customFieldTexts(
  definitions: readonly FieldDefinition[],
  stored: Readonly<Record<string, unknown>> | null | undefined,
  language: string,
): Record<string, string> {
  const texts: Record<string, string> = {}
  for (const definition of definitions) {
    const own = stored?.[definition.key]
    const value = isValue(own) ? own : definition.defaultValue
    if (!isValue(value)) continue
    const text = formatFieldValue(value, definition.type, language)
    if (text.trim() !== '') texts[definition.key] = text
  }
  return texts
}

const isValue = (value: unknown): value is CustomFieldValue =>
  typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))

/** The language a contact's values are written in: the contact's own, else the template's. */
export function valueLanguage(contactLanguage: string | null | undefined, templateLanguage: string): string {
  return contactLanguage && contactLanguage.trim() !== '' ? contactLanguage : templateLanguage
}
