import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { app, call } from '../../api/client.ts'
import { Field, handleSubmit, TextField } from '../../ui/components.tsx'
import { fill, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import { mediaQuery } from '../media/queries.ts'
import { type SavedReplyItem, savedRepliesQuery } from './queries.ts'
import { errors, words } from './words.ts'

// Saved replies in the settings: the account's list, a form to add one or change one, and deleting. The reply box
// inserts them by typing / (web/src/features/inbox/saved-replies.tsx).

interface Draft {
  code: string
  title: string
  text: string
  mediaId: string
}

const EMPTY: Draft = { code: '', title: '', text: '', mediaId: '' }

export function SavedRepliesSettings({ canWrite }: { canWrite: boolean }) {
  const w = useWords(words)
  const e = useWords(errors)
  const queryClient = useQueryClient()
  const replies = useQuery(savedRepliesQuery)
  const [editing, setEditing] = useState<SavedReplyItem | null>(null)
  const refresh = () => queryClient.invalidateQueries({ queryKey: savedRepliesQuery.queryKey })
  const remove = useMutation({
    mutationFn: (id: string) => call(app.DELETE('/app/saved-replies/{id}', { params: { path: { id } } })),
    onSuccess: () => void refresh(),
  })
  const list = replies.data?.saved_replies ?? []
  return (
    <section aria-labelledby="saved-replies-title">
      <h2 id="saved-replies-title">{w.title}</h2>
      <p className="muted">{w.help}</p>
      <PageError error={replies.error ?? remove.error} words={e} />
      {replies.data && list.length === 0 && <p>{w.empty}</p>}
      {list.length > 0 && (
        <ul className="saved-replies" data-testid="saved-replies">
          {list.map((r) => (
            <li key={r.id} className="saved-reply">
              <p>
                <code>/{r.code}</code> <strong>{r.title}</strong>
                {r.media && <span className="muted"> · {r.media.filename ?? r.media.kind}</span>}
              </p>
              <p className="muted pre-wrap">{r.text}</p>
              {canWrite && (
                <p className="actions">
                  <button type="button" className="secondary" onClick={() => setEditing(r)}>
                    {fill(w.edit, { code: r.code })}
                  </button>
                  <button
                    type="button"
                    className="secondary"
                    disabled={remove.isPending}
                    onClick={() => {
                      if (window.confirm(fill(w.confirmDelete, { code: r.code }))) remove.mutate(r.id)
                    }}
                  >
                    {fill(w.delete, { code: r.code })}
                  </button>
                </p>
              )}
            </li>
          ))}
        </ul>
      )}
      {canWrite && (
        <ReplyForm
          key={editing?.id ?? 'new'}
          editing={editing}
          onDone={() => {
            setEditing(null)
            void refresh()
          }}
        />
      )}
    </section>
  )
}

function ReplyForm({ editing, onDone }: { editing: SavedReplyItem | null; onDone: () => void }) {
  const w = useWords(words)
  const e = useWords(errors)
  const media = useQuery(mediaQuery(''))
  const [draft, setDraft] = useState<Draft>(
    editing
      ? { code: editing.code, title: editing.title, text: editing.text, mediaId: editing.media?.media_id ?? '' }
      : EMPTY,
  )
  const set = (change: Partial<Draft>) => setDraft((d) => ({ ...d, ...change }))
  const save = useMutation({
    mutationFn: () => {
      const body = {
        code: draft.code.trim(),
        title: draft.title.trim(),
        text: draft.text,
        media_id: draft.mediaId === '' ? null : draft.mediaId,
      }
      return editing
        ? call(app.PATCH('/app/saved-replies/{id}', { params: { path: { id: editing.id } }, body }))
        : call(app.POST('/app/saved-replies', { body }))
    },
    onSuccess: () => {
      setDraft(EMPTY)
      onDone()
    },
  })
  const titleId = editing ? 'saved-reply-edit-title' : 'saved-reply-new-title'
  return (
    <form onSubmit={handleSubmit(() => save.mutate())} aria-labelledby={titleId}>
      <h3 id={titleId}>{editing ? fill(w.editTitle, { code: editing.code }) : w.newTitle}</h3>
      <TextField
        label={w.code}
        value={draft.code}
        onChange={(code) => set({ code })}
        required
        maxLength={33}
        pattern="/?[a-z0-9_\-]{1,32}"
        placeholder="/danke"
        autoCapitalize="none"
      />
      <TextField label={w.name} value={draft.title} onChange={(title) => set({ title })} required maxLength={100} />
      <Field label={w.text}>
        <textarea
          required
          maxLength={4096}
          rows={4}
          value={draft.text}
          onChange={(event) => set({ text: event.target.value })}
        />
      </Field>
      <Field label={w.media}>
        <select value={draft.mediaId} onChange={(event) => set({ mediaId: event.target.value })}>
          <option value="">{w.noMedia}</option>
          {(media.data?.media ?? []).map((m) => (
            <option key={m.id} value={m.id}>
              {m.filename ?? m.id} ({m.kind})
            </option>
          ))}
        </select>
      </Field>
      <PageError error={save.error} words={e} />
      <p className="actions">
        <button type="submit" disabled={save.isPending}>
          {editing ? w.save : w.create}
        </button>
        {editing && (
          <button type="button" className="secondary" onClick={onDone}>
            {w.cancel}
          </button>
        )}
      </p>
    </form>
  )
}
