// Template variables as pure functions: extraction, where each value comes from, validation of caller-supplied
// values (rule 5 of POST /messages), rendering with the contact, and the final "no placeholder remains" check.

/** Anything between double curly braces without braces inside: `{{1}}`, `{{code}}`, but also `{{ Bad Name }}`. */
const PLACEHOLDER = /\{\{([^{}]*)\}\}/g
const POSITIONAL = /^[1-9][0-9]*$/
const NAMED = /^[a-z][a-z0-9_]*$/

export const MAX_VARIABLE_VALUE_LENGTH = 1024

/** The variables that are always filled from the contact, whatever the template (besides custom fields). */
export const CONTACT_VARIABLES = ['name', 'full_name', 'email', 'phone'] as const

export interface Placeholder {
  /** the whole placeholder as written, braces included */
  raw: string
  /** the text between the braces, untouched */
  name: string
  start: number
  end: number
  kind: 'positional' | 'named' | 'invalid'
}

/** Every placeholder in order of appearance; `{{ name }}` (with spaces), `{{0}}` or `{{Name}}` are kind invalid. */
export function placeholders(text: string): Placeholder[] {
  const found: Placeholder[] = []
  for (const match of text.matchAll(PLACEHOLDER)) {
    const name = match[1]
    const kind = POSITIONAL.test(name) ? 'positional' : NAMED.test(name) ? 'named' : 'invalid'
    found.push({ raw: match[0], name, start: match.index, end: match.index + match[0].length, kind })
  }
  return found
}

/**
 * A template's texts that may hold variables: the content first, then the URL of each URL button. Every function here
 * takes either the content alone or these texts; the variables of all of them share one name space.
 */
export type TemplateTexts = string | readonly string[]

const textsOf = (texts: TemplateTexts): readonly string[] => (typeof texts === 'string' ? [texts] : texts)
const bodyOf = (texts: TemplateTexts): string => textsOf(texts)[0] ?? ''

/** The valid variable names of the texts, each once, in order of first appearance. */
export function extractVariables(texts: TemplateTexts): string[] {
  const names: string[] = []
  for (const text of textsOf(texts)) {
    for (const p of placeholders(text)) if (p.kind !== 'invalid' && !names.includes(p.name)) names.push(p.name)
  }
  return names
}

export function containsPlaceholder(text: string): boolean {
  return /\{\{[^{}]*\}\}/.test(text)
}

/**
 * Greetings that make a positional `{{1}}` the contact's first name. Compared with the text before the first `{{1}}`
 * on its line, lower-cased, with everything but letters and spaces removed and spaces collapsed.
 */
export const GREETINGS: readonly string[] = [
  'hi',
  'hey',
  'hello',
  'dear',
  'good morning',
  'good afternoon',
  'good evening',
  'hallo',
  'hey du',
  'liebe',
  'lieber',
  'liebe r',
  'moin',
  'servus',
  'guten tag',
  'guten morgen',
  'guten abend',
  'hola',
  'bonjour',
  'salut',
  'ciao',
  'hej',
  'hoi',
  'olá',
  'ola',
]

/**
 * Whether `{{1}}` is used as a greeting: its first occurrence is on the content's first non-empty line and the text
 * before it on that line is exactly one of GREETINGS (ignoring case, punctuation, emoji and extra spaces), as in
 * `Hallo {{1}},` or `👋 Hi {{1}}!`. Such a `{{1}}` is the contact's first name and cannot be set by a caller.
 */
export function isGreetingPositional(texts: TemplateTexts): boolean {
  const content = bodyOf(texts)
  const first = content.indexOf('{{1}}')
  if (first < 0) return false
  const before = content.slice(0, first)
  const lines = before.split(/\r\n|\r|\n/)
  if (lines.slice(0, -1).some((line) => line.trim() !== '')) return false
  const words = lines[lines.length - 1]
    .toLowerCase()
    .replace(/[^\p{L}\s]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim()
  return GREETINGS.includes(words)
}

/**
 * The variables of a template that come from the contact: `name`, `full_name`, `email`, `phone`, the account's custom
 * field names, and `{{1}}` when it is used as a greeting (isGreetingPositional).
 */
export function contactVariables(texts: TemplateTexts, customFields: readonly string[] = []): string[] {
  const fromContact = new Set<string>([...CONTACT_VARIABLES, ...customFields])
  return extractVariables(texts).filter((v) => fromContact.has(v) || (v === '1' && isGreetingPositional(texts)))
}

/** The variables a caller may (and must) set: every variable that does not come from the contact. */
export function settableVariables(texts: TemplateTexts, customFields: readonly string[] = []): string[] {
  const fromContact = new Set(contactVariables(texts, customFields))
  return extractVariables(texts).filter((v) => !fromContact.has(v))
}

export type VariableProblem =
  | 'unknown'
  | 'from_contact'
  | 'missing'
  | 'not_a_string'
  | 'empty'
  | 'too_long'
  | 'line_break'
  | 'tab'
  | 'control_character'
  | 'four_spaces'
  | 'placeholder'

const PROBLEM_TEXT: Record<VariableProblem, string> = {
  unknown: 'not a variable of this template',
  from_contact: 'comes from the contact and cannot be passed',
  missing: 'needs a value',
  not_a_string: 'must be a string',
  empty: 'is empty',
  too_long: `is longer than ${MAX_VARIABLE_VALUE_LENGTH} characters`,
  line_break: 'contains a line break',
  tab: 'contains a tab',
  control_character: 'contains a control character',
  four_spaces: 'contains four spaces in a row',
  placeholder: 'contains a placeholder',
}

export interface InvalidVariable {
  variable: string
  problem: VariableProblem
}

/** The first problem of one value, or null; the order follows rule 5 of POST /messages. */
export function valueProblem(value: unknown): VariableProblem | null {
  if (typeof value !== 'string') return 'not_a_string'
  if (value.trim() === '') return 'empty'
  if ([...value].length > MAX_VARIABLE_VALUE_LENGTH) return 'too_long'
  if (/[\n\r\u0085\u2028\u2029]/.test(value)) return 'line_break'
  if (value.includes('\t')) return 'tab'
  // biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
  if (/[\u0000-\u001f\u007f-\u009f]/.test(value)) return 'control_character'
  if (value.includes('    ')) return 'four_spaces'
  if (containsPlaceholder(value)) return 'placeholder'
  return null
}

/**
 * Checks caller-supplied values against a template (rule 5 of POST /messages): each settable variable needs a valid
 * value; unknown names and contact variables are refused. Returns every invalid variable, in a stable order.
 */
export function validateVariableValues(
  texts: TemplateTexts,
  supplied: Readonly<Record<string, unknown>>,
  customFields: readonly string[] = [],
): InvalidVariable[] {
  const settable = settableVariables(texts, customFields)
  const fromContact = new Set(contactVariables(texts, customFields))
  const invalid: InvalidVariable[] = []
  for (const [variable, value] of Object.entries(supplied)) {
    if (
      fromContact.has(variable) ||
      (CONTACT_VARIABLES as readonly string[]).includes(variable) ||
      customFields.includes(variable)
    ) {
      invalid.push({ variable, problem: 'from_contact' })
    } else if (!settable.includes(variable)) {
      invalid.push({ variable, problem: 'unknown' })
    } else {
      const problem = valueProblem(value)
      if (problem) invalid.push({ variable, problem })
    }
  }
  for (const variable of settable) {
    if (!Object.hasOwn(supplied, variable)) invalid.push({ variable, problem: 'missing' })
  }
  return invalid
}

/** The English message of 422 invalid_variables; it names every variable. */
export function invalidVariablesMessage(invalid: readonly InvalidVariable[]): string {
  const parts = invalid.map((i) => `${i.variable} ${PROBLEM_TEXT[i.problem]}`)
  return `Invalid variables: ${parts.join('; ')}`
}

/** The first-name fallback per language (primary subtag); any other language uses the English one. */
export const FIRST_NAME_FALLBACK: Readonly<Record<string, string>> = { de: 'du', en: 'there' }

export function firstNameFallback(language: string): string {
  return FIRST_NAME_FALLBACK[language.split(/[_-]/)[0].toLowerCase()] ?? FIRST_NAME_FALLBACK.en
}

export interface ContactValues {
  name: string
  email: string
  phone: string
  /** custom field values by field name, as text (customFieldTexts); a field the contact has no value for is absent */
  customFields?: Readonly<Record<string, string>>
}

/**
 * The values of the contact variables. `name` is the first word of the contact's name and `full_name` the whole name,
 * both falling back to the template language's fallback (firstNameFallback) when the contact has no name; `email`,
 * `phone` and custom fields are taken as they are ('' when the contact has none).
 */
export function contactVariableValues(contact: ContactValues, language: string): Record<string, string> {
  const fullName = contact.name.trim().replace(/\s+/g, ' ')
  const fallback = firstNameFallback(language)
  return {
    ...(contact.customFields ?? {}),
    name: fullName === '' ? fallback : fullName.split(' ')[0],
    full_name: fullName === '' ? fallback : fullName,
    email: contact.email,
    phone: contact.phone,
  }
}

export type RenderResult =
  /** texts: the rendered texts, in the order given */
  | { ok: true; texts: string[]; values: Record<string, string> }
  /** missing: contact variables the contact has no value for; remaining: placeholders left in the final text */
  | { ok: false; missing: string[]; remaining: string[] }

/**
 * Renders a template text: contact variables from the contact, the others from the caller's (already validated)
 * values, in one pass so a value can never be read as a placeholder. Fails when a contact variable has no value
 * (a contact without email for `{{email}}`) or when any placeholder would remain: then nothing may be sent.
 */
export function renderTemplate(input: {
  /** the content, or the content followed by the URL button addresses; rendered in the same order */
  texts: TemplateTexts
  language: string
  contact: ContactValues
  values: Readonly<Record<string, string>>
  /** the account's custom field keys (default: those the contact has a value for); they come from the contact */
  customFields?: readonly string[]
}): RenderResult {
  const customFields = input.customFields ?? Object.keys(input.contact.customFields ?? {})
  const fromContact = contactVariableValues(input.contact, input.language)
  const contactNames = new Set(contactVariables(input.texts, customFields))
  const values: Record<string, string> = {}
  const missing: string[] = []
  for (const variable of extractVariables(input.texts)) {
    const value = contactNames.has(variable)
      ? variable === '1'
        ? fromContact.name
        : Object.hasOwn(fromContact, variable)
          ? fromContact[variable]
          : undefined
      : Object.hasOwn(input.values, variable)
        ? input.values[variable]
        : undefined
    if (value === undefined || value === '') missing.push(variable)
    else values[variable] = value
  }
  const texts = textsOf(input.texts).map((t) => t.replace(PLACEHOLDER, (raw, name: string) => values[name] ?? raw))
  const remaining = texts.flatMap(remainingPlaceholders)
  if (missing.length > 0 || remaining.length > 0) return { ok: false, missing, remaining }
  return { ok: true, texts, values }
}

/** What a failed render lacks, each once: the variables without a value, then any other placeholder left. */
export function unfilledVariables(failed: { missing: readonly string[]; remaining: readonly string[] }): string[] {
  const others = failed.remaining.filter((raw) => !failed.missing.includes(raw.slice(2, -2)))
  return [...new Set([...failed.missing, ...others])]
}

/** The final guard before any send: the text must not contain a placeholder. */
export function remainingPlaceholders(text: string): string[] {
  return placeholders(text).map((p) => p.raw)
}
