import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { Link } from '@tanstack/react-router'
import { useState } from 'react'
import { call, v1 } from '../../api/client.ts'
import { Field, formatTime, handleSubmit } from '../../ui/components.tsx'
import { fill, useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import type { SessionShape } from '../../ui/session.ts'
import { sendableTemplatesQuery } from '../templates/queries.ts'
import { conversationsQuery, messagesKey, messagesQuery } from './queries.ts'
import { errors, words } from './words.ts'

// The inbox: conversations (newest activity first) and one conversation's thread, with a free-text reply while the
// customer's 24-hour window is open and an approved template (with its variables) at any time.

const DAY_MS = 24 * 60 * 60 * 1000

export function InboxPage({ id, session }: { id?: string; session: SessionShape }) {
  const w = useWords(words)
  const say = useEnum()
  const { language } = useI18n()
  const [hideAutomated, setHideAutomated] = useState(false)
  const list = useQuery({
    ...conversationsQuery,
    refetchInterval: 5000,
  })
  const shown = (list.data?.conversations ?? []).filter((c) => !hideAutomated || !c.automated_only)
  return (
    <main>
      <h1>{w.title}</h1>
      <div className="split">
        <section aria-labelledby="conversations-title">
          <h2 id="conversations-title">{w.conversations}</h2>
          <label className="check">
            <input type="checkbox" checked={hideAutomated} onChange={(e) => setHideAutomated(e.target.checked)} />
            {w.hideAutomated}
          </label>
          <PageError error={list.error} words={{}} />
          {list.data && shown.length === 0 && <p>{w.none}</p>}
          <ul className="conversations">
            {shown.map((c) => (
              <li key={c.id}>
                <Link to="/inbox/$id" params={{ id: c.id }}>
                  <strong>{c.contact.name || c.contact_id.slice(0, 8)}</strong>{' '}
                  <span className="badge">{say('channel', c.channel)}</span>
                  {c.automated_only && <span className="badge"> {w.automatedOnly}</span>}
                  {c.needs_person && <span className="badge"> {w.needsPerson}</span>}
                  {c.unread_count > 0 && (
                    <span className="badge"> {fill(w.unread, { count: String(c.unread_count) })}</span>
                  )}
                  <br />
                  <span className="muted">
                    {c.last_message.preview} · {formatTime(c.last_message.at, language, '')}
                  </span>
                </Link>
              </li>
            ))}
          </ul>
        </section>
        <section aria-labelledby="thread-title">
          <h2 id="thread-title">{w.thread}</h2>
          {id ? <Thread id={id} session={session} /> : <p>{w.choose}</p>}
        </section>
      </div>
    </main>
  )
}

function Thread({ id, session }: { id: string; session: SessionShape }) {
  const w = useWords(words)
  const e = useWords(errors)
  const { language } = useI18n()
  const queryClient = useQueryClient()
  const [limit, setLimit] = useState(50)
  const messages = useQuery({
    ...messagesQuery(id, limit),
    refetchInterval: 3000,
  })
  const list = messages.data?.messages ?? []
  const contactId = list[0]?.contact_id
  const lastInbound = [...list].reverse().find((m) => m.direction === 'inbound')
  const windowEnd = lastInbound ? new Date(new Date(lastInbound.created_at).getTime() + DAY_MS) : null
  const open = windowEnd !== null && windowEnd.getTime() > Date.now()
  const canWrite = session.scopes.includes('messages:write')
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: messagesKey(id) })
    void queryClient.invalidateQueries({ queryKey: conversationsQuery.queryKey })
  }
  return (
    <div>
      <PageError error={messages.error} words={e} />
      {messages.data?.has_more && (
        <button type="button" className="secondary" onClick={() => setLimit((n) => Math.min(200, n + 50))}>
          {w.older}
        </button>
      )}
      <ol className="thread" aria-label={w.thread}>
        {list.map((m) => (
          <li key={m.id} className={m.direction}>
            <span className="muted">
              {m.direction === 'inbound' ? w.inbound : w.outbound} · {formatTime(m.created_at, language, '')}
              {m.automated && ` · ${w.automated}`}
              {m.ai && ` · ${w.ai}`}
              {m.template && ` · ${w.template} ${m.template.name}`}
              {m.status && ` · ${w[`status_${m.status}`]}`}
            </span>
            <p>{m.text || `[${m.type}]`}</p>
          </li>
        ))}
      </ol>
      {messages.data && (
        <p role="status" data-testid="window">
          {windowEnd === null
            ? w.windowNever
            : (open ? w.windowOpen : w.windowClosed).replace(
                '{time}',
                formatTime(windowEnd.toISOString(), language, ''),
              )}
        </p>
      )}
      {!canWrite && <p>{w.readOnly}</p>}
      {canWrite && contactId && open && <Reply contactId={contactId} onSent={refresh} />}
      {canWrite && contactId && <TemplateSend contactId={contactId} onSent={refresh} />}
    </div>
  )
}

function Reply({ contactId, onSent }: { contactId: string; onSent: () => void }) {
  const w = useWords(words)
  const e = useWords(errors)
  const [text, setText] = useState('')
  const send = useMutation({
    mutationFn: () => call(v1.POST('/v1/messages', { body: { contact_id: contactId, text } })),
    onSuccess: () => {
      setText('')
      onSent()
    },
  })
  return (
    <form onSubmit={handleSubmit(() => send.mutate())}>
      <Field label={w.reply}>
        <textarea required maxLength={4000} rows={3} value={text} onChange={(event) => setText(event.target.value)} />
      </Field>
      <PageError error={send.error} words={e} />
      <button type="submit" disabled={send.isPending || text.trim() === ''}>
        {w.send}
      </button>
    </form>
  )
}

function TemplateSend({ contactId, onSent }: { contactId: string; onSent: () => void }) {
  const w = useWords(words)
  const e = useWords(errors)
  const [templateId, setTemplateId] = useState('')
  const [values, setValues] = useState<Record<string, string>>({})
  const templates = useQuery(sendableTemplatesQuery)
  const chosen = templates.data?.templates.find((t) => t.id === templateId)
  const send = useMutation({
    mutationFn: () =>
      call(
        v1.POST('/v1/messages', {
          body: {
            contact_id: contactId,
            template: {
              id: templateId,
              variables: Object.fromEntries(
                (chosen?.settable_variables ?? []).map((name) => [name, values[name] ?? '']),
              ),
            },
          },
        }),
      ),
    onSuccess: () => {
      setValues({})
      onSent()
    },
  })
  const available = templates.data?.templates ?? []
  return (
    <form aria-labelledby="send-template-title" onSubmit={handleSubmit(() => send.mutate())}>
      <h3 id="send-template-title">{w.sendTemplate}</h3>
      <PageError error={templates.error} words={e} />
      {templates.data && available.length === 0 ? (
        <p>{w.noTemplates}</p>
      ) : (
        <>
          <Field label={w.chooseTemplate}>
            <select
              value={templateId}
              onChange={(event) => {
                setTemplateId(event.target.value)
                setValues({})
                send.reset()
              }}
            >
              <option value="">–</option>
              {available.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.name} ({t.language})
                </option>
              ))}
            </select>
          </Field>
          {chosen && <p className="muted">{chosen.content}</p>}
          {chosen?.settable_variables.map((name) => (
            <Field key={name} label={fill(w.variable, { name })}>
              <input
                required
                value={values[name] ?? ''}
                onChange={(event) => setValues((v) => ({ ...v, [name]: event.target.value }))}
              />
            </Field>
          ))}
          <PageError error={send.error} words={e} />
          {send.isSuccess && <p role="status">{w.queued}</p>}
          <button type="submit" disabled={!chosen || send.isPending}>
            {w.sendTemplate}
          </button>
        </>
      )}
    </form>
  )
}
