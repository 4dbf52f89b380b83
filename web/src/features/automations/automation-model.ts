import type { operations as appOperations } from '../../api/app.ts'
import type { operations } from '../../api/v1.ts'
import type { Answer } from '../../ui/query.ts'
import type { automationQuery } from './queries.ts'

/** A new automation as POST /v1/automations takes it: the builder's drafts are these types. */
type NewAutomation = operations['createAutomation']['requestBody']['content']['application/json']
export type Intent = NonNullable<NewAutomation['intent']>
export type Trigger = NewAutomation['trigger']
export type Step = NewAutomation['steps'][number]
/** A branch step's condition. */
export type Condition = Extract<Step, { type: 'branch' }>['condition']
export type Duration = NonNullable<Extract<Step, { type: 'wait' }>['duration']>
/** Where a branch continues: a later step's index, or the end. */
export type GotoTarget = NonNullable<Extract<Step, { type: 'branch' }>['then_goto']>
export type Channel = Extract<Step, { type: 'double_optin' }>['channel']
/** What POST /app/automations/check answers: what saving would do. */
export type CheckResult = appOperations['checkAutomation']['responses'][200]['content']['application/json']

export const TRIGGERS = [
  'contact_created',
  'optin_confirmed',
  'tag_added',
  'keyword',
  'webhook',
  'calendar',
  'manual',
] as const satisfies readonly Trigger['type'][]
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
] as const satisfies readonly Step['type'][]
export const INTENTS = [
  'transactional',
  'service',
  'mailing_list',
  'newsletter',
  'reminder',
  'other',
] as const satisfies readonly Intent[]
export const CONDITIONS = [
  'has_tag',
  'optin',
  'field',
  'contact_field',
  'within_opening_hours',
] as const satisfies readonly Condition['type'][]
export const CHANNELS = ['chat', 'email'] as const satisfies readonly Channel[]
export const OPTIN_STATES = ['confirmed', 'pending', 'none', 'opted_out'] as const satisfies readonly Extract<
  Condition,
  { type: 'optin' }
>['state'][]

/** An automation as the API answers it (GET /v1/automations/{id}). */
export type Automation = Answer<ReturnType<typeof automationQuery>>
/** A new automation as POST /v1/automations answers it: with its signing secret, shown this once. */
export type CreatedAutomation = operations['createAutomation']['responses'][200]['content']['application/json']

/** The one of `values` a select's text names (undefined when none does). */
export const pick = <T extends string>(values: readonly T[], text: string): T | undefined =>
  values.find((v) => v === text)

export const str = (v: unknown) => (typeof v === 'string' ? v : v === undefined || v === null ? '' : String(v))
export const list = (text: string) =>
  text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean)

/**
 * A new step of a kind: what the member has not filled yet is empty (the API's dry run names it as required).
 */
export function defaultStep(type: Step['type']): Step {
  switch (type) {
    case 'send_template':
      return { type, template_id: '' }
    case 'send_text':
      return { type, text: '' }
    case 'wait':
      return { type, duration: { hours: 1 } }
    case 'add_tag':
    case 'remove_tag':
      return { type, tag: '' }
    case 'branch':
      return { type, condition: defaultCondition('has_tag') }
    case 'double_optin':
      return { type, channel: 'chat' }
    case 'webhook':
      return { type, url: '' }
    case 'notify_team':
      return { type, to: [], subject: '', text: '' }
    case 'enroll_followup':
      return { type, followup_id: '' }
  }
}

export function defaultCondition(type: Condition['type']): Condition {
  switch (type) {
    case 'has_tag':
      return { type, tag: '' }
    case 'optin':
      return { type, channel: 'chat', state: 'confirmed' }
    case 'field':
      return { type, field: '', equals: '' }
    case 'contact_field':
      return { type, field: '', op: 'equals' }
    case 'within_opening_hours':
      return { type }
  }
}

export function defaultTrigger(type: Trigger['type']): Trigger {
  switch (type) {
    case 'optin_confirmed':
      return { type, channel: 'chat' }
    case 'tag_added':
      return { type, tag: '' }
    case 'keyword':
      return { type, keywords: [] }
    case 'calendar':
      return { type, feed_url: '' }
    case 'contact_created':
    case 'webhook':
    case 'manual':
      return { type }
  }
}
