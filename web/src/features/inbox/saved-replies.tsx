import { useQuery } from '@tanstack/react-query'
import { type KeyboardEvent, type ReactNode, useState } from 'react'
import { app, call } from '../../api/client.ts'
import { fill, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import { type SavedReplyItem, savedRepliesQuery } from '../replies/queries.ts'
import { pickerWords } from '../replies/words.ts'

// The reply box's saved replies: typing / at the start opens a list of the account's saved replies, filtered by what
// follows the slash (code or title); Enter or a click inserts the reply rendered for the conversation's contact, and
// its media file is attached to the reply (sent with the text as caption). A variable the contact has no value for is
// shown, named, and nothing is inserted.

/** What follows the slash while the box holds only `/word`; null when the picker is closed. */
export function slashQuery(text: string): string | null {
  const match = /^\/([^\s/]*)$/.exec(text)
  return match ? match[1].toLowerCase() : null
}

export function matching(replies: readonly SavedReplyItem[], query: string): SavedReplyItem[] {
  return replies.filter((r) => r.code.includes(query) || r.title.toLowerCase().includes(query)).slice(0, 8)
}

/** A picked saved reply's file, attached to the reply box: sent with its text (POST /app/saved-replies/{id}/send). */
export interface AttachedFile {
  savedReplyId: string
  media: NonNullable<SavedReplyItem['media']>
}

/**
 * The picker for a reply box: `keys` goes on the textarea's onKeyDown (arrows, Enter, Escape while open), `list` is
 * rendered under it. `onInsert` receives the rendered text and the reply's file (null when it has none).
 */
export function useSavedReplyPicker({
  text,
  contactId,
  onInsert,
}: {
  text: string
  contactId: string
  onInsert: (text: string, file: AttachedFile | null) => void
}): { keys: (event: KeyboardEvent) => void; list: ReactNode } {
  const w = useWords(pickerWords)
  const query = slashQuery(text)
  const [active, setActive] = useState(0)
  const [closedFor, setClosedFor] = useState<string | null>(null)
  const [problem, setProblem] = useState<{ missing?: string[]; error?: unknown } | null>(null)
  const replies = useQuery({ ...savedRepliesQuery, enabled: query !== null })
  const open = query !== null && closedFor !== text
  const found = open ? matching(replies.data?.saved_replies ?? [], query) : []
  const at = Math.min(active, Math.max(found.length - 1, 0))

  async function pick(reply: SavedReplyItem) {
    setProblem(null)
    const result = await app.POST('/app/saved-replies/{id}/render', {
      params: { path: { id: reply.id } },
      body: { contact_id: contactId },
    })
    const refusal = result.error as { error?: { code?: string; variables?: Array<{ name: string }> } } | undefined
    if (result.response.status === 422 && refusal?.error?.code === 'invalid_variables') {
      setProblem({ missing: (refusal.error.variables ?? []).map((v) => v.name) })
      return
    }
    try {
      const rendered = await call(Promise.resolve(result))
      setActive(0)
      onInsert(rendered.text, rendered.media ? { savedReplyId: reply.id, media: rendered.media } : null)
    } catch (error) {
      setProblem({ error })
    }
  }

  function keys(event: KeyboardEvent) {
    if (!open || found.length === 0) return
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault()
      const step = event.key === 'ArrowDown' ? 1 : -1
      setActive((at + step + found.length) % found.length)
    } else if (event.key === 'Enter') {
      event.preventDefault()
      void pick(found[at])
    } else if (event.key === 'Escape') {
      event.preventDefault()
      setClosedFor(text)
    }
  }

  const notice = problem?.missing ? (
    <p className="error" role="alert" data-testid="saved-reply-missing">
      {fill(w.missing, { names: problem.missing.join(', ') })}
    </p>
  ) : problem?.error ? (
    <PageError error={problem.error} words={{}} />
  ) : null
  const list = (
    <>
      {open && (
        <div className="reply-picker">
          <PageError error={replies.error} words={{}} />
          {replies.data && found.length === 0 && <p className="muted">{w.none}</p>}
          {found.length > 0 && (
            <ul aria-label={w.label} data-testid="saved-reply-options">
              {found.map((r, i) => (
                <li key={r.id}>
                  <button
                    type="button"
                    aria-current={i === at ? 'true' : undefined}
                    onMouseDown={(event) => event.preventDefault()}
                    onClick={() => void pick(r)}
                  >
                    <code>/{r.code}</code> {r.title}
                    <span className="muted">{r.text}</span>
                  </button>
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {notice}
    </>
  )
  return { keys, list }
}

/** The file a picked saved reply sends with the text, with a button that takes it off the reply. */
export function AttachedNotice({ file, onRemove }: { file: AttachedFile; onRemove: () => void }) {
  const w = useWords(pickerWords)
  return (
    <p className="muted" role="status" data-testid="saved-reply-file">
      {fill(w.attached, { name: file.media.filename ?? file.media.kind })}{' '}
      <button type="button" className="link" onClick={onRemove}>
        {w.detach}
      </button>
    </p>
  )
}

/** A message's file in the thread: a picture shown small, any other file as a link to it. */
export function MessageFile({ url, mime, type }: { url: string; mime: string; type: string }) {
  return mime.startsWith('image/') ? (
    <a href={url} target="_blank" rel="noreferrer">
      <img className="message-image" src={url} alt={`[${type}]`} />
    </a>
  ) : (
    <p>
      <a href={url} target="_blank" rel="noreferrer">{`[${type}]`}</a>
    </p>
  )
}
