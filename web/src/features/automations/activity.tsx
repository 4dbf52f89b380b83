import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { call, v1 } from '../../api/client.ts'
import { CopyButton, ErrorText, Field, formatTime, handleSubmit } from '../../ui/components.tsx'
import { ContactLink, contactLabel, useContactLabels } from '../../ui/contact.tsx'
import { fill, useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import { Table } from '../../ui/table.tsx'
import { commonWords } from '../../ui/words.ts'
import { contactPickQuery } from '../contacts/queries.ts'
import { automationRunsQuery, automationSourcesQuery } from './queries.ts'
import { words } from './words.ts'

export function Runs({ id }: { id: string }) {
  const w = useWords(words)
  const say = useEnum()
  const { language } = useI18n()
  const { never } = useWords(commonWords)
  const runs = useQuery({
    ...automationRunsQuery(id),
    refetchInterval: 2000,
  })
  const items = runs.data?.runs ?? []
  const contacts = useContactLabels(items.map((run) => run.contact_id))
  return (
    <section aria-live="polite">
      <h2>{w.runs}</h2>
      <ErrorText error={runs.error} />
      {runs.data && items.length === 0 && <p className="empty">{w.noRuns}</p>}
      {items.map((run) => (
        <article key={run.id} className="run" data-testid="run">
          <h3>{fill(w.run, { at: formatTime(run.created_at, language, never) })}</h3>
          {run.contact_id && (
            <p data-testid="run-contact">
              {w.contact}: <ContactLink contact={contacts.get(run.contact_id)} unknown={w.unknownContact} />
            </p>
          )}
          <p>
            {w.state}: <strong data-testid="run-state">{say('runState', run.state)}</strong> · {w.source}: {run.source}
            {run.reason ? ` · ${w.reason}: ${run.reason}` : ''}
          </p>
          <Table
            rows={run.steps}
            // a step can be logged twice (waiting, then done)
            rowKey={(_, i) => i}
            columns={[
              ['#', (s) => s.step + 1],
              [w.type, (s) => say('stepType', s.type)],
              [w.result, (s) => say('stepResult', s.result)],
              [w.reason, (s) => s.reason ?? '–'],
            ]}
          />
        </article>
      ))}
    </section>
  )
}

export function TriggerForContact({ id }: { id: string }) {
  const w = useWords(words)
  const [contact, setContact] = useState('')
  const contacts = useQuery(contactPickQuery)
  const queryClient = useQueryClient()
  const start = useMutation({
    mutationFn: () =>
      call(v1.POST('/v1/automations/{id}/trigger', { params: { path: { id } }, body: { contact_id: contact } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: automationRunsQuery(id).queryKey }),
  })
  return (
    <section>
      <h2>{w.triggerFor}</h2>
      <form className="inline" onSubmit={handleSubmit(() => start.mutate())}>
        <Field label={w.contact}>
          <select value={contact} required onChange={(e) => setContact(e.target.value)}>
            <option value="">{w.choose}</option>
            {contacts.data?.contacts.map((c) => (
              <option key={c.id} value={c.id}>
                {contactLabel(c)}
              </option>
            ))}
          </select>
        </Field>
        <button type="submit" disabled={start.isPending}>
          {w.start}
        </button>
      </form>
      <ErrorText error={start.error} />
      {start.isSuccess && <p role="status">{w.started}</p>}
    </section>
  )
}

export function Sources({ id }: { id: string }) {
  const w = useWords(words)
  const say = useEnum()
  const { language } = useI18n()
  const { never } = useWords(commonWords)
  const sources = useQuery({
    ...automationSourcesQuery,
    refetchInterval: 3000,
  })
  const mine = (sources.data?.automation_webhooks ?? []).filter((s) => s.automation_id === id)
  return (
    <section>
      <h2>{w.addresses}</h2>
      <ErrorText error={sources.error} />
      {mine.map((s) => (
        <dl className="details" key={`${s.kind}-${s.url}`}>
          {s.url && (
            <>
              <dt>{w.address}</dt>
              <dd>
                <code data-testid="webhook-url">{s.url}</code> <CopyButton text={s.url} label={w.address} />
              </dd>
            </>
          )}
          <dt>{w.state}</dt>
          <dd data-testid="webhook-state">{say('sourceState', s.state)}</dd>
          <dt>{w.events}</dt>
          <dd data-testid="webhook-events">{s.event_count}</dd>
          <dt>{w.firstEvent}</dt>
          <dd>{formatTime(s.first_event_at, language, never)}</dd>
          <dt>{w.lastEvent}</dt>
          <dd>{formatTime(s.last_event_at, language, never)}</dd>
          <dt>{w.lastError}</dt>
          <dd>{s.last_error ?? '–'}</dd>
        </dl>
      ))}
    </section>
  )
}
