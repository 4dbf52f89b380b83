import { badRequest } from '../../platform/http/errors.ts'
import { GERMAN_TO_ENGLISH } from '../../platform/http/serializer.ts'
import { foldHeader, HEADER_ALIAS_NAMES } from './contacts.csv.ts'
import { CUSTOM_FIELD_TYPES, type CustomFieldType, type CustomFieldValue } from './contacts.field-types.ts'
import type { FieldDefinition } from './contacts.fields-read.ts'

// The custom field rules that need no database: keys, definitions, values on the wire and in a CSV cell, and the
// conversion of a value to another type (mirrored in SQL by contacts.fields.service.ts). Tested beside them.

export const MAX_FIELDS = 50
export const KEY_PATTERN = /^[a-z][a-z0-9_]{0,39}$/
export const MAX_LABEL_LENGTH = 80
export const DEFAULT_MAX_LENGTH = 255
export const MAX_MAX_LENGTH = 1024
export const MAX_OPTIONS = 100
export const MAX_OPTION_LENGTH = 100
/** Numbers are stored as JSON numbers: beyond this a customer number loses digits (store it as text). */
export const NUMBER_LIMIT = 1e15

/** The attribute columns of a CSV export, in their order (the custom fields follow). */
export const CSV_ATTRIBUTES = [
  'id',
  'name',
  'email',
  'phone',
  'optin_chat',
  'optin_email',
  'tags',
  'language',
  'source',
  'created_at',
] as const

/**
 * The contact's own attributes as the API and the export name them: a field of that key would be shadowed on the
 * contact object, in a CSV export, or read back as the attribute.
 */
export const CONTACT_ATTRIBUTES = [...CSV_ATTRIBUTES, 'acquisition', 'fields'] as const

/** The variables templates, newsletters and follow-ups fill from the contact besides its custom fields. */
export const BUILT_IN_VARIABLES = [
  'name',
  'full_name',
  'first_name',
  'last_name',
  'email',
  'phone',
  'language',
  'greeting',
] as const

/** Why a key cannot be a custom field's key, or null when it can. */
export function keyProblem(key: string): string | null {
  if (!KEY_PATTERN.test(key)) {
    return `key "${key}" must be 1 to 40 characters a-z, 0-9 and _, starting with a letter (such as customer_no)`
  }
  if ((BUILT_IN_VARIABLES as readonly string[]).includes(key)) {
    return `key "${key}" is a built-in variable filled from the contact`
  }
  if ((CONTACT_ATTRIBUTES as readonly string[]).includes(key)) return `key "${key}" is an attribute of the contact`
  if (GERMAN_TO_ENGLISH[key] !== undefined) return `key "${key}" is a field name the API reserves`
  if (HEADER_ALIAS_NAMES.has(foldHeader(key))) {
    return `key "${key}" is a column name an import reads as the contact's name, e-mail, phone or tags`
  }
  return null
}

/** What a definition is made of, as the API takes it (snake_case wire names). */
export interface FieldDefinitionInput {
  key: string
  label: string
  type: CustomFieldType
  options?: string[] | null
  default?: unknown
  max_length?: number | null
}

export type FieldDefinitionChange = Partial<Omit<FieldDefinitionInput, 'key'>>

const invalid = (key: string, message: string) => badRequest(message, key)

function checkLabel(label: string): string {
  const trimmed = label.trim()
  if (trimmed.length < 1 || trimmed.length > MAX_LABEL_LENGTH) {
    throw invalid('field_label_invalid', `label must be 1 to ${MAX_LABEL_LENGTH} characters`)
  }
  return trimmed
}

function checkOptions(type: CustomFieldType, options: string[] | null | undefined): string[] | null {
  if (type !== 'choice') {
    if (options !== undefined && options !== null) {
      throw invalid('field_options_invalid', 'options are only for a field of type choice')
    }
    return null
  }
  if (!options) throw invalid('field_options_invalid', 'a choice field needs options (1 to 100 texts)')
  if (options.length < 1 || options.length > MAX_OPTIONS) {
    throw invalid('field_options_invalid', `options must be 1 to ${MAX_OPTIONS} texts`)
  }
  const seen = new Set<string>()
  for (const option of options) {
    if (typeof option !== 'string' || option.trim() === '' || [...option].length > MAX_OPTION_LENGTH) {
      throw invalid('field_options_invalid', `each option must be a non-empty text of at most ${MAX_OPTION_LENGTH}`)
    }
    if (seen.has(option)) throw invalid('field_options_invalid', `option "${option}" is given twice`)
    seen.add(option)
  }
  return options
}

function checkMaxLength(type: CustomFieldType, maxLength: number | null | undefined): number | null {
  if (type !== 'text') {
    if (maxLength !== undefined && maxLength !== null) {
      throw invalid('field_max_length_invalid', 'max_length is only for a field of type text')
    }
    return null
  }
  if (maxLength === undefined || maxLength === null) return DEFAULT_MAX_LENGTH
  if (!Number.isInteger(maxLength) || maxLength < 1 || maxLength > MAX_MAX_LENGTH) {
    throw invalid('field_max_length_invalid', `max_length must be 1 to ${MAX_MAX_LENGTH}`)
  }
  return maxLength
}

function checkDefault(definition: Omit<FieldDefinition, 'defaultValue'>, value: unknown): CustomFieldValue | null {
  if (value === undefined || value === null) return null
  const checked = checkValue(definition, value)
  if ('problem' in checked) throw invalid('field_default_invalid', `default: ${checked.problem}`)
  return checked.value
}

/** A new definition from the API's input; a broken rule is a 400 naming it. */
export function newDefinition(input: FieldDefinitionInput): FieldDefinition {
  const problem = keyProblem(input.key)
  if (problem) throw invalid('field_key_invalid', problem)
  if (!(CUSTOM_FIELD_TYPES as readonly string[]).includes(input.type)) {
    throw invalid('field_type_invalid', `type must be one of ${CUSTOM_FIELD_TYPES.join(', ')}`)
  }
  const shape = {
    key: input.key,
    label: checkLabel(input.label),
    type: input.type,
    options: checkOptions(input.type, input.options),
    maxLength: checkMaxLength(input.type, input.max_length),
  }
  return { ...shape, defaultValue: checkDefault(shape, input.default) }
}

/**
 * A definition after a change: the given properties replace the old ones. A new type drops what only the old type
 * had (options, max_length) and converts the old default when the change gives none (400 when it does not fit).
 */
export function changedDefinition(current: FieldDefinition, change: FieldDefinitionChange): FieldDefinition {
  const type = change.type ?? current.type
  if (!(CUSTOM_FIELD_TYPES as readonly string[]).includes(type)) {
    throw invalid('field_type_invalid', `type must be one of ${CUSTOM_FIELD_TYPES.join(', ')}`)
  }
  const typeChanged = type !== current.type
  const shape = {
    key: current.key,
    label: change.label === undefined ? current.label : checkLabel(change.label),
    type,
    options: checkOptions(type, change.options !== undefined ? change.options : typeChanged ? null : current.options),
    maxLength: checkMaxLength(
      type,
      change.max_length !== undefined ? change.max_length : typeChanged ? null : current.maxLength,
    ),
  }
  if (change.default !== undefined) return { ...shape, defaultValue: checkDefault(shape, change.default) }
  if (current.defaultValue === null) return { ...shape, defaultValue: null }
  const converted = convertValue(current.defaultValue, shape)
  if (converted === null) {
    throw invalid(
      'field_default_invalid',
      `the default ${JSON.stringify(current.defaultValue)} does not fit the changed field; give a new default or null`,
    )
  }
  return { ...shape, defaultValue: converted }
}

type ValueShape = Pick<FieldDefinition, 'key' | 'type' | 'options' | 'maxLength'>

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/

/** Whether a text is a calendar date YYYY-MM-DD (years 0001 to 9999). */
export function isDate(text: string): boolean {
  const match = DATE.exec(text)
  if (!match) return false
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  if (year < 1 || month < 1 || month > 12 || day < 1) return false
  return day <= (month === 2 && isLeapYear(year) ? 29 : DAYS_IN_MONTH[month - 1])
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

const isLeapYear = (year: number) => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0

const lengthOf = (text: string) => [...text].length

function optionList(options: readonly string[]): string {
  return options.length <= 10 ? options.join(', ') : `${options.slice(0, 10).join(', ')}, …`
}

/** A value as the API takes it (string, number, boolean as the type says), or the rule it breaks. */
export function checkValue(field: ValueShape, value: unknown): { value: CustomFieldValue } | { problem: string } {
  const key = field.key
  switch (field.type) {
    case 'text': {
      if (typeof value !== 'string') return { problem: `${key} must be a text` }
      if (value === '') return { problem: `${key} must not be empty (null clears it)` }
      const max = field.maxLength ?? DEFAULT_MAX_LENGTH
      if (lengthOf(value) > max) return { problem: `${key}: text longer than ${max}` }
      return { value }
    }
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) return { problem: `${key} must be a number` }
      if (Math.abs(value) >= NUMBER_LIMIT) return { problem: `${key} must be a number between -1e15 and 1e15` }
      return { value }
    case 'date':
      if (typeof value !== 'string' || !isDate(value)) return { problem: `${key} must be a date YYYY-MM-DD` }
      return { value }
    case 'boolean':
      if (typeof value !== 'boolean') return { problem: `${key} must be true or false` }
      return { value }
    case 'choice': {
      const options = field.options ?? []
      if (typeof value !== 'string' || !options.includes(value)) {
        return { problem: `${key} must be one of ${optionList(options)}` }
      }
      return { value }
    }
  }
}

/** A change of a contact's values: the keys to set and the keys to clear. */
export interface FieldValueChange {
  set: Record<string, CustomFieldValue>
  clear: string[]
}

/**
 * Checks the `fields` of a contact write against the account's definitions: each key must be defined, each value
 * fit its definition or be null (clear). Returns every unknown key and every broken rule, or the change.
 */
export function checkFieldValues(
  definitions: readonly FieldDefinition[],
  input: Readonly<Record<string, unknown>>,
): { unknown: string[]; invalid: string[]; change: FieldValueChange } {
  const byKey = new Map(definitions.map((d) => [d.key, d]))
  const unknown: string[] = []
  const problems: string[] = []
  const change: FieldValueChange = { set: {}, clear: [] }
  for (const [key, value] of Object.entries(input)) {
    const definition = byKey.get(key)
    if (!definition) unknown.push(key)
    else if (value === null) change.clear.push(key)
    else {
      const checked = checkValue(definition, value)
      if ('problem' in checked) problems.push(checked.problem)
      else change.set[key] = checked.value
    }
  }
  return { unknown, invalid: problems, change }
}

/** A contact's values after a change (merge: given keys set, cleared keys removed, the rest kept). */
export function applyFieldChange(
  current: Readonly<Record<string, CustomFieldValue>>,
  change: FieldValueChange,
): Record<string, CustomFieldValue> {
  const next: Record<string, CustomFieldValue> = { ...current, ...change.set }
  for (const key of change.clear) delete next[key]
  return next
}

/** Whether two sets of values are the same (whatever the key order). */
export function sameFieldValues(
  a: Readonly<Record<string, CustomFieldValue>>,
  b: Readonly<Record<string, CustomFieldValue>>,
): boolean {
  const keys = Object.keys(a)
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && a[key] === b[key])
}

/** A number written as text: optional sign, digits, a decimal point or comma, an exponent. */
export const NUMBER_TEXT = /^[+-]?[0-9]+([.,][0-9]+)?([eE][+-]?[0-9]{1,2})?$/
/** The texts a boolean is read from, lower-cased. */
export const TRUE_TEXTS = ['true', 'ja', 'yes', '1'] as const
export const FALSE_TEXTS = ['false', 'nein', 'no', '0'] as const

export function parseNumberText(text: string): number | null {
  const trimmed = text.trim()
  if (!NUMBER_TEXT.test(trimmed)) return null
  const number = Number(trimmed.replace(',', '.'))
  return Number.isFinite(number) && Math.abs(number) < NUMBER_LIMIT ? number : null
}

export function parseBooleanText(text: string): boolean | null {
  const lower = text.trim().toLowerCase()
  if ((TRUE_TEXTS as readonly string[]).includes(lower)) return true
  if ((FALSE_TEXTS as readonly string[]).includes(lower)) return false
  return null
}

/** A value as text: what a text or choice field makes of it. */
export function valueText(value: CustomFieldValue): string {
  return typeof value === 'string' ? value : String(value)
}

/**
 * A stored value converted to a (changed) definition, or null when it does not fit: any value becomes text (within
 * max_length); a text that is a number becomes a number, a date YYYY-MM-DD a date, true/false/ja/nein/yes/no/1/0 a
 * boolean; a value whose text is an option a choice. contacts.fields.service.ts does the same in SQL.
 */
export function convertValue(value: CustomFieldValue, to: Omit<ValueShape, 'key'>): CustomFieldValue | null {
  switch (to.type) {
    case 'text': {
      const text = valueText(value)
      return lengthOf(text) <= (to.maxLength ?? DEFAULT_MAX_LENGTH) ? text : null
    }
    case 'number':
      if (typeof value === 'number') return value
      return typeof value === 'string' ? parseNumberText(value) : null
    case 'date':
      return typeof value === 'string' && isDate(value) ? value : null
    case 'boolean':
      if (typeof value === 'boolean') return value
      return typeof value === 'string' ? parseBooleanText(value) : null
    case 'choice': {
      const text = valueText(value)
      return (to.options ?? []).includes(text) ? text : null
    }
  }
}

const GERMAN_DATE = /^(\d{1,2})\.(\d{1,2})\.(\d{4})$/
/** What a spreadsheet export puts before a text it must not run as a formula (contacts.bulk.ts writes it). */
const FORMULA_GUARD = /^'[=+\-@\t\r]/

/**
 * A CSV cell's value for a field (import): numbers with a decimal point or comma, dates as YYYY-MM-DD or DD.MM.YYYY,
 * booleans as true/false, ja/nein, yes/no, 1/0, a choice by its option (ignoring case); a text loses the apostrophe
 * the export puts before a formula character. The problem says which rule the cell breaks.
 */
export function parseCell(field: ValueShape, raw: string): { value: CustomFieldValue } | { problem: string } {
  const text = raw.trim()
  switch (field.type) {
    case 'text':
      return checkValue(field, FORMULA_GUARD.test(raw) ? raw.slice(1) : raw)
    case 'number': {
      const number = parseNumberText(text)
      return number === null ? { problem: `${field.key} must be a number` } : { value: number }
    }
    case 'date': {
      const german = GERMAN_DATE.exec(text)
      const iso = german ? `${german[3]}-${german[2].padStart(2, '0')}-${german[1].padStart(2, '0')}` : text
      return checkValue(field, iso)
    }
    case 'boolean': {
      const flag = parseBooleanText(text)
      return flag === null ? { problem: `${field.key} must be true or false` } : { value: flag }
    }
    case 'choice': {
      const unguarded = FORMULA_GUARD.test(text) ? text.slice(1) : text
      const option =
        (field.options ?? []).find((o) => o === unguarded) ??
        (field.options ?? []).find((o) => o.toLowerCase() === unguarded.toLowerCase())
      return option === undefined ? checkValue(field, unguarded) : { value: option }
    }
  }
}

const TRANSLITERATION: Record<string, string> = { ä: 'ae', ö: 'oe', ü: 'ue', ß: 'ss', æ: 'ae', ø: 'oe', å: 'aa' }

/**
 * A key for a new field named after a CSV header (--create-fields): lower-case, umlauts transliterated (ä → ae),
 * other accents dropped, every other character `_`; a key that is taken or reserved gets `_2`, `_3`, ….
 */
export function keyFromHeader(header: string, taken: ReadonlySet<string>): string {
  const lower = header.trim().toLowerCase()
  const transliterated = [...lower].map((c) => TRANSLITERATION[c] ?? c).join('')
  let base = transliterated
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
  if (base === '') base = 'field'
  if (!/^[a-z]/.test(base)) base = `field_${base}`
  base = base.slice(0, 40).replace(/_+$/, '')
  if (!taken.has(base) && keyProblem(base) === null) return base
  for (let n = 2; ; n++) {
    const suffix = `_${n}`
    const key = `${base.slice(0, 40 - suffix.length).replace(/_+$/, '')}${suffix}`
    if (!taken.has(key) && keyProblem(key) === null) return key
  }
}
