import { useQuery } from '@tanstack/react-query'
import { app } from '../../api/client.ts'
import { Field } from '../../ui/components.tsx'
import { useWords } from '../../ui/i18n.tsx'
import { apiQuery } from '../../ui/query.ts'
import { fieldConditionWords } from './words.ts'

/** A condition on a custom field as the API takes it (segment.fields, GET /v1/contacts?fields=, bulk filters). */
export type FieldCondition = {
  field: string
  op: ConditionOp
  value?: string | number | boolean
  days?: number
  ignore_year?: boolean
}

export type ConditionOp =
  | 'equals'
  | 'not_equals'
  | 'is_set'
  | 'is_empty'
  | 'before'
  | 'after'
  | 'within_next_days'
  | 'greater_than'
  | 'less_than'

/** A condition as the member edits it: every input as text; `anniversary` is within_next_days by month and day. */
export type ConditionDraft = { field: string; op: string; value: string; days: string }

type FieldInfo = { key: string; label: string; type: string; options: string[] | null; ops: string[] }

export const conditionFieldsQuery = apiQuery(['contacts', 'condition-fields'], () =>
  app.GET('/app/contacts/condition-fields'),
)

const NO_VALUE = ['is_set', 'is_empty', 'within_next_days', 'anniversary']
const BY_DAYS = ['within_next_days', 'anniversary']

/** The ops a field offers in the builder: its API ops, and for a date also the anniversary (birthdays). */
const opsOf = (field: FieldInfo | undefined) =>
  field ? (field.type === 'date' ? [...field.ops, 'anniversary'] : field.ops) : []

export const emptyDraft = (): ConditionDraft => ({ field: '', op: '', value: '', days: '7' })

export function draftOf(condition: Omit<FieldCondition, 'value'> & { value?: unknown }): ConditionDraft {
  const op = condition.op === 'within_next_days' && condition.ignore_year ? 'anniversary' : condition.op
  return {
    field: condition.field,
    op,
    value: condition.value === undefined ? '' : String(condition.value),
    days: condition.days === undefined ? '7' : String(condition.days),
  }
}

/** The condition a draft says, or null while it is incomplete (a field, an op and a value that fits its type). */
export function conditionOf(draft: ConditionDraft, fields: FieldInfo[]): FieldCondition | null {
  const field = fields.find((f) => f.key === draft.field)
  if (!field || !opsOf(field).includes(draft.op)) return null
  if (BY_DAYS.includes(draft.op)) {
    const days = Number(draft.days)
    if (draft.days.trim() === '' || !Number.isInteger(days) || days < 0 || days > 366) return null
    return {
      field: field.key,
      op: 'within_next_days',
      days,
      ...(draft.op === 'anniversary' ? { ignore_year: true } : {}),
    }
  }
  const op = draft.op as ConditionOp
  if (NO_VALUE.includes(op)) return { field: field.key, op }
  const raw = draft.value
  if (field.type === 'number') {
    const n = Number(raw.replace(',', '.'))
    return raw.trim() === '' || !Number.isFinite(n) ? null : { field: field.key, op, value: n }
  }
  if (field.type === 'boolean') {
    return raw === 'true' || raw === 'false' ? { field: field.key, op, value: raw === 'true' } : null
  }
  if (field.type === 'date') {
    return /^\d{4}-\d{2}-\d{2}$/.test(raw) ? { field: field.key, op, value: raw } : null
  }
  return raw === '' ? null : { field: field.key, op, value: raw }
}

/** The complete conditions of the drafts, and whether every draft is complete. */
export function conditionsOf(drafts: ConditionDraft[], fields: FieldInfo[]) {
  const conditions = drafts.map((d) => conditionOf(d, fields))
  return {
    conditions: conditions.filter((c): c is FieldCondition => c !== null),
    complete: conditions.every((c) => c !== null),
  }
}

/** The account's custom fields for a condition builder (empty while loading). */
export function useConditionFields(): FieldInfo[] {
  const fields = useQuery(conditionFieldsQuery)
  return fields.data?.fields ?? []
}

/** One condition: field, op, and the value (by the field's type) or the days. */
export function FieldConditionRow({
  draft,
  onChange,
  fields,
  label,
}: {
  draft: ConditionDraft
  onChange: (draft: ConditionDraft) => void
  fields: FieldInfo[]
  /** what the row's labels start with (the condition's number) */
  label: string
}) {
  const w = useWords(fieldConditionWords)
  const field = fields.find((f) => f.key === draft.field)
  const set = (change: Partial<ConditionDraft>) => onChange({ ...draft, ...change })
  const opWord = (op: string) => (w as Record<string, string>)[`op_${op}`] ?? op
  return (
    <div className="inline">
      <Field label={`${label}${w.field}`}>
        <select
          value={draft.field}
          onChange={(e) => {
            const next = fields.find((f) => f.key === e.target.value)
            set({ field: e.target.value, op: opsOf(next).includes(draft.op) ? draft.op : 'equals', value: '' })
          }}
        >
          <option value="">{w.choose}</option>
          {fields.map((f) => (
            <option key={f.key} value={f.key}>
              {f.label}
            </option>
          ))}
        </select>
      </Field>
      <Field label={`${label}${w.op}`}>
        <select value={draft.op} disabled={!field} onChange={(e) => set({ op: e.target.value })}>
          <option value="">{w.choose}</option>
          {opsOf(field).map((op) => (
            <option key={op} value={op}>
              {opWord(op)}
            </option>
          ))}
        </select>
      </Field>
      {field && BY_DAYS.includes(draft.op) && (
        <Field label={`${label}${w.days}`}>
          <input type="number" min={0} max={366} value={draft.days} onChange={(e) => set({ days: e.target.value })} />
        </Field>
      )}
      {field && draft.op !== '' && !NO_VALUE.includes(draft.op) && (
        <ValueInput
          label={`${label}${w.value}`}
          field={field}
          value={draft.value}
          onChange={(value) => set({ value })}
        />
      )}
    </div>
  )
}

function ValueInput({
  label,
  field,
  value,
  onChange,
}: {
  label: string
  field: FieldInfo
  value: string
  onChange: (value: string) => void
}) {
  const w = useWords(fieldConditionWords)
  if (field.type === 'choice' || field.type === 'boolean') {
    const options =
      field.type === 'boolean'
        ? [
            ['true', w.yes],
            ['false', w.no],
          ]
        : (field.options ?? []).map((o) => [o, o])
    return (
      <Field label={label}>
        <select value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="">{w.choose}</option>
          {options.map(([v, text]) => (
            <option key={v} value={v}>
              {text}
            </option>
          ))}
        </select>
      </Field>
    )
  }
  const type = field.type === 'date' ? 'date' : field.type === 'number' ? 'number' : 'text'
  return (
    <Field label={label}>
      <input
        type={type}
        step={type === 'number' ? 'any' : undefined}
        value={value}
        onChange={(e) => onChange(e.target.value)}
      />
    </Field>
  )
}

/** A list of conditions on custom fields, all of which must hold: add, change and remove them. */
export function FieldConditionsEditor({
  drafts,
  onChange,
}: {
  drafts: ConditionDraft[]
  onChange: (drafts: ConditionDraft[]) => void
}) {
  const w = useWords(fieldConditionWords)
  const fields = useConditionFields()
  if (fields.length === 0 && drafts.length === 0) return <p className="hint">{w.noFields}</p>
  return (
    <fieldset className="field-conditions" data-testid="field-conditions">
      <legend>{w.title}</legend>
      {drafts.map((draft, index) => (
        // a condition has no id of its own: its place is its identity while it is edited
        // biome-ignore lint/suspicious/noArrayIndexKey: the rows are edited in place
        <div key={index} className="field-condition">
          <FieldConditionRow
            draft={draft}
            fields={fields}
            label={drafts.length > 1 ? `${index + 1}. ` : ''}
            onChange={(next) => onChange(drafts.map((d, i) => (i === index ? next : d)))}
          />
          <button type="button" onClick={() => onChange(drafts.filter((_, i) => i !== index))}>
            {drafts.length > 1 ? `${w.remove} ${index + 1}` : w.remove}
          </button>
        </div>
      ))}
      <button type="button" onClick={() => onChange([...drafts, emptyDraft()])} disabled={fields.length === 0}>
        {w.add}
      </button>
    </fieldset>
  )
}
