// Custom fields in messages (issue 33) as pure functions: which texts need the account's fields, and how a stored
// value becomes text in the contact's language. The values themselves are read by the caller (one read per batch).

import { formatFieldValue } from '../../common/field-format.ts'
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
