import { createContext, type ReactNode, useContext, useEffect, useState } from 'react'
import { ApiError } from '../api/client.ts'
import { type EnumKind, enumWord, errorWords, type Language } from './words.ts'

export type { Language }

/** A form's label for a refused field's path (`body.steps.0.tag`); undefined: the app's general words. */
export type FieldLabel = (path: string) => string | undefined

export interface I18n {
  language: Language
  setLanguage(language: Language): void
  /** any error in words; a refusal by field names each field by the form's label */
  error(error: unknown, fieldLabel?: FieldLabel): string
  /** each refused field of an error as `label: rule in words`; empty when it is not about fields */
  fieldProblems(error: unknown, fieldLabel?: FieldLabel): string[]
}

/** A text's `{name}` places filled in. */
export const fill = (text: string, values: Record<string, string | number> = {}) =>
  text.replace(/\{(\w+)\}/g, (_, name: string) => String(values[name] ?? ''))

/** A field's name when the form gives no label: the path's last name, as words (`feed_url`: feed url). */
const lastName = (path: string) =>
  (
    path
      .split('.')
      .filter((step) => !/^\d+$/.test(step))
      .pop() ?? path
  ).replace(/_/g, ' ')

export function makeI18n(language: Language, setLanguage: (l: Language) => void): I18n {
  const dictionary: { errors: Record<string, string>; rules: Record<string, string>; checkFields: string } =
    errorWords[language]
  const fieldProblems = (error: unknown, fieldLabel?: FieldLabel) => {
    if (!(error instanceof ApiError)) return []
    return error.fields.map((field) => {
      // a required text the form sends empty is refused as "at least 1 character": it is the same thing
      const rule =
        (field.rule === 'minLength' || field.rule === 'minItems') && field.limit === 1 ? 'required' : field.rule
      const words = fill(dictionary.rules[rule] ?? dictionary.rules.invalid, { limit: String(field.limit ?? '') })
      return `${fieldLabel?.(field.path) ?? lastName(field.path)}: ${words}`
    })
  }
  return {
    language,
    setLanguage,
    fieldProblems,
    error(error, fieldLabel) {
      const problems = fieldProblems(error, fieldLabel)
      if (problems.length > 0) return `${dictionary.checkFields} ${problems.join('; ')}`
      if (error instanceof ApiError) {
        const text = dictionary.errors[error.code] ?? dictionary.errors.unknown
        return fill(text, { message: error.message || String(error.status) })
      }
      return fill(dictionary.errors.unknown, { message: error instanceof Error ? error.message : '' })
    },
  }
}

const I18nContext = createContext<I18n | null>(null)

export function I18nProvider({ preferred, children }: { preferred: Language | null; children: ReactNode }) {
  const initial: Language = navigator.language.toLowerCase().startsWith('de') ? 'de' : 'en'
  const [language, setLanguage] = useState<Language>(preferred ?? initial)
  useEffect(() => {
    if (preferred) setLanguage(preferred)
  }, [preferred])
  useEffect(() => {
    document.documentElement.lang = language
  }, [language])
  return <I18nContext.Provider value={makeI18n(language, setLanguage)}>{children}</I18nContext.Provider>
}

export function useI18n(): I18n {
  const value = useContext(I18nContext)
  if (!value) throw new Error('useI18n outside I18nProvider')
  return value
}

/** A page's own words in both languages: `const w = useWords({ de: {...}, en: {...} })`. */
export function useWords<T extends Record<string, string>>(words: { de: T; en: T }): T {
  return words[useI18n().language]
}

/** An API enum's value in the member's words: `const say = useEnum(); say('intent', a.intent)`. */
export function useEnum(): (kind: EnumKind, value: string | null | undefined) => string {
  const { language } = useI18n()
  return (kind, value) => enumWord(language, kind, value)
}
