import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { Link, useNavigate } from '@tanstack/react-router'
import { useEffect, useState } from 'react'
import { app, call, v1 } from '../../api/client.ts'
import { BackLink, ErrorText, Field, handleSubmit, TextField } from '../../ui/components.tsx'
import { fill, useEnum, useWords } from '../../ui/i18n.tsx'
import { Table } from '../../ui/table.tsx'
import { followupCheckQuery, followupQuery, followupsQuery } from './queries.ts'
import { words } from './words.ts'

interface StepDraft {
  text: string
  amount: number
  unit: 'hours' | 'days'
  sendTime: string
}

const emptyStep = (): StepDraft => ({ text: '', amount: 1, unit: 'days', sendTime: '' })

const stepBody = (s: StepDraft) => ({
  text: s.text,
  delay: { amount: s.amount, unit: s.unit },
  send_time: s.sendTime === '' ? null : s.sendTime,
})

/** The template check's issues for a text, asked again when typing pauses. */
function TemplateCheck({ text }: { text: string }) {
  const w = useWords(words)
  const [settled, setSettled] = useState(text)
  useEffect(() => {
    const timer = setTimeout(() => setSettled(text), 300)
    return () => clearTimeout(timer)
  }, [text])
  const check = useQuery({
    ...followupCheckQuery(settled),
    enabled: settled.trim() !== '',
  })
  if (settled.trim() === '' || !check.data) return <ErrorText error={check.error} />
  const issues = check.data.issues
  return (
    <div aria-live="polite" className="template-check">
      {issues.length === 0 ? (
        <p className="ok">{w.checkOk}</p>
      ) : (
        <>
          <p>{w.checkIssues}</p>
          <ul data-testid="check-issues">
            {issues.map((issue) => (
              <li key={`${issue.code}-${issue.field}`}>{issue.message}</li>
            ))}
          </ul>
        </>
      )}
    </div>
  )
}

function StepFields({ n, step, onChange }: { n: number; step: StepDraft; onChange: (s: StepDraft) => void }) {
  const w = useWords(words)
  return (
    <>
      <Field label={`${fill(w.step, { n: String(n) })}: ${w.text}`}>
        <textarea
          value={step.text}
          rows={3}
          maxLength={1024}
          required
          onChange={(e) => onChange({ ...step, text: e.target.value })}
        />
      </Field>
      <TemplateCheck text={step.text} />
      <div className="inline">
        <Field label={`${fill(w.step, { n: String(n) })}: ${w.delay}`}>
          <input
            type="number"
            min={0}
            max={step.unit === 'days' ? 365 : 8760}
            value={step.amount}
            required
            onChange={(e) => onChange({ ...step, amount: Number(e.target.value) })}
          />
        </Field>
        <Field label={`${fill(w.step, { n: String(n) })}: ${w.unit}`}>
          <select value={step.unit} onChange={(e) => onChange({ ...step, unit: e.target.value as 'hours' | 'days' })}>
            <option value="hours">{w.hours}</option>
            <option value="days">{w.days}</option>
          </select>
        </Field>
        <Field label={`${fill(w.step, { n: String(n) })}: ${w.sendTime}`}>
          <input type="time" value={step.sendTime} onChange={(e) => onChange({ ...step, sendTime: e.target.value })} />
        </Field>
      </div>
    </>
  )
}

function statusWord(w: typeof words.en, status: string) {
  return ({ active: w.active, paused: w.paused, draft: w.draft } as Record<string, string>)[status] ?? status
}

export function FollowupsPage() {
  const w = useWords(words)
  const navigate = useNavigate()
  const list = useQuery(followupsQuery)
  const [name, setName] = useState('')
  const [trigger, setTrigger] = useState<'optin_confirmed' | 'tag_added'>('optin_confirmed')
  const [tag, setTag] = useState('')
  const [steps, setSteps] = useState<StepDraft[]>([emptyStep()])
  const create = useMutation({
    mutationFn: () =>
      call(
        app.POST('/app/followups', {
          body: {
            name,
            trigger: trigger === 'tag_added' ? { type: 'tag_added', tag } : { type: 'optin_confirmed' },
            steps: steps.map(stepBody),
          },
        }),
      ),
    onSuccess: (data) => void navigate({ to: '/followups/$id', params: { id: data.followup.id } }),
  })
  return (
    <main>
      <h1>{w.title}</h1>
      <ErrorText error={list.error} />
      {list.data && list.data.followups.length === 0 && <p className="empty">{w.none}</p>}
      {list.data && list.data.followups.length > 0 && (
        <Table
          rows={list.data.followups}
          rowKey={(f) => f.id}
          columns={[
            [
              w.name,
              (f) => (
                <Link to="/followups/$id" params={{ id: f.id }}>
                  {f.name}
                </Link>
              ),
            ],
            [w.status, (f) => statusWord(w, f.status)],
            [w.steps, (f) => f.steps_count],
            [w.enrolled, (f) => `${f.enrollments.active} / ${f.enrollments.completed} / ${f.enrollments.stopped}`],
          ]}
        />
      )}
      <h2>{w.create}</h2>
      <form onSubmit={handleSubmit(() => create.mutate())}>
        <TextField label={w.name} value={name} maxLength={200} required onChange={setName} />
        <Field label={w.trigger}>
          <select value={trigger} onChange={(e) => setTrigger(e.target.value as 'optin_confirmed' | 'tag_added')}>
            <option value="optin_confirmed">{w.optinConfirmed}</option>
            <option value="tag_added">{w.tagAdded}</option>
          </select>
        </Field>
        {trigger === 'tag_added' && <TextField label={w.tag} value={tag} maxLength={40} required onChange={setTag} />}
        {steps.map((step, i) => (
          // the steps have no id before they are saved; their place is their identity here
          // biome-ignore lint/suspicious/noArrayIndexKey: see above
          <fieldset key={i}>
            <legend>{fill(w.step, { n: String(i + 1) })}</legend>
            <StepFields
              n={i + 1}
              step={step}
              onChange={(s) => setSteps((list) => list.map((x, j) => (j === i ? s : x)))}
            />
            {steps.length > 1 && (
              <button type="button" onClick={() => setSteps((list) => list.filter((_, j) => j !== i))}>
                {fill(w.removeStep, { n: String(i + 1) })}
              </button>
            )}
          </fieldset>
        ))}
        <p>
          <button
            type="button"
            onClick={() => setSteps((list) => [...list, emptyStep()])}
            disabled={steps.length >= 20}
          >
            {w.addStep}
          </button>
        </p>
        <ErrorText error={create.error} />
        <button type="submit" disabled={create.isPending}>
          {w.save}
        </button>
      </form>
    </main>
  )
}

interface StepView {
  id: string
  position: number
  text: string
  delay: { amount: number; unit: 'hours' | 'days' }
  send_time: string | null
  effective_send_time: string | null
  approval: string
  needs_approval: boolean
  counts: { scheduled: number; queued: number; sent: number; skipped: number; failed: number }
}

function StepEditor({ followupId, step }: { followupId: string; step: StepView }) {
  const w = useWords(words)
  const say = useEnum()
  const queryClient = useQueryClient()
  const [draft, setDraft] = useState<StepDraft>({
    text: step.text,
    amount: step.delay.amount,
    unit: step.delay.unit,
    sendTime: step.send_time ?? '',
  })
  const save = useMutation({
    mutationFn: () =>
      call(
        v1.PATCH('/v1/followups/{id}/steps/{step_id}', {
          params: { path: { id: followupId, step_id: step.id } },
          body: stepBody(draft),
        }),
      ),
    onSuccess: (data) => queryClient.setQueryData(followupQuery(followupId).queryKey, data),
  })
  const n = String(step.position)
  return (
    <li className="step" data-testid={`step-${step.position}`}>
      <h3>{fill(w.step, { n })}</h3>
      <dl className="details">
        <dt>{w.approval}</dt>
        <dd data-testid={`approval-${step.position}`}>
          {say('approval', step.approval)}
          {step.needs_approval ? ` (${w.needsApproval})` : ''}
        </dd>
        <dt>{w.effective}</dt>
        <dd>{step.effective_send_time ?? '–'}</dd>
      </dl>
      <p data-testid={`counts-${step.position}`}>
        {fill(w.counts, {
          scheduled: String(step.counts.scheduled),
          queued: String(step.counts.queued),
          sent: String(step.counts.sent),
          skipped: String(step.counts.skipped),
          failed: String(step.counts.failed),
        })}
      </p>
      <form onSubmit={handleSubmit(() => save.mutate())}>
        <StepFields n={step.position} step={draft} onChange={setDraft} />
        <ErrorText error={save.error} />
        <button type="submit" disabled={save.isPending}>
          {fill(w.saveStep, { n })}
        </button>
        {save.isSuccess && <span role="status"> {w.saved}</span>}
      </form>
    </li>
  )
}

export function FollowupPage({ id }: { id: string }) {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const followup = useQuery({
    ...followupQuery(id),
    // enrollments and sends move by themselves while it is active
    refetchInterval: (query) => (query.state.data?.followup.status === 'active' ? 3000 : false),
  })
  const setStatus = useMutation({
    mutationFn: (status: 'active' | 'paused') =>
      call(v1.PATCH('/v1/followups/{id}', { params: { path: { id } }, body: { status } })),
    onSuccess: (data) => queryClient.setQueryData(followupQuery(id).queryKey, data),
  })
  const [next, setNext] = useState<StepDraft>(emptyStep())
  const addStep = useMutation({
    mutationFn: () => call(app.POST('/app/followups/{id}/steps', { params: { path: { id } }, body: stepBody(next) })),
    onSuccess: (data) => {
      queryClient.setQueryData(followupQuery(id).queryKey, data)
      setNext(emptyStep())
    },
  })
  const f = followup.data?.followup
  return (
    <main>
      <BackLink to="/followups" label={w.back} />
      <ErrorText error={followup.error} />
      {f && (
        <>
          <h1>{f.name}</h1>
          <dl className="details">
            <dt>{w.status}</dt>
            <dd data-testid="followup-status">{statusWord(w, f.status)}</dd>
            <dt>{w.trigger}</dt>
            <dd>{f.trigger.type === 'tag_added' ? `${w.tagAdded}: ${f.trigger.tag}` : w.optinConfirmed}</dd>
            <dt>{w.enrolled}</dt>
            <dd data-testid="enrollments">
              {f.enrollments.active} / {f.enrollments.completed} / {f.enrollments.stopped}
            </dd>
          </dl>
          <p className="note">{w.rule}</p>
          {f.status === 'active' ? (
            <button type="button" onClick={() => setStatus.mutate('paused')} disabled={setStatus.isPending}>
              {w.pause}
            </button>
          ) : (
            <button type="button" onClick={() => setStatus.mutate('active')} disabled={setStatus.isPending}>
              {w.activate}
            </button>
          )}
          <ErrorText error={setStatus.error} />
          <h2>{w.steps}</h2>
          <ol className="steps">
            {f.steps.map((step) => (
              <StepEditor key={`${step.id}-${step.text}`} followupId={id} step={step as StepView} />
            ))}
          </ol>
          <h2>{w.newStep}</h2>
          <form onSubmit={handleSubmit(() => addStep.mutate())}>
            <StepFields n={f.steps.length + 1} step={next} onChange={setNext} />
            <ErrorText error={addStep.error} />
            <button type="submit" disabled={addStep.isPending || f.steps.length >= 20}>
              {w.addStep}
            </button>
          </form>
        </>
      )}
    </main>
  )
}
