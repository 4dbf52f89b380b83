import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { Link } from '@tanstack/react-router'
import { useEffect, useRef, useState } from 'react'
import { app, call, v1 } from '../../api/client.ts'
import { Field, formatTime, handleSubmit } from '../../ui/components.tsx'
import { contactLabel } from '../../ui/contact.tsx'
import { fill, useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import type { SessionShape } from '../../ui/session.ts'
import { AwayBanner } from '../routing/away-banner.tsx'
import { sendableTemplatesQuery } from '../templates/queries.ts'
import { usePolling } from './live.ts'
import { ComposerSwitch, MentionsEntry, NoteComposer, NoteItem, type ThreadItem, threadQuery } from './notes.tsx'
import { conversationsQuery, messagesKey } from './queries.ts'
import { type AttachedFile, AttachedNotice, MessageFile, useSavedReplyPicker } from './saved-replies.tsx'
import { ConversationActions, conversationQuery } from './snooze.tsx'
import { EmptyView, inboxViewQuery, useInboxView, ViewTabs } from './views.tsx'
import { errors, words } from './words.ts'

// The inbox: conversations (newest activity first) and one conversation's thread, with a free-text reply while the
// customer's 24-hour window is open and an approved template (with its variables) at any time.

const DAY_MS = 24 * 60 * 60 * 1000

export function InboxPage({ id, session }: { id?: string; session: SessionShape }) {
  const w = useWords(words)
  const say = useEnum()
  const { language } = useI18n()
  const [hideAutomated, setHideAutomated] = useState(false)
  const views = useInboxView()
  const polling = usePolling(5000)
  const list = useQuery({ ...inboxViewQuery(views.view, views.q), refetchInterval: polling })
  const all = list.data?.conversations ?? []
  const shown = all.filter((c) => !hideAutomated || !c.automated_only)
  // the open conversation, also when the view no longer lists it (snoozed, closed, assigned away)
  const listed = all.find((c) => c.id === id)
  const single = useQuery({ ...conversationQuery(id ?? ''), enabled: id !== undefined && !listed })
  const current = listed ?? single.data?.conversation
  return (
    <main className="inbox" data-open={id ? 'thread' : 'list'}>
      <section className="inbox-list" aria-labelledby="conversations-title">
        <div className="inbox-head">
          <h1>{w.title}</h1>
          {(list.data?.unread_count ?? 0) > 0 && (
            <span className="badge count">{fill(w.unread, { count: String(list.data?.unread_count) })}</span>
          )}
        </div>
        <AwayBanner />
        <MentionsEntry />
        <ViewTabs
          view={views.view}
          onView={views.setView}
          typed={views.typed}
          onType={views.setTyped}
          refetchInterval={polling}
        />
        <h2 id="conversations-title" className="visually-hidden">
          {w.conversations}
        </h2>
        <label className="check">
          <input type="checkbox" checked={hideAutomated} onChange={(e) => setHideAutomated(e.target.checked)} />
          {w.hideAutomated}
        </label>
        <PageError error={list.error} words={{}} />
        {list.data && shown.length === 0 && (views.view !== 'all' || views.q) && <EmptyView q={views.q} />}
        {list.data && shown.length === 0 && views.view === 'all' && !views.q && (
          <div className="empty">
            <p>{w.none}</p>
            <p>
              <Link to="/settings">{w.noneLink}</Link>
            </p>
          </div>
        )}
        {shown.length > 0 && (
          <ul className="conversations">
            {shown.map((c) => (
              <li key={c.id} className={c.unread_count > 0 ? 'unread' : undefined}>
                <Link to="/inbox/$id" params={{ id: c.id }}>
                  <span className="who">{contactLabel(c.contact) || w.unknownContact}</span>
                  <span className="when">{shortTime(c.last_message.at, language)}</span>
                  <span className="last">
                    {c.last_message.direction === 'outbound' && w.you}
                    {c.last_message.preview}
                  </span>
                  <span className="marks">
                    {c.channel !== 'chat' && <span className="badge">{say('channel', c.channel)}</span>}
                    {c.automated_only && <span className="badge">{w.automatedOnly}</span>}
                    {c.needs_person && <span className="badge attention">{w.needsPerson}</span>}
                    {c.unread_count > 0 && (
                      <span className="badge count">{fill(w.unread, { count: String(c.unread_count) })}</span>
                    )}
                  </span>
                </Link>
              </li>
            ))}
          </ul>
        )}
      </section>
      <section className="inbox-thread conversation" aria-labelledby="thread-title">
        {id ? (
          <Thread
            key={id}
            id={id}
            session={session}
            title={current ? contactLabel(current.contact) || w.unknownContact : w.thread}
            contactId={current?.contact_id}
            unread={current?.unread_count ?? 0}
          />
        ) : (
          <>
            <h2 id="thread-title">{w.thread}</h2>
            <p>{w.choose}</p>
          </>
        )}
      </section>
    </main>
  )
}

/** Today's time as 14:05, an older day as its date. */
function shortTime(iso: string, language: string): string {
  const at = new Date(iso)
  const locale = language === 'de' ? 'de-DE' : 'en-GB'
  const today = new Date().toDateString() === at.toDateString()
  return new Intl.DateTimeFormat(locale, today ? { timeStyle: 'short' } : { dateStyle: 'short' }).format(at)
}

function Thread({
  id,
  session,
  title,
  contactId: knownContact,
  unread,
}: {
  id: string
  session: SessionShape
  title: string
  contactId: string | undefined
  unread: number
}) {
  const w = useWords(words)
  const e = useWords(errors)
  const { language } = useI18n()
  const queryClient = useQueryClient()
  const [limit, setLimit] = useState(50)
  const messages = useQuery({
    ...threadQuery(id, limit),
    refetchInterval: usePolling(3000),
  })
  // the thread holds the team's internal notes too (notes.tsx)
  const items = messages.data?.items ?? []
  const list = items.filter((m): m is Extract<ThreadItem, { kind: 'message' }> => m.kind === 'message')
  const [mode, setMode] = useState<'reply' | 'note'>('reply')
  const contactId = knownContact ?? list[0]?.contact_id
  const lastInbound = [...list].reverse().find((m) => m.direction === 'inbound')
  const windowEnd = lastInbound ? new Date(new Date(lastInbound.created_at).getTime() + DAY_MS) : null
  const open = windowEnd !== null && windowEnd.getTime() > Date.now()
  const canWrite = session.scopes.includes('messages:write')
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: messagesKey(id) })
    void queryClient.invalidateQueries({ queryKey: conversationsQuery.queryKey })
  }
  // reading the thread reads its messages: the unread count goes to 0 (a member who may only read leaves it)
  const markRead = useMutation({
    mutationFn: () => call(app.POST('/app/conversations/{id}/read', { params: { path: { id } } })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: conversationsQuery.queryKey }),
  })
  const { mutate: markAsRead } = markRead
  // on opening, and whenever the customer writes while the thread is open
  const newestInbound = lastInbound?.id
  useEffect(() => {
    if (canWrite && (unread > 0 || newestInbound)) markAsRead()
  }, [canWrite, unread, newestInbound, markAsRead])
  // the newest message in view, as a chat shows it
  const newest = useRef<HTMLLIElement>(null)
  const lastId = items.at(-1)?.id
  useEffect(() => {
    if (lastId) newest.current?.scrollIntoView({ block: 'end' })
  }, [lastId])
  return (
    <>
      <div className="conversation-head">
        <Link to="/inbox" className="back button" aria-label={w.back}>
          ←
        </Link>
        <h2 id="thread-title">
          {contactId ? (
            <Link to="/contacts/$id" params={{ id: contactId }}>
              {title}
            </Link>
          ) : (
            title
          )}
        </h2>
      </div>
      <ConversationActions id={id} session={session} />
      <PageError error={messages.error} words={e} />
      {messages.data?.has_more && (
        <button type="button" className="secondary" onClick={() => setLimit((n) => Math.min(200, n + 50))}>
          {w.older}
        </button>
      )}
      <ol className="thread" aria-label={w.thread}>
        {items.map((m, i) =>
          m.kind === 'note' ? (
            <NoteItem key={m.id} note={m} last={i === items.length - 1 ? newest : undefined} />
          ) : (
            <li key={m.id} className={m.direction} ref={i === items.length - 1 ? newest : undefined}>
              <span className="muted">
                {m.direction === 'inbound' ? w.inbound : w.outbound} · {formatTime(m.created_at, language, '')}
                {m.automated && ` · ${w.automated}`}
                {m.ai && ` · ${w.ai}`}
                {m.template && ` · ${w.template} ${m.template.name}`}
                {m.status && ` · ${w[`status_${m.status}`]}`}
              </span>
              {m.media_url && <MessageFile url={m.media_url} mime={m.media_mime} type={m.type} />}
              {(m.text || !m.media_url) && <p>{m.text || `[${m.type}]`}</p>}
            </li>
          ),
        )}
      </ol>
      <div className="composer">
        {messages.data && (
          <p role="status" data-testid="window" className="muted">
            {windowEnd === null
              ? w.windowNever
              : (open ? w.windowOpen : w.windowClosed).replace(
                  '{time}',
                  formatTime(windowEnd.toISOString(), language, ''),
                )}
          </p>
        )}
        {!canWrite && <p>{w.readOnly}</p>}
        {canWrite && <ComposerSwitch mode={mode} onChange={setMode} />}
        {canWrite && mode === 'note' && <NoteComposer conversationId={id} onSaved={refresh} />}
        {canWrite && mode === 'reply' && contactId && open && <Reply contactId={contactId} onSent={refresh} />}
        {canWrite && mode === 'reply' && contactId && messages.data && !open && (
          <TemplateSend contactId={contactId} onSent={refresh} />
        )}
        {canWrite && mode === 'reply' && contactId && open && (
          <details>
            <summary>{w.useTemplate}</summary>
            <TemplateSend contactId={contactId} onSent={refresh} />
          </details>
        )}
      </div>
    </>
  )
}

function Reply({ contactId, onSent }: { contactId: string; onSent: () => void }) {
  const w = useWords(words)
  const e = useWords(errors)
  const [text, setText] = useState('')
  // typing / at the start opens the saved replies (saved-replies.tsx); a picked reply's file goes with the text
  const [file, setFile] = useState<AttachedFile | null>(null)
  const picker = useSavedReplyPicker({
    text,
    contactId,
    onInsert: (inserted, attached) => {
      setText(inserted)
      setFile(attached)
    },
  })
  const send = useMutation({
    mutationFn: async (): Promise<void> => {
      if (file) {
        await call(
          app.POST('/app/saved-replies/{id}/send', {
            params: { path: { id: file.savedReplyId } },
            body: { contact_id: contactId, text },
          }),
        )
      } else {
        await call(v1.POST('/v1/messages', { body: { contact_id: contactId, text } }))
      }
    },
    onSuccess: () => {
      setText('')
      setFile(null)
      onSent()
    },
  })
  return (
    <form onSubmit={handleSubmit(() => send.mutate())}>
      {picker.list}
      {file && <AttachedNotice file={file} onRemove={() => setFile(null)} />}
      <div className="reply">
        <Field label={w.reply}>
          <textarea
            required
            maxLength={file ? 1024 : 4000}
            rows={2}
            value={text}
            onChange={(event) => setText(event.target.value)}
            onKeyDown={picker.keys}
          />
        </Field>
        <button type="submit" disabled={send.isPending || text.trim() === ''}>
          {w.send}
        </button>
      </div>
      <PageError error={send.error} words={e} />
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
