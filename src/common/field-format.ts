// How a custom field's value reads in a message, in the contact's language. Like everything in src/common/ it imports
// nothing, so two builds share it: the server's rendering (modules/templates/templates.fields.ts) and the web app's
// newsletter preview (web/src/features/newsletters/preview.ts), which shows a message as the server will write it.

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
export function formatFieldValue(value: string | number | boolean, type: string, language: string): string {
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
