/**
 * What WhatsApp's template review refuses about where variables stand, in one place: the templates module's check
 * (so a user learns before submitting) and the sandbox's review both use it, so the check can never call a template
 * submittable that the sandbox then rejects.
 *
 * Meta refuses a body that starts or ends with a variable. Punctuation, spaces and emoji next to it do not change
 * that ("… dein Rabatt: {{rabatt}}!" still ends with a variable): a variable counts as at the start or end when only
 * characters that are neither letters nor digits stand between it and that end.
 */

const PLACEHOLDER = /\{\{[^{}]*\}\}/g
const WORDLIKE = /[\p{L}\p{N}]/u

export interface EdgeVariables {
  /** the placeholder the body starts with, or null */
  start: string | null
  /** the placeholder the body ends with, or null */
  end: string | null
}

export function variablesAtEdges(body: string): EdgeVariables {
  const found = [...body.matchAll(PLACEHOLDER)]
  if (found.length === 0) return { start: null, end: null }
  const first = found[0]
  const last = found[found.length - 1]
  const before = body.slice(0, first.index)
  const after = body.slice((last.index ?? 0) + last[0].length)
  return {
    start: WORDLIKE.test(before) ? null : first[0],
    end: WORDLIKE.test(after) ? null : last[0],
  }
}
