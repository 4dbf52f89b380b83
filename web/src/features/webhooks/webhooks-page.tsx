import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { call, v1 } from '../../api/client.ts'
import { formatTime, handleSubmit, TextField } from '../../ui/components.tsx'
import { fill, useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import type { SessionShape } from '../../ui/session.ts'
import { Table } from '../../ui/table.tsx'
import { deliveriesQuery, webhooksQuery } from './queries.ts'
import { errors, words } from './words.ts'

// Webhook subscriptions: create (the signing secret shown once), the deliveries log, enable again, rotate the secret.

const EVENTS = ['contact.created', 'message.received', 'conversation.created'] as const

export function WebhooksPage({ session }: { session: SessionShape }) {
  const w = useWords(words)
  const say = useEnum()
  const e = useWords(errors)
  const { language } = useI18n()
  const queryClient = useQueryClient()
  const [url, setUrl] = useState('')
  const [events, setEvents] = useState<string[]>(['message.received'])
  const [secret, setSecret] = useState<{ id: string; value: string } | null>(null)
  const [copied, setCopied] = useState(false)
  const [open, setOpen] = useState<string | null>(null)
  const canWrite = session.scopes.includes('webhooks:write')
  const subscriptions = useQuery(webhooksQuery)
  const refresh = () => queryClient.invalidateQueries({ queryKey: webhooksQuery.queryKey })
  const showSecret = (id: string, value: string) => {
    setSecret({ id, value })
    setCopied(false)
  }
  const create = useMutation({
    mutationFn: () =>
      call(v1.POST('/v1/webhook-subscriptions', { body: { url, events: events as (typeof EVENTS)[number][] } })),
    onSuccess: (result) => {
      showSecret(result.id, result.secret)
      setUrl('')
      void refresh()
    },
  })
  const enable = useMutation({
    mutationFn: (id: string) => call(v1.POST('/v1/webhook-subscriptions/{id}/enable', { params: { path: { id } } })),
    onSuccess: () => refresh(),
  })
  const rotate = useMutation({
    mutationFn: (id: string) =>
      call(v1.POST('/v1/webhook-subscriptions/{id}/rotate-secret', { params: { path: { id } } })),
    onSuccess: (result) => {
      showSecret(result.id, result.secret)
      void refresh()
    },
  })
  const toggle = (event: string) =>
    setEvents((current) => (current.includes(event) ? current.filter((x) => x !== event) : [...current, event]))
  return (
    <main>
      <h1>{w.title}</h1>
      {!canWrite && <p>{w.readOnly}</p>}
      {canWrite && (
        <section aria-labelledby="create-webhook">
          <h2 id="create-webhook">{w.create}</h2>
          <form onSubmit={handleSubmit(() => create.mutate())}>
            <TextField label={w.url} type="url" required maxLength={2048} value={url} onChange={setUrl} />
            <fieldset className="scopes">
              <legend>{w.events}</legend>
              {EVENTS.map((event) => (
                <label key={event} className="check">
                  <input type="checkbox" checked={events.includes(event)} onChange={() => toggle(event)} />
                  {say('webhookEvent', event)} <code>{event}</code>
                </label>
              ))}
            </fieldset>
            <PageError error={create.error} words={e} />
            <button type="submit" disabled={create.isPending || events.length === 0}>
              {w.create}
            </button>
          </form>
        </section>
      )}
      {secret && (
        <div className="secret" role="status">
          <p>{w.secretOnce}</p>
          <output data-testid="webhook-secret">{secret.value}</output>{' '}
          <button
            type="button"
            onClick={() => {
              void navigator.clipboard?.writeText(secret.value).then(() => setCopied(true))
            }}
          >
            {copied ? w.copied : w.copy}
          </button>
        </div>
      )}
      <PageError error={subscriptions.error} words={e} />
      <PageError error={enable.error ?? rotate.error} words={e} />
      {subscriptions.data && subscriptions.data.webhook_subscriptions.length === 0 && <p className="empty">{w.none}</p>}
      {subscriptions.data?.webhook_subscriptions.map((s) => (
        <article key={s.id} className="chart" aria-labelledby={`webhook-${s.id}`}>
          <h2 id={`webhook-${s.id}`}>
            <code>{s.url}</code>
          </h2>
          <dl className="details">
            <dt>{w.events}</dt>
            <dd>{s.events.map((event) => say('webhookEvent', event)).join(', ')}</dd>
            <dt>{w.status}</dt>
            <dd>
              {s.status === 'enabled' ? w.enabled : w.disabled}
              {s.disabled_reason &&
                ` (${say('webhookDisabledReason', s.disabled_reason)}, ${formatTime(s.disabled_at, language, '')})`}
            </dd>
            <dt>{w.failures}</dt>
            <dd>{s.consecutive_failures}</dd>
            <dt>{w.created}</dt>
            <dd>{formatTime(s.created_at, language, '')}</dd>
          </dl>
          <div className="inline">
            <button
              type="button"
              className="secondary"
              aria-expanded={open === s.id}
              onClick={() => setOpen(open === s.id ? null : s.id)}
            >
              {open === s.id ? w.hideDeliveries : w.deliveries}
            </button>
            {canWrite && s.status === 'disabled' && (
              <button type="button" onClick={() => enable.mutate(s.id)} disabled={enable.isPending}>
                {w.enable}
              </button>
            )}
            {canWrite && (
              <button
                type="button"
                className="secondary"
                onClick={() => rotate.mutate(s.id)}
                disabled={rotate.isPending}
              >
                {w.rotate}
              </button>
            )}
          </div>
          {open === s.id && <Deliveries id={s.id} />}
        </article>
      ))}
    </main>
  )
}

function Deliveries({ id }: { id: string }) {
  const w = useWords(words)
  const say = useEnum()
  const { language } = useI18n()
  const deliveries = useQuery({
    ...deliveriesQuery(id),
    refetchInterval: 5000,
  })
  return (
    <>
      <PageError error={deliveries.error} words={{}} />
      {deliveries.data && deliveries.data.deliveries.length === 0 && <p>{w.noDeliveries}</p>}
      {deliveries.data && deliveries.data.deliveries.length > 0 && (
        <Table
          caption={w.deliveries}
          rows={deliveries.data.deliveries}
          rowKey={(d) => d.id}
          columns={[
            [w.attempted, (d) => formatTime(d.attempted_at, language, '')],
            [w.event, (d) => say('webhookEvent', d.event)],
            [w.attempt, (d) => d.attempt],
            [
              w.result,
              (d) => (
                <>
                  {d.succeeded ? w.ok : w.failed}
                  {d.status_code !== null && ` (HTTP ${d.status_code})`}
                  {d.error && ` ${say('deliveryError', d.error)}`}
                  {d.next_attempt_at && ` · ${fill(w.next, { time: formatTime(d.next_attempt_at, language, '') })}`}
                </>
              ),
            ],
            [w.duration, (d) => `${d.duration_ms} ms`],
          ]}
        />
      )}
    </>
  )
}
