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
export interface Automation {
  id: string
  name: string
  status: 'draft' | 'active' | 'paused'
  intent: string
  trigger: Json & { type: string }
  steps: Array<Json & { type: string }>
  webhook_url: string | null
  notice: string | null
  created_at: string
  signing_secret?: string
}

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
