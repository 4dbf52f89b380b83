// What a saved reply's text may hold, as pure functions: its variables are filled from the contact only (there is no
// caller to give the others), so each must be a contact variable or one of the account's custom fields.

import { CONTACT_VARIABLES, placeholders } from '../templates/index.ts'

/** A placeholder of a saved reply that no contact can fill (unknown), or that is no variable name at all (invalid). */
export interface UnknownVariable {
  name: string
  problem: 'unknown' | 'invalid'
}

/**
 * Every placeholder of the text no contact can fill, each once, in order: `{{ Name }}` is invalid (templates' rule of
 * names), `{{code}}` or `{{1}}` unknown (a saved reply has no caller values; `{{name}}` is the first name).
 */
export function unknownVariables(text: string, customFields: readonly string[]): UnknownVariable[] {
  const known = new Set<string>([...CONTACT_VARIABLES, ...customFields])
  const found: UnknownVariable[] = []
  for (const p of placeholders(text)) {
    if (found.some((f) => f.name === p.name)) continue
    if (p.kind === 'invalid') found.push({ name: p.name, problem: 'invalid' })
    else if (p.kind === 'positional' || !known.has(p.name)) found.push({ name: p.name, problem: 'unknown' })
  }
  return found
}
