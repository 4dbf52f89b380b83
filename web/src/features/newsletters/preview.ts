// the server's own formatting (a file that imports nothing), so the preview writes a field as the message will
import { formatFieldValue } from '../../../../src/common/field-format.ts'

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
    const shown = value === null || value === undefined ? '' : formatFieldValue(value, field.type, valueLanguage)
    values[field.key] = shown.trim() === '' ? `[${field.label}]` : shown
  }
  return text.replace(/\{\{\s*([a-z][a-z0-9_]*)\s*\}\}/g, (whole, key: string) => values[key] ?? whole)
}
