import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { Link } from '@tanstack/react-router'
import { useRef, useState } from 'react'
import { app, call } from '../../api/client.ts'
import { Field, formatTime, handleSubmit } from '../../ui/components.tsx'
import { fill, useI18n, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import { type Answer, apiQuery } from '../../ui/query.ts'
import { availabilityQuery } from '../routing/queries.ts'
import { usePolling } from './live.ts'
import { noteErrors, noteWords } from './notes-words.ts'

// The inbox's internal notes: a note in the thread (visibly not a message, with its author), the note composer
// beside the reply box ("Reply | Note", @ suggests members), and the signed-in member's mentions with their unread
// count. A `note` change on the live stream refetches the thread and the mentions (live.ts).

/** A conversation's thread for the console: messages and notes by time (GET /app/conversations/{id}/messages). */
export const threadQuery = (id: string, limit: number) =>
  apiQuery(['messages', id, limit], () =>
    app.GET('/app/conversations/{id}/messages', { params: { path: { id }, query: { limit, offset: 0 } } }),
  )

export type ThreadItem = Answer<ReturnType<typeof threadQuery>>['items'][number]
export type ThreadNote = Extract<ThreadItem, { kind: 'note' }>

/** The signed-in member's newest mentions and their unread count. */
export const mentionsQuery = apiQuery(['mentions'], () =>
  app.GET('/app/mentions', { params: { query: { limit: 20 } } }),
)

/** A note in the thread: set apart from the messages, with who wrote it and when. */
export function NoteItem({ note, last }: { note: ThreadNote; last?: React.Ref<HTMLLIElement> }) {
  const w = useWords(noteWords)
  const { language } = useI18n()
  return (
    <li className="internal-note" data-kind="note" ref={last}>
      <span className="muted">
        {w.internal} · {fill(w.by, { name: note.author?.name || w.someone })} ·{' '}
        {formatTime(note.created_at, language, '')}
      </span>
      <p>{note.body}</p>
    </li>
  )
}

/** The switch between the reply box and the note composer. */
export function ComposerSwitch({
  mode,
  onChange,
}: {
  mode: 'reply' | 'note'
  onChange: (mode: 'reply' | 'note') => void
}) {
  const w = useWords(noteWords)
  return (
    <fieldset className="composer-switch" aria-label={w.modes}>
      <button type="button" className="secondary" aria-pressed={mode === 'reply'} onClick={() => onChange('reply')}>
        {w.replyMode}
      </button>
      <button type="button" className="secondary" aria-pressed={mode === 'note'} onClick={() => onChange('note')}>
        {w.noteMode}
      </button>
    </fieldset>
  )
}

/** the `@word` being typed just before the cursor */
const TYPING_MENTION = /(^|[^\p{L}\p{N}_.+-])@([^\s@]*)$/u

/** Writes an internal note; `@` offers the team's members (those who take conversations). */
export function NoteComposer({ conversationId, onSaved }: { conversationId: string; onSaved: () => void }) {
  const w = useWords(noteWords)
  const e = useWords(noteErrors)
  const [text, setText] = useState('')
  const [cursor, setCursor] = useState(0)
  const area = useRef<HTMLTextAreaElement>(null)
  const members = useQuery(availabilityQuery)
  const save = useMutation({
    mutationFn: () =>
      call(
        app.POST('/app/conversations/{id}/notes', { params: { path: { id: conversationId } }, body: { body: text } }),
      ),
    onSuccess: () => {
      setText('')
      onSaved()
    },
  })
  const typing = text.slice(0, cursor).match(TYPING_MENTION)
  const word = typing?.[2].toLocaleLowerCase() ?? null
  const suggestions =
    word === null
      ? []
      : (members.data?.members ?? [])
          .filter((m) => m.name.toLocaleLowerCase().includes(word) || m.email.toLocaleLowerCase().startsWith(word))
          .slice(0, 6)
  const choose = (member: { name: string; email: string }) => {
    const handle = member.name.trim() || member.email.split('@')[0]
    const before = text.slice(0, cursor).replace(/@[^\s@]*$/u, `@${handle} `)
    const next = before + text.slice(cursor)
    setText(next)
    setCursor(before.length)
    area.current?.focus()
  }
  const track = (target: HTMLTextAreaElement) => setCursor(target.selectionStart ?? target.value.length)
  return (
    <form className="note-composer" onSubmit={handleSubmit(() => save.mutate())}>
      <div className="reply">
        <Field label={w.note}>
          <textarea
            ref={area}
            required
            maxLength={4000}
            rows={2}
            value={text}
            aria-describedby="note-hint"
            onChange={(event) => {
              setText(event.target.value)
              track(event.target)
            }}
            onSelect={(event) => track(event.currentTarget)}
          />
        </Field>
        <button type="submit" disabled={save.isPending || text.trim() === ''}>
          {w.saveNote}
        </button>
      </div>
      {suggestions.length > 0 && (
        <ul className="mention-suggestions" aria-label={w.suggestions}>
          {suggestions.map((m) => (
            <li key={m.member_id}>
              <button type="button" className="secondary" onClick={() => choose(m)}>
                {m.name || m.email} <span className="muted">{m.email}</span>
              </button>
            </li>
          ))}
        </ul>
      )}
      <p id="note-hint" className="muted">
        {w.noteHint}
      </p>
      <PageError error={save.error} words={e} />
    </form>
  )
}

/** The member's mentions: the unread count, and the list (a mention opened is marked read). */
export function MentionsEntry() {
  const w = useWords(noteWords)
  const { language } = useI18n()
  const queryClient = useQueryClient()
  const mentions = useQuery({ ...mentionsQuery, refetchInterval: usePolling(10_000) })
  const read = useMutation({
    mutationFn: (noteIds?: string[]) =>
      call(app.POST('/app/mentions/read', { body: noteIds ? { note_ids: noteIds } : {} })),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: mentionsQuery.queryKey }),
  })
  const unread = mentions.data?.unread_count ?? 0
  const list = mentions.data?.mentions ?? []
  return (
    <details className="mentions">
      <summary>
        {w.mentions}
        {unread > 0 && (
          <span className="badge count" data-testid="mentions-unread">
            {fill(w.mentionsUnread, { count: String(unread) })}
          </span>
        )}
      </summary>
      <PageError error={mentions.error ?? read.error} words={{}} />
      {mentions.data && list.length === 0 && <p className="muted">{w.noMentions}</p>}
      {list.length > 0 && (
        <>
          <ul className="mention-list">
            {list.map((m) => (
              <li key={m.note_id} className={m.read ? undefined : 'unread'}>
                <Link
                  to="/inbox/$id"
                  params={{ id: m.conversation_id }}
                  onClick={() => {
                    if (!m.read) read.mutate([m.note_id])
                  }}
                >
                  <span className="muted">
                    {fill(w.by, { name: m.author?.name || w.someone })}{' '}
                    {fill(w.inConversation, { name: m.contact.name || w.unknownContact })} ·{' '}
                    {formatTime(m.created_at, language, '')}
                    {!m.read && ` · ${w.unreadMark}`}
                  </span>
                  <span className="excerpt">{m.excerpt}</span>
                </Link>
              </li>
            ))}
          </ul>
          {unread > 0 && (
            <button
              type="button"
              className="secondary"
              disabled={read.isPending}
              onClick={() => read.mutate(undefined)}
            >
              {w.markAllRead}
            </button>
          )}
        </>
      )}
    </details>
  )
}
