import { useQuery } from '@tanstack/react-query'
import { useState } from 'react'
import { EnumOptions, Field } from '../../ui/components.tsx'
import { fill, useEnum, useWords } from '../../ui/i18n.tsx'
import {
  conditionOf,
  draftOf,
  type FieldCondition,
  FieldConditionRow,
  useConditionFields,
} from '../contacts/field-conditions.tsx'
import { followupsQuery } from '../followups/queries.ts'
import { templatePickQuery } from '../templates/queries.ts'
import {
  CHANNELS,
  type Channel,
  CONDITIONS,
  type Condition,
  type Duration,
  defaultCondition,
  defaultStep,
  defaultTrigger,
  type GotoTarget,
  type Intent,
  list,
  OPTIN_STATES,
  pick,
  STEPS,
  type Step,
  str,
  TRIGGERS,
  type Trigger,
} from './automation-model.ts'
import { SafetyCheck } from './safety-check.tsx'
import { words } from './words.ts'

/** A channel to choose: chat or e-mail. */
function ChannelSelect({
  label,
  value,
  onChange,
}: {
  label: string
  value: Channel
  onChange: (channel: Channel) => void
}) {
  const say = useEnum()
  return (
    <Field label={label}>
      <select
        value={value}
        onChange={(e) => {
          const channel = pick(CHANNELS, e.target.value)
          if (channel) onChange(channel)
        }}
      >
        {CHANNELS.map((c) => (
          <option key={c} value={c}>
            {say('channel', c)}
          </option>
        ))}
      </select>
    </Field>
  )
}

export function TriggerEditor({ value, onChange }: { value: Trigger; onChange: (v: Trigger) => void }) {
  const w = useWords(words)
  return (
    <fieldset>
      <legend>{w.trigger}</legend>
      <Field label={w.trigger}>
        <select
          value={value.type}
          onChange={(e) => {
            const type = pick(TRIGGERS, e.target.value)
            if (type) onChange(defaultTrigger(type))
          }}
        >
          <EnumOptions kind="triggerType" values={TRIGGERS} />
        </select>
      </Field>
      {value.type === 'optin_confirmed' && (
        <ChannelSelect
          label={w.channel}
          value={value.channel}
          onChange={(channel) => onChange({ ...value, channel })}
        />
      )}
      {value.type === 'tag_added' && (
        <Field label={w.tag}>
          <input value={value.tag} required onChange={(e) => onChange({ ...value, tag: e.target.value })} />
        </Field>
      )}
      {value.type === 'keyword' && (
        <Field label={w.keywords}>
          <input
            defaultValue={value.keywords.join(', ')}
            required
            onChange={(e) => onChange({ ...value, keywords: list(e.target.value) })}
          />
        </Field>
      )}
      {value.type === 'calendar' && (
        <>
          <Field label={w.feedUrl}>
            <input
              type="url"
              value={value.feed_url}
              required
              onChange={(e) => onChange({ ...value, feed_url: e.target.value })}
            />
          </Field>
          <Field label={w.offset}>
            <input
              type="number"
              min={0}
              value={str(value.offset_minutes ?? 1440)}
              onChange={(e) => onChange({ ...value, offset_minutes: Number(e.target.value) })}
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
  value: GotoTarget | undefined
  from: number
  count: number
  onChange: (v: GotoTarget | undefined) => void
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
  step: Step
  onChange: (s: Step) => void
}) {
  const w = useWords(words)
  const templates = useQuery({
    ...templatePickQuery,
    enabled: step.type === 'send_template',
  })
  const followups = useQuery({
    ...followupsQuery,
    enabled: step.type === 'enroll_followup',
  })
  const n = fill(w.step, { n: String(index + 1) })
  return (
    <>
      <Field label={`${n}: ${w.type}`}>
        <select
          value={step.type}
          onChange={(e) => {
            const type = pick(STEPS, e.target.value)
            if (type) onChange(defaultStep(type))
          }}
        >
          <EnumOptions kind="stepType" values={STEPS} />
        </select>
      </Field>
      {step.type === 'send_template' && (
        <Field label={`${n}: ${w.template}`}>
          <select
            value={step.template_id}
            required
            onChange={(e) => onChange({ ...step, template_id: e.target.value })}
          >
            <option value="">{w.choose}</option>
            {templates.data?.templates.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </Field>
      )}
      {step.type === 'send_text' && (
        <Field label={`${n}: ${w.text}`}>
          <textarea
            value={step.text}
            required
            maxLength={4000}
            onChange={(e) => onChange({ ...step, text: e.target.value })}
          />
        </Field>
      )}
      {step.type === 'wait' && <WaitEditor n={n} step={step} onChange={onChange} />}
      {(step.type === 'add_tag' || step.type === 'remove_tag') && (
        <Field label={`${n}: ${w.tag}`}>
          <input
            value={step.tag}
            required
            maxLength={40}
            onChange={(e) => onChange({ ...step, tag: e.target.value })}
          />
        </Field>
      )}
      {step.type === 'double_optin' && (
        <ChannelSelect
          label={`${n}: ${w.channel}`}
          value={step.channel}
          onChange={(channel) => onChange({ ...step, channel })}
        />
      )}
      {step.type === 'webhook' && (
        <Field label={`${n}: ${w.url}`}>
          <input type="url" value={step.url} required onChange={(e) => onChange({ ...step, url: e.target.value })} />
        </Field>
      )}
      {step.type === 'notify_team' && (
        <>
          <Field label={`${n}: ${w.to}`}>
            <input
              defaultValue={step.to.join(', ')}
              required
              onChange={(e) => onChange({ ...step, to: list(e.target.value) })}
            />
          </Field>
          <Field label={`${n}: ${w.subject}`}>
            <input value={step.subject} required onChange={(e) => onChange({ ...step, subject: e.target.value })} />
          </Field>
          <Field label={`${n}: ${w.text}`}>
            <textarea value={step.text} required onChange={(e) => onChange({ ...step, text: e.target.value })} />
          </Field>
        </>
      )}
      {step.type === 'enroll_followup' && (
        <Field label={`${n}: ${w.followup}`}>
          <select
            value={step.followup_id}
            required
            onChange={(e) => onChange({ ...step, followup_id: e.target.value })}
          >
            <option value="">{w.choose}</option>
            {followups.data?.followups.map((f) => (
              <option key={f.id} value={f.id}>
                {f.name}
              </option>
            ))}
          </select>
        </Field>
      )}
      {step.type === 'branch' && <BranchEditor n={n} index={index} count={count} step={step} onChange={onChange} />}
    </>
  )
}

/** A wait: a duration, or until a time of day (one replaces the other). */
function WaitEditor({
  n,
  step,
  onChange,
}: {
  n: string
  step: Extract<Step, { type: 'wait' }>
  onChange: (s: Step) => void
}) {
  const w = useWords(words)
  const duration: Duration = step.duration ?? {}
  return (
    <div className="inline">
      {(['minutes', 'hours', 'days'] as const).map((unit) => (
        <Field key={unit} label={`${n}: ${w[unit]}`}>
          <input
            type="number"
            min={0}
            value={str(duration[unit])}
            onChange={(e) => {
              const next = { ...duration, [unit]: e.target.value === '' ? undefined : Number(e.target.value) }
              onChange({ ...step, duration: next, until_time: undefined })
            }}
          />
        </Field>
      ))}
      <Field label={`${n}: ${w.untilTime}`}>
        <input
          type="time"
          value={str(step.until_time)}
          onChange={(e) =>
            onChange({
              ...step,
              until_time: e.target.value || undefined,
              duration: e.target.value ? undefined : duration,
            })
          }
        />
      </Field>
    </div>
  )
}

/** A branch: its condition, and where it continues when the condition holds and when not. */
function BranchEditor({
  n,
  index,
  count,
  step,
  onChange,
}: {
  n: string
  index: number
  count: number
  step: Extract<Step, { type: 'branch' }>
  onChange: (s: Step) => void
}) {
  const w = useWords(words)
  const say = useEnum()
  const { condition } = step
  const setCondition = (next: Condition) => onChange({ ...step, condition: next })
  return (
    <>
      <Field label={`${n}: ${w.condition}`}>
        <select
          value={condition.type}
          onChange={(e) => {
            const type = pick(CONDITIONS, e.target.value)
            if (type) setCondition(defaultCondition(type))
          }}
        >
          {CONDITIONS.map((c) => (
            <option key={c} value={c}>
              {say('conditionType', c)}
            </option>
          ))}
        </select>
      </Field>
      {condition.type === 'has_tag' && (
        <Field label={`${n}: ${w.tag}`}>
          <input value={condition.tag} required onChange={(e) => setCondition({ ...condition, tag: e.target.value })} />
        </Field>
      )}
      {condition.type === 'optin' && (
        <div className="inline">
          <ChannelSelect
            label={`${n}: ${w.channel}`}
            value={condition.channel}
            onChange={(channel) => setCondition({ ...condition, channel })}
          />
          <Field label={`${n}: ${w.optinState}`}>
            <select
              value={condition.state}
              onChange={(e) => {
                const state = pick(OPTIN_STATES, e.target.value)
                if (state) setCondition({ ...condition, state })
              }}
            >
              {OPTIN_STATES.map((s) => (
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
              value={condition.field}
              required
              onChange={(e) => setCondition({ ...condition, field: e.target.value })}
            />
          </Field>
          <Field label={`${n}: ${w.equals}`}>
            <input
              value={str(condition.equals)}
              onChange={(e) => setCondition({ ...condition, equals: e.target.value })}
            />
          </Field>
        </div>
      )}
      {condition.type === 'contact_field' && (
        <ContactFieldCondition
          label={`${n}: `}
          condition={condition}
          onChange={(next) => setCondition({ type: 'contact_field', ...next })}
        />
      )}
      <div className="inline">
        <Goto
          label={`${n}: ${w.ifYes}`}
          value={step.then_goto}
          from={index}
          count={count}
          onChange={(v) => onChange({ ...step, then_goto: v })}
        />
        <Goto
          label={`${n}: ${w.ifNo}`}
          value={step.else_goto}
          from={index}
          count={count}
          onChange={(v) => onChange({ ...step, else_goto: v })}
        />
      </div>
    </>
  )
}

/** The trigger and steps a Builder edits; `touched` once the member has changed anything (the check waits for it). */
export function useDefinition(initialTrigger: Trigger, initialSteps: Step[]) {
  const [trigger, setTrigger] = useState(initialTrigger)
  const [steps, setSteps] = useState(initialSteps)
  const [touched, setTouched] = useState(false)
  const builder = {
    trigger,
    steps,
    touched,
    onTrigger: (next: Trigger) => {
      setTouched(true)
      setTrigger(next)
    },
    onSteps: (next: Step[]) => {
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
  intent: Intent | undefined
  trigger: Trigger
  steps: Step[]
  touched: boolean
  onTrigger: (t: Trigger) => void
  onSteps: (s: Step[]) => void
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
/** The ops of a contact_field condition, as the generated API type names them. */
const CONTACT_FIELD_OPS: readonly string[] = [
  'equals',
  'not_equals',
  'is_set',
  'is_empty',
  'before',
  'after',
  'within_next_days',
  'greater_than',
  'less_than',
] satisfies Extract<Condition, { type: 'contact_field' }>['op'][]
const isContactFieldOp = (op: string): op is Extract<Condition, { type: 'contact_field' }>['op'] =>
  CONTACT_FIELD_OPS.includes(op)

function ContactFieldCondition({
  label,
  condition,
  onChange,
}: {
  label: string
  condition: Extract<Condition, { type: 'contact_field' }>
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
        const op = next.op === 'anniversary' ? 'within_next_days' : next.op
        onChange(conditionOf(next, fields) ?? { field: next.field, op: isContactFieldOp(op) ? op : condition.op })
      }}
    />
  )
}
