import { useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { EnumOptions, ErrorText, Field } from '../../ui/components.tsx'
import { useDebounced } from '../../ui/hooks.ts'
import { type FieldLabel, fill, useEnum, useWords } from '../../ui/i18n.tsx'
import {
  conditionOf,
  draftOf,
  type FieldCondition,
  FieldConditionRow,
  useConditionFields,
} from '../contacts/field-conditions.tsx'
import { followupsQuery } from '../followups/queries.ts'
import { templatePickQuery } from '../templates/queries.ts'
import { defaultStep, defaultTrigger, type Json, list, STEPS, str, TRIGGERS } from './automation-model.ts'
import { automationCheckQuery } from './queries.ts'
import { words } from './words.ts'

export function TriggerEditor({
  value,
  onChange,
}: {
  value: Json & { type: string }
  onChange: (v: Json & { type: string }) => void
}) {
  const w = useWords(words)
  const say = useEnum()
  const set = (patch: Json) => onChange({ ...value, ...patch })
  return (
    <fieldset>
      <legend>{w.trigger}</legend>
      <Field label={w.trigger}>
        <select value={value.type} onChange={(e) => onChange(defaultTrigger(e.target.value))}>
          <EnumOptions kind="triggerType" values={TRIGGERS} />
        </select>
      </Field>
      {value.type === 'optin_confirmed' && (
        <Field label={w.channel}>
          <select value={str(value.channel)} onChange={(e) => set({ channel: e.target.value })}>
            <option value="chat">{say('channel', 'chat')}</option>
            <option value="email">{say('channel', 'email')}</option>
          </select>
        </Field>
      )}
      {value.type === 'tag_added' && (
        <Field label={w.tag}>
          <input value={str(value.tag)} required onChange={(e) => set({ tag: e.target.value })} />
        </Field>
      )}
      {value.type === 'keyword' && (
        <Field label={w.keywords}>
          <input
            defaultValue={((value.keywords as string[]) ?? []).join(', ')}
            required
            onChange={(e) => set({ keywords: list(e.target.value) })}
          />
        </Field>
      )}
      {value.type === 'calendar' && (
        <>
          <Field label={w.feedUrl}>
            <input
              type="url"
              value={str(value.feed_url)}
              required
              onChange={(e) => set({ feed_url: e.target.value })}
            />
          </Field>
          <Field label={w.offset}>
            <input
              type="number"
              min={0}
              value={str(value.offset_minutes ?? 1440)}
              onChange={(e) => set({ offset_minutes: Number(e.target.value) })}
            />
          </Field>
        </>
      )}
    </fieldset>
  )
}

export function Goto({
  label,
  value,
  from,
  count,
  onChange,
}: {
  label: string
  value: unknown
  from: number
  count: number
  onChange: (v: number | 'end' | undefined) => void
}) {
  const w = useWords(words)
  return (
    <Field label={label}>
      <select
        value={value === undefined ? '' : String(value)}
        onChange={(e) => {
          const v = e.target.value
          onChange(v === '' ? undefined : v === 'end' ? 'end' : Number(v))
        }}
      >
        <option value="">{w.next}</option>
        {Array.from({ length: count }, (_, i) => i)
          .filter((i) => i > from)
          .map((i) => (
            <option key={i} value={i}>
              {fill(w.step, { n: String(i + 1) })}
            </option>
          ))}
        <option value="end">{w.end}</option>
      </select>
    </Field>
  )
}

export function StepEditor({
  index,
  count,
  step,
  onChange,
}: {
  index: number
  count: number
  step: Json & { type: string }
  onChange: (s: Json & { type: string }) => void
}) {
  const w = useWords(words)
  const say = useEnum()
  const set = (patch: Json) => onChange({ ...step, ...patch })
  const templates = useQuery({
    ...templatePickQuery,
    enabled: step.type === 'send_template',
  })
  const followups = useQuery({
    ...followupsQuery,
    enabled: step.type === 'enroll_followup',
  })
  const n = fill(w.step, { n: String(index + 1) })
  const duration = (step.duration as Json | undefined) ?? {}
  const condition = (step.condition as Json & { type: string }) ?? { type: 'has_tag' }
  const setCondition = (patch: Json) => set({ condition: { ...condition, ...patch } })
  return (
    <>
      <Field label={`${n}: ${w.type}`}>
        <select value={step.type} onChange={(e) => onChange(defaultStep(e.target.value))}>
          <EnumOptions kind="stepType" values={STEPS} />
        </select>
      </Field>
      {step.type === 'send_template' && (
        <Field label={`${n}: ${w.template}`}>
          <select value={str(step.template_id)} required onChange={(e) => set({ template_id: e.target.value })}>
            <option value="">{w.choose}</option>
            {(templates.data as { templates?: Array<{ id: string; name: string }> } | undefined)?.templates?.map(
              (t) => (
                <option key={t.id} value={t.id}>
                  {t.name}
                </option>
              ),
            )}
          </select>
        </Field>
      )}
      {step.type === 'send_text' && (
        <Field label={`${n}: ${w.text}`}>
          <textarea value={str(step.text)} required maxLength={4000} onChange={(e) => set({ text: e.target.value })} />
        </Field>
      )}
      {step.type === 'wait' && (
        <div className="inline">
          {(['minutes', 'hours', 'days'] as const).map((unit) => (
            <Field key={unit} label={`${n}: ${w[unit]}`}>
              <input
                type="number"
                min={0}
                value={str(duration[unit])}
                onChange={(e) => {
                  const next = { ...duration, [unit]: e.target.value === '' ? undefined : Number(e.target.value) }
                  set({ duration: next, until_time: undefined })
                }}
              />
            </Field>
          ))}
          <Field label={`${n}: ${w.untilTime}`}>
            <input
              type="time"
              value={str(step.until_time)}
              onChange={(e) =>
                set({ until_time: e.target.value || undefined, duration: e.target.value ? undefined : duration })
              }
            />
          </Field>
        </div>
      )}
      {(step.type === 'add_tag' || step.type === 'remove_tag') && (
        <Field label={`${n}: ${w.tag}`}>
          <input value={str(step.tag)} required maxLength={40} onChange={(e) => set({ tag: e.target.value })} />
        </Field>
      )}
      {step.type === 'double_optin' && (
        <Field label={`${n}: ${w.channel}`}>
          <select value={str(step.channel)} onChange={(e) => set({ channel: e.target.value })}>
            <option value="chat">{say('channel', 'chat')}</option>
            <option value="email">{say('channel', 'email')}</option>
          </select>
        </Field>
      )}
      {step.type === 'webhook' && (
        <Field label={`${n}: ${w.url}`}>
          <input type="url" value={str(step.url)} required onChange={(e) => set({ url: e.target.value })} />
        </Field>
      )}
      {step.type === 'notify_team' && (
        <>
          <Field label={`${n}: ${w.to}`}>
            <input
              defaultValue={((step.to as string[]) ?? []).join(', ')}
              required
              onChange={(e) => set({ to: list(e.target.value) })}
            />
          </Field>
          <Field label={`${n}: ${w.subject}`}>
            <input value={str(step.subject)} required onChange={(e) => set({ subject: e.target.value })} />
          </Field>
          <Field label={`${n}: ${w.text}`}>
            <textarea value={str(step.text)} required onChange={(e) => set({ text: e.target.value })} />
          </Field>
        </>
      )}
      {step.type === 'enroll_followup' && (
        <Field label={`${n}: ${w.followup}`}>
          <select value={str(step.followup_id)} required onChange={(e) => set({ followup_id: e.target.value })}>
            <option value="">{w.choose}</option>
            {followups.data?.followups.map((f) => (
              <option key={f.id} value={f.id}>
                {f.name}
              </option>
            ))}
          </select>
        </Field>
      )}
      {step.type === 'branch' && (
        <>
          <Field label={`${n}: ${w.condition}`}>
            <select
              value={condition.type}
              onChange={(e) =>
                set({
                  condition:
                    e.target.value === 'optin'
                      ? { type: 'optin', channel: 'chat', state: 'confirmed' }
                      : e.target.value === 'field'
                        ? { type: 'field', field: '', equals: '' }
                        : e.target.value === 'contact_field'
                          ? { type: 'contact_field', field: '', op: 'equals' }
                          : { type: 'has_tag', tag: '' },
                })
              }
            >
              {(['has_tag', 'optin', 'field', 'contact_field'] as const).map((c) => (
                <option key={c} value={c}>
                  {say('conditionType', c)}
                </option>
              ))}
            </select>
          </Field>
          {condition.type === 'has_tag' && (
            <Field label={`${n}: ${w.tag}`}>
              <input value={str(condition.tag)} required onChange={(e) => setCondition({ tag: e.target.value })} />
            </Field>
          )}
          {condition.type === 'optin' && (
            <div className="inline">
              <Field label={`${n}: ${w.channel}`}>
                <select value={str(condition.channel)} onChange={(e) => setCondition({ channel: e.target.value })}>
                  <option value="chat">{say('channel', 'chat')}</option>
                  <option value="email">{say('channel', 'email')}</option>
                </select>
              </Field>
              <Field label={`${n}: ${w.optinState}`}>
                <select value={str(condition.state)} onChange={(e) => setCondition({ state: e.target.value })}>
                  {['confirmed', 'pending', 'none', 'opted_out'].map((s) => (
                    <option key={s} value={s}>
                      {say('optinState', s)}
                    </option>
                  ))}
                </select>
              </Field>
            </div>
          )}
          {condition.type === 'field' && (
            <div className="inline">
              <Field label={`${n}: ${w.fieldPath}`}>
                <input
                  value={str(condition.field)}
                  required
                  onChange={(e) => setCondition({ field: e.target.value })}
                />
              </Field>
              <Field label={`${n}: ${w.equals}`}>
                <input value={str(condition.equals)} onChange={(e) => setCondition({ equals: e.target.value })} />
              </Field>
            </div>
          )}
          {condition.type === 'contact_field' && (
            <ContactFieldCondition
              label={`${n}: `}
              condition={condition as unknown as FieldCondition}
              onChange={(next) => set({ condition: { type: 'contact_field', ...next } })}
            />
          )}
          <div className="inline">
            <Goto
              label={`${n}: ${w.ifYes}`}
              value={step.then_goto}
              from={index}
              count={count}
              onChange={(v) => set({ then_goto: v })}
            />
            <Goto
              label={`${n}: ${w.ifNo}`}
              value={step.else_goto}
              from={index}
              count={count}
              onChange={(v) => set({ else_goto: v })}
            />
          </div>
        </>
      )}
    </>
  )
}

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

export type SafetyChange =
  | { kind: 'followup_cut'; kept_through: number; removed_from: number; removed_to: number }
  | { kind: 'double_optin_prepended'; channel: 'chat' | 'email' }

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
  intent: string
  trigger: Json & { type: string }
  steps: Array<Json & { type: string }>
  /** whether the member has changed anything: a draft nobody touched is not checked (nothing to say yet) */
  touched: boolean
}) {
  const w = useWords(words)
  const say = useEnum()
  const fieldLabel = useFieldLabel()
  const definition = useDebounced(JSON.stringify({ intent, trigger, steps }), 300)
  const check = useQuery({
    ...automationCheckQuery(definition),
    enabled: touched,
    retry: false,
    staleTime: 60_000,
  })
  const result = check.data as
    | { problems: string[]; changes: SafetyChange[]; notice: string | null; steps: unknown[] }
    | undefined
  const n = (i: number) => String(i + 1)
  const said = (change: SafetyChange) =>
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

/** The trigger and steps a Builder edits; `touched` once the member has changed anything (the check waits for it). */
export function useDefinition(initialTrigger: Json & { type: string }, initialSteps: Array<Json & { type: string }>) {
  const [trigger, setTrigger] = useState(initialTrigger)
  const [steps, setSteps] = useState(initialSteps)
  const [touched, setTouched] = useState(false)
  const builder = {
    trigger,
    steps,
    touched,
    onTrigger: (next: Json & { type: string }) => {
      setTouched(true)
      setTrigger(next)
    },
    onSteps: (next: Array<Json & { type: string }>) => {
      setTouched(true)
      setSteps(next)
    },
  }
  return { builder, setTouched, setTrigger, setSteps }
}

/** Trigger and steps: add, reorder, remove, branch; what the safety rules would change, before saving. */
export function Builder({
  intent,
  trigger,
  steps,
  touched,
  onTrigger,
  onSteps,
}: {
  intent: string
  trigger: Json & { type: string }
  steps: Array<Json & { type: string }>
  touched: boolean
  onTrigger: (t: Json & { type: string }) => void
  onSteps: (s: Array<Json & { type: string }>) => void
}) {
  const w = useWords(words)
  const move = (from: number, to: number) => {
    const next = [...steps]
    const [item] = next.splice(from, 1)
    next.splice(to, 0, item)
    onSteps(next)
  }
  return (
    <>
      <TriggerEditor value={trigger} onChange={onTrigger} />
      <h2>{w.steps}</h2>
      <ol className="steps">
        {steps.map((step, i) => (
          // a step being built has no id; its place is its identity
          // biome-ignore lint/suspicious/noArrayIndexKey: see above
          <li key={i} data-testid={`automation-step-${i + 1}`}>
            <fieldset>
              <legend>{fill(w.step, { n: String(i + 1) })}</legend>
              <StepEditor
                index={i}
                count={steps.length}
                step={step}
                onChange={(s) => onSteps(steps.map((x, j) => (j === i ? s : x)))}
              />
              <div className="inline">
                <button type="button" onClick={() => move(i, i - 1)} disabled={i === 0}>
                  {fill(w.up, { n: String(i + 1) })}
                </button>
                <button type="button" onClick={() => move(i, i + 1)} disabled={i === steps.length - 1}>
                  {fill(w.down, { n: String(i + 1) })}
                </button>
                <button
                  type="button"
                  onClick={() => onSteps(steps.filter((_, j) => j !== i))}
                  disabled={steps.length === 1}
                >
                  {fill(w.remove, { n: String(i + 1) })}
                </button>
              </div>
            </fieldset>
          </li>
        ))}
      </ol>
      <button type="button" onClick={() => onSteps([...steps, defaultStep('add_tag')])} disabled={steps.length >= 50}>
        {w.addStep}
      </button>
      <p className="note">{w.noticeIntro}</p>
      <SafetyCheck intent={intent} trigger={trigger} steps={steps} touched={touched} />
    </>
  )
}

/**
 * A branch on one of the contact's custom fields: edited as text (a number being typed stays as typed), handed on as
 * the API's condition once complete, and as far as it goes before (the check names what is missing).
 */
function ContactFieldCondition({
  label,
  condition,
  onChange,
}: {
  label: string
  condition: FieldCondition
  onChange: (condition: FieldCondition) => void
}) {
  const fields = useConditionFields()
  const [draft, setDraft] = useState(() => draftOf(condition))
  return (
    <FieldConditionRow
      label={label}
      draft={draft}
      fields={fields}
      onChange={(next) => {
        setDraft(next)
        const op = (next.op === 'anniversary' ? 'within_next_days' : next.op) as FieldCondition['op']
        onChange(conditionOf(next, fields) ?? { field: next.field, op })
      }}
    />
  )
}
