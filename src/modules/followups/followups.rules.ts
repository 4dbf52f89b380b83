import { AppError, badRequest, notFound } from '../../platform/http/errors.ts'
import { checkTemplate, type TemplateIssue } from '../templates/index.ts'
import type { DelayUnit } from './followups.tables.ts'
import { SEND_TIME } from './followups.timing.ts'

/** What a sequence may hold: name, step text and tag lengths, steps, delays by unit. */
export const LIMITS = { name: 200, text: 1024, steps: 20, hours: 8760, days: 365, tag: 40 }

export interface StepInput {
  text: string
  delay: { amount: number; unit: DelayUnit }
  send_time?: string | null
}

export function checkSendTime(value: string | null | undefined, field: string) {
  if (value === undefined || value === null) return
  if (!SEND_TIME.test(value)) throw badRequest(`${field} must be HH:MM (00:00 to 23:59) or null`)
}

export function checkSteps(steps: StepInput[]) {
  if (steps.length === 0) throw badRequest('A sequence needs at least one step')
  requireRoomForSteps(steps.length - 1)
  for (const [i, step] of steps.entries()) checkStep(step, `steps[${i}]`)
}

/** A sequence of this many steps takes one more (create's and addStep's rule, which its tool's preview checks too). */
export function requireRoomForSteps(steps: number) {
  if (steps >= LIMITS.steps) throw badRequest(`A sequence has at most ${LIMITS.steps} steps`)
}

/** A step's own rules (text length, delay within its unit's limit, send time), as create and addStep check them. */
export function checkStep(step: Partial<StepInput>, field: string) {
  if (step.text !== undefined && (step.text.trim() === '' || step.text.length > LIMITS.text)) {
    throw badRequest(`${field}.text must hold 1 to ${LIMITS.text} characters`)
  }
  if (step.delay !== undefined) {
    const { amount, unit } = step.delay
    const max = unit === 'days' ? LIMITS.days : LIMITS.hours
    if (!Number.isInteger(amount) || amount < 0 || amount > max || (unit !== 'days' && unit !== 'hours')) {
      throw badRequest(`${field}.delay must be {amount: 0 to ${max}, unit: hours or days}`)
    }
  }
  checkSendTime(step.send_time, `${field}.send_time`)
}

/**
 * The template check of a step's text as a chat marketing template (the check its template's submission runs, less
 * the provider's name clash): every issue, empty when it can go out. Never throws.
 */
export function stepTextIssues(text: string, language: string): TemplateIssue[] {
  return checkTemplate({
    name: 'followup step',
    content: text,
    channel: 'chat',
    subject: null,
    purpose: 'marketing',
    language,
    buttons: [],
    headerMedia: null,
  })
}

/** The 400 `followup_template_invalid` for a step text the template check refuses, before anything is stored. */
export function requireStepText(text: string, language: string, position: number) {
  const issues = stepTextIssues(text, language)
  if (issues.length === 0) return
  throw badRequest(
    `Step ${position} cannot go out as a WhatsApp template: ${issues.map((i) => i.message).join('; ')}`,
    'followup_template_invalid',
    { issues, position, template_key: 'template_not_submittable' },
  )
}

/** A step's change names something to change within the step's limits (updateStep's rules). */
export function checkStepChange(change: Partial<StepInput>) {
  if (change.text === undefined && change.delay === undefined && change.send_time === undefined) {
    throw badRequest('Give text, delay or send_time')
  }
  checkStep(change, 'step')
}

/** 409 followup_active: an active sequence's trigger and steps change only once it is paused. */
export const activeRefusal = (what: string) =>
  new AppError(409, 'followup_active', `Pause the sequence before ${what}`, { key: 'followup_active' })

/** The step a sequence may lose (removeStep's rules, which its tool's preview checks too): not active, not its last. */
export function removableStep<T extends { id: string }>(status: string, steps: T[], stepId: string): T {
  const step = steps.find((s) => s.id === stepId)
  if (!step) throw notFound('follow-up step')
  if (status === 'active') throw activeRefusal('removing a step')
  if (steps.length === 1) throw badRequest('A sequence keeps at least one step', 'followup_last_step')
  return step
}
