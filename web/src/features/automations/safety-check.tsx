import { useQuery } from '@tanstack/react-query'
import { useMemo } from 'react'
import { ErrorText } from '../../ui/components.tsx'
import { useDebounced } from '../../ui/hooks.ts'
import { type FieldLabel, fill, useEnum, useWords } from '../../ui/i18n.tsx'
import type { CheckResult, Intent, Step, Trigger } from './automation-model.ts'
import { automationCheckQuery } from './queries.ts'
import { words } from './words.ts'

/** The builder's label for a refused field (`body.steps.0.tag`: "Step 1: Tag"), as the member sees it. */
export function useFieldLabel(): FieldLabel {
  const w = useWords(words)
  const names: Record<string, string> = {
    name: w.name,
    intent: w.intent,
    trigger: w.trigger,
    steps: w.steps,
    type: w.type,
    tag: w.tag,
    text: w.text,
    template_id: w.template,
    url: w.url,
    to: w.to,
    subject: w.subject,
    followup_id: w.followup,
    channel: w.channel,
    duration: w.hours,
    minutes: w.minutes,
    hours: w.hours,
    days: w.days,
    until_time: w.untilTime,
    condition: w.condition,
    field: w.fieldPath,
    equals: w.equals,
    state: w.optinState,
    keywords: w.keywords,
    feed_url: w.feedUrl,
    offset_minutes: w.offset,
    then_goto: w.ifYes,
    else_goto: w.ifNo,
  }
  return (path) => {
    const [, ...steps] = path.split('.')
    const last = [...steps].reverse().find((s) => !/^\d+$/.test(s))
    const label = last === undefined ? undefined : names[last]
    if (steps[0] === 'steps' && /^\d+$/.test(steps[1] ?? '')) {
      const step = fill(w.step, { n: String(Number(steps[1]) + 1) })
      return steps.length === 2 ? step : `${step}: ${label ?? last}`
    }
    if (steps[0] === 'trigger' && steps.length > 1) return `${w.trigger}: ${label ?? last}`
    return label
  }
}

/**
 * What saving would do, before the member saves: the API's dry run (POST /app/automations/check) of the same
 * validation and safety rules, asked again as the builder changes (debounced).
 */
export function SafetyCheck({
  intent,
  trigger,
  steps,
  touched,
}: {
  intent: Intent | undefined
  trigger: Trigger
  steps: Step[]
  /** whether the member has changed anything: a draft nobody touched is not checked (nothing to say yet) */
  touched: boolean
}) {
  const w = useWords(words)
  const say = useEnum()
  const fieldLabel = useFieldLabel()
  const definition = useDebounced(
    useMemo(() => ({ intent, trigger, steps }), [intent, trigger, steps]),
    300,
  )
  const check = useQuery({
    ...automationCheckQuery(definition),
    enabled: touched,
    retry: false,
    staleTime: 60_000,
  })
  const result = check.data
  const n = (i: number) => String(i + 1)
  const said = (change: CheckResult['changes'][number]) =>
    change.kind === 'followup_cut'
      ? fill(w.c_followup_cut, { kept: n(change.kept_through), from: n(change.removed_from), to: n(change.removed_to) })
      : fill(w.c_double_optin_prepended, {
          intent: intent === 'mailing_list' ? w.i_mailing_list : w.i_newsletter,
          channel: say('channel', change.channel),
        })
  return (
    <section className="safety-check" aria-live="polite" data-testid="safety-check">
      <h3>{w.checkTitle}</h3>
      {!touched && <p>{w.checkLater}</p>}
      {check.isFetching && !result && !check.error && <p>{w.checking}</p>}
      {check.error ? (
        <div data-testid="safety-refused">
          <p>
            <strong>{w.checkRefused}</strong>
          </p>
          <ErrorText error={check.error} fieldLabel={fieldLabel} />
        </div>
      ) : null}
      {!check.error && result && result.problems.length > 0 && (
        <div data-testid="safety-refused">
          <p>
            <strong>{w.checkRefused}</strong>
          </p>
          <ul>
            {result.problems.map((problem) => (
              <li key={problem}>{problem}</li>
            ))}
          </ul>
        </div>
      )}
      {!check.error && result && result.changes.length > 0 && (
        <div className="notice" data-testid="safety-changes">
          <p>
            <strong>{w.checkChanges}</strong>
          </p>
          <ul>
            {result.changes.map((change) => (
              <li key={change.kind}>{said(change)}</li>
            ))}
          </ul>
          <p>{fill(w.checkAfter, { n: String(result.steps.length) })}</p>
        </div>
      )}
      {!check.error && result && result.problems.length === 0 && result.changes.length === 0 && (
        <p data-testid="safety-none">{w.checkNone}</p>
      )}
    </section>
  )
}
