import type { operations } from '../../api/v1.ts'
import type { Answer } from '../../ui/query.ts'
import type { automationQuery } from './queries.ts'

export const TRIGGERS = [
  'contact_created',
  'optin_confirmed',
  'tag_added',
  'keyword',
  'webhook',
  'calendar',
  'manual',
] as const
export const STEPS = [
  'send_template',
  'send_text',
  'wait',
  'add_tag',
  'remove_tag',
  'branch',
  'double_optin',
  'webhook',
  'notify_team',
  'enroll_followup',
] as const
export const INTENTS = ['transactional', 'service', 'mailing_list', 'newsletter', 'reminder', 'other'] as const

export type Json = Record<string, unknown>
/** An automation as the API answers it (GET /v1/automations/{id}). */
export type Automation = Answer<ReturnType<typeof automationQuery>>
/** A new automation as POST /v1/automations answers it: with its signing secret, shown this once. */
export type CreatedAutomation = operations['createAutomation']['responses'][200]['content']['application/json']

export const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v))
export const list = (text: string) =>
  text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)

export function defaultStep(type: string): Json & { type: string } {
  switch (type) {
    case 'wait':
      return { type, duration: { hours: 1 } }
    case 'branch':
      return { type, condition: { type: 'has_tag', tag: '' } }
    case 'double_optin':
      return { type, channel: 'chat' }
    default:
      return { type }
  }
}

export function defaultTrigger(type: string): Json & { type: string } {
  if (type === 'optin_confirmed') return { type, channel: 'chat' }
  if (type === 'keyword') return { type, keywords: [] }
  return { type }
}
