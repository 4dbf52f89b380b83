import { wallClock } from '../../platform/wall-clock.ts'
import type { FieldCondition } from '../contacts/index.ts'
import type { Step, Trigger } from './automations.schemas.ts'

export type { Step, Trigger }

/** One line of a run's history: what a step did and when. */
export interface RunLogEntry {
  step: number
  type: Step['type']
  at: string
  /** done, queued, waiting, skipped, failed, sending (a call in flight) */
  result: 'done' | 'queued' | 'waiting' | 'skipped' | 'failed' | 'sending'
  reason: string | null
  detail?: Record<string, unknown>
}

const MINUTE = 60_000
const HOUR = 60 * MINUTE
export const FOLLOWUP_GAP_MS = 24 * HOUR
const MAX_WAIT_MS = 366 * 24 * HOUR

const isMessage = (step: Step) => step.type === 'send_template' || step.type === 'send_text'

export function durationMs(duration: { minutes?: number; hours?: number; days?: number }): number {
  return ((duration.days ?? 0) * 24 + (duration.hours ?? 0)) * HOUR + (duration.minutes ?? 0) * MINUTE
}

/** Rules the schema cannot say: a wait has exactly one of duration or until_time; branches only jump forward. */
export function stepProblems(steps: Step[]): string[] {
  const problems: string[] = []
  steps.forEach((step, index) => {
    if (step.type === 'wait') {
      if ((step.duration === undefined) === (step.until_time === undefined)) {
        problems.push(`steps[${index}]: a wait takes exactly one of duration or until_time`)
      } else if (step.duration) {
        const ms = durationMs(step.duration)
        if (ms <= 0 || ms > MAX_WAIT_MS) problems.push(`steps[${index}]: a wait lasts more than 0 and at most a year`)
      }
    }
    if (step.type === 'branch') {
      for (const target of [step.then_goto, step.else_goto]) {
        if (typeof target === 'number' && (target <= index || target >= steps.length)) {
          problems.push(`steps[${index}]: a branch jumps to a later step (index ${index + 1}..${steps.length - 1})`)
        }
      }
    }
  })
  return problems
}

/** Moves branch targets after steps were inserted before `at` (shift > 0) or cut from `length` on. */
function retarget(steps: Step[], shift: number, length: number): Step[] {
  return steps.map((step) => {
    if (step.type !== 'branch') return step
    const move = (target: number | 'end' | undefined) =>
      typeof target === 'number' ? (target + shift >= length ? ('end' as const) : target + shift) : target
    const next: Step = { ...step }
    const thenGoto = move(step.then_goto)
    const elseGoto = move(step.else_goto)
    if (thenGoto !== undefined) next.then_goto = thenGoto
    if (elseGoto !== undefined) next.else_goto = elseGoto
    return next
  })
}

/**
 * The spec's safety rules on create and update. A follow-up sequence disguised as an automation (a message at least
 * 24 hours after an earlier one, counting only waits that last that long for certain) is cut off after its first
 * such message. A mailing-list or newsletter intent always starts with a double opt-in step. Returns the steps to
 * keep and a notice for each change.
 */
/** One change of the safety rules, for a page to word in its own language (steps counted from 0). */
export type SafetyChange =
  | { kind: 'followup_cut'; kept_through: number; removed_from: number; removed_to: number }
  | { kind: 'double_optin_prepended'; channel: 'chat' | 'email' }

export function applySafetyRules(
  intent: string,
  input: Step[],
): { steps: Step[]; notices: string[]; changes: SafetyChange[] } {
  const notices: string[] = []
  const changes: SafetyChange[] = []
  let steps = input
  let lastMessage: number | null = null
  let sinceLast = 0
  for (let index = 0; index < steps.length; index++) {
    const step = steps[index]
    if (step.type === 'wait' && step.duration) sinceLast += durationMs(step.duration)
    if (!isMessage(step)) continue
    if (lastMessage !== null && sinceLast >= FOLLOWUP_GAP_MS) {
      const keep = lastMessage + 1
      notices.push(
        `Messages at least 24 hours apart make a follow-up sequence, not an automation: the automation was cut off after its first such message (step ${lastMessage}); steps ${keep} to ${steps.length - 1} were removed. Use a follow-up sequence for timed messages.`,
      )
      changes.push({
        kind: 'followup_cut',
        kept_through: lastMessage,
        removed_from: keep,
        removed_to: steps.length - 1,
      })
      steps = retarget(steps.slice(0, keep), 0, keep)
      break
    }
    lastMessage = index
    sinceLast = 0
  }
  if ((intent === 'mailing_list' || intent === 'newsletter') && steps[0]?.type !== 'double_optin') {
    const channel = intent === 'mailing_list' ? ('email' as const) : ('chat' as const)
    changes.push({ kind: 'double_optin_prepended', channel })
    steps = [{ type: 'double_optin', channel }, ...retarget(steps, 1, steps.length + 1)]
    notices.push(
      `An automation with a ${intent === 'mailing_list' ? 'mailing-list' : 'newsletter'} intent always starts with a double opt-in: a ${channel} double opt-in step was prepended.`,
    )
  }
  return { steps, notices, changes }
}

/** What a branch condition is tested against. */
export interface ConditionSubject {
  tags: string[]
  optinChat: string
  optinEmail: string
  data: Record<string, unknown>
}

function fieldAt(data: Record<string, unknown>, path: string): unknown {
  let value: unknown = data
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined
    value = (value as Record<string, unknown>)[part]
  }
  return value
}

/** A branch condition answered from what the run has at hand (contact_field conditions are read from the database). */
export type SubjectCondition = Exclude<
  Extract<Step, { type: 'branch' }>['condition'],
  { type: 'contact_field' } | { type: 'within_opening_hours' }
>

export function conditionHolds(condition: SubjectCondition, subject: ConditionSubject) {
  if (condition.type === 'has_tag') return subject.tags.includes(condition.tag)
  if (condition.type === 'optin') {
    return (condition.channel === 'chat' ? subject.optinChat : subject.optinEmail) === condition.state
  }
  // compared as text: a query string, a form and a JSON body say 100 and "100" alike
  const value = fieldAt(subject.data, condition.field)
  if (value === null || condition.equals === null) return value === condition.equals
  return ['string', 'number', 'boolean'].includes(typeof value) && String(value) === String(condition.equals)
}

/** A contact_field branch condition as the contacts module's field condition (without its type). */
export function fieldConditionOf(
  condition: Extract<Extract<Step, { type: 'branch' }>['condition'], { type: 'contact_field' }>,
): FieldCondition {
  const { type: _type, ...rest } = condition
  return rest
}

/** The step after a branch: its target when given, else the next one; `null` ends the run. */
export function branchTarget(step: Extract<Step, { type: 'branch' }>, index: number, holds: boolean): number | null {
  const target = holds ? step.then_goto : step.else_goto
  if (target === 'end') return null
  return target ?? index + 1
}

const WORD = /[\p{L}\p{N}]+/gu

/** A keyword matches as a whole word in any case ("Termin" in "termin morgen?", not in "Termine"). */
export function keywordMatches(text: string, keywords: string[]): boolean {
  const words = new Set((text.toLocaleLowerCase('de').match(WORD) ?? []).map((w) => w))
  return keywords.some((keyword) => {
    const parts = keyword.toLocaleLowerCase('de').match(WORD) ?? []
    if (parts.length === 0) return false
    if (parts.length === 1) return words.has(parts[0])
    return ` ${(text.toLocaleLowerCase('de').match(WORD) ?? []).join(' ')} `.includes(` ${parts.join(' ')} `)
  })
}

/** The instant of a wall-clock time in a zone (the later one in a repeated hour, shifted forward in a gap). */
function zonedInstant(year: number, month: number, day: number, hour: number, minute: number, timezone: string) {
  const guess = Date.UTC(year, month - 1, day, hour, minute)
  let instant = guess
  for (let i = 0; i < 3; i++) {
    const p = wallClock(new Date(instant), timezone)
    const shown = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute)
    instant += guess - shown
  }
  return new Date(instant)
}

/** The next instant at or after `now` at HH:MM in the zone (today when not yet past, else tomorrow). */
export function nextTimeOfDay(now: Date, time: string, timezone: string): Date {
  const [hour, minute] = time.split(':').map(Number)
  const today = wallClock(now, timezone)
  for (let dayOffset = 0; dayOffset <= 2; dayOffset++) {
    const date = new Date(Date.UTC(today.year, today.month - 1, today.day + dayOffset))
    const candidate = zonedInstant(
      date.getUTCFullYear(),
      date.getUTCMonth() + 1,
      date.getUTCDate(),
      hour,
      minute,
      timezone,
    )
    if (candidate.getTime() >= now.getTime()) return candidate
  }
  throw new Error(`no next ${time} in ${timezone}`)
}

/** The type of trigger stored for the index of active automations. */
export const triggerKind = (trigger: Trigger) => trigger.type
