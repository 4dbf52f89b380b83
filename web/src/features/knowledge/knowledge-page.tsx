import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { call, v1 } from '../../api/client.ts'
import { ErrorText, formatTime, TextField } from '../../ui/components.tsx'
import { useDebounced } from '../../ui/hooks.ts'
import { fill, useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import { commonWords } from '../../ui/words.ts'
import { DropZone, UrlForm } from '../media/upload.tsx'
import { AiSettings } from './ai-settings.tsx'
import {
  type DocumentItem,
  knowledgeDocumentsQuery,
  knowledgeSearchKey,
  knowledgeSearchQuery,
  passagesQuery,
} from './queries.ts'
import { words } from './words.ts'

/** `**bold**` in a search snippet as real emphasis, never as HTML. */
function Snippet({ text }: { text: string }) {
  const parts = text.split('**')
  return (
    <>
      {parts.map((part, i) =>
        // the parts of one snippet never move
        // biome-ignore lint/suspicious/noArrayIndexKey: see above
        i % 2 === 1 ? <mark key={i}>{part}</mark> : <span key={i}>{part}</span>,
      )}
    </>
  )
}

function Passages({ id, name }: { id: string; name: string }) {
  const w = useWords(words)
  const [limit, setLimit] = useState(50)
  const passages = useQuery({
    ...passagesQuery(id, limit),
    placeholderData: keepPreviousData,
  })
  return (
    <section className="passages" aria-label={`${w.passages}: ${name}`}>
      <ErrorText error={passages.error} />
      <ol>
        {passages.data?.passages.map((p) => (
          <li key={p.position} data-testid="passage">
            {p.heading && <strong>{p.heading}</strong>}
            {p.page ? <small> ({fill(w.page, { n: String(p.page) })})</small> : null}
            <p>{p.text}</p>
          </li>
        ))}
      </ol>
      {passages.data?.has_more && (
        <button type="button" onClick={() => setLimit((n) => Math.min(200, n + 50))} disabled={limit >= 200}>
          {w.more}
        </button>
      )}
    </section>
  )
}

function Search({ label, testId, limit = 10 }: { label: string; testId: string; limit?: number }) {
  const w = useWords(words)
  const [q, setQ] = useState('')
  const search = useDebounced(q.trim(), 250)
  const hits = useQuery({
    ...knowledgeSearchQuery(search, limit),
    enabled: search !== '',
    placeholderData: keepPreviousData,
  })
  return (
    <>
      <TextField label={label} type="search" value={q} maxLength={500} onChange={setQ} />
      <ErrorText error={hits.error} />
      {search !== '' && hits.data && (
        <div aria-live="polite" data-testid={testId}>
          {hits.data.results.length === 0 ? (
            <p>{w.noHits}</p>
          ) : (
            <>
              <p>{hits.data.match === 'all' ? w.matchAll : w.matchAny}</p>
              <ol>
                {hits.data.results.map((hit) => (
                  <li key={`${hit.document.id}-${hit.position}`}>
                    <strong>{hit.document.title}</strong>
                    {hit.heading ? ` · ${hit.heading}` : ''}
                    {hit.page ? ` · ${fill(w.page, { n: String(hit.page) })}` : ''}
                    <p>
                      <Snippet text={hit.snippet} />
                    </p>
                  </li>
                ))}
              </ol>
            </>
          )}
        </div>
      )}
    </>
  )
}

export function KnowledgePage() {
  const w = useWords(words)
  const say = useEnum()
  const { language } = useI18n()
  const { never } = useWords(commonWords)
  const queryClient = useQueryClient()
  const [open, setOpen] = useState<string | null>(null)
  const documents = useQuery(knowledgeDocumentsQuery)
  const done = () => {
    void queryClient.invalidateQueries({ queryKey: knowledgeDocumentsQuery.queryKey })
    void queryClient.invalidateQueries({ queryKey: knowledgeSearchKey })
  }
  const upload = useMutation({
    mutationFn: async (file: File) => {
      const form = new FormData()
      form.append('file', file, file.name)
      return call(v1.POST('/v1/knowledge/documents', { body: form as never }))
    },
    onSuccess: done,
  })
  const fromUrl = useMutation({
    mutationFn: (url: string) => call(v1.POST('/v1/knowledge/documents', { body: { url } })),
    onSuccess: done,
  })
  const remove = useMutation({
    mutationFn: (id: string) => call(v1.DELETE('/v1/knowledge/documents/{id}', { params: { path: { id } } })),
    onSuccess: done,
  })
  const items = documents.data?.documents ?? []
  const last = (upload.data ?? fromUrl.data) as { document: DocumentItem } | undefined
  return (
    <main>
      <h1>{w.knowledge}</h1>
      <section>
        <h2>{w.upload}</h2>
        <DropZone onFile={(f) => upload.mutate(f)} busy={upload.isPending} />
        <h3>{w.byUrl}</h3>
        <UrlForm onUrl={(u) => fromUrl.mutate(u)} busy={fromUrl.isPending} />
        <ErrorText error={upload.error ?? fromUrl.error} />
        {last && (upload.isSuccess || fromUrl.isSuccess) && (
          <p role="status">{fill(w.uploaded, { name: last.document.filename })}</p>
        )}
      </section>
      <section>
        <h2>{w.search}</h2>
        <Search label={w.search} testId="knowledge-hits" />
      </section>
      <section>
        <h2>{w.documents}</h2>
        <ErrorText error={documents.error ?? remove.error} />
        {documents.data && items.length === 0 && <p className="empty">{w.none}</p>}
        <ul className="documents">
          {items.map((d) => (
            <li key={d.id} data-testid="document">
              <strong>{d.title}</strong> <small>({d.filename})</small>
              <p>
                {w.format}: {say('documentFormat', d.format)} · {w.passages}: {d.passages} · {w.created}:{' '}
                {formatTime(d.created_at, language, never)}
              </p>
              <button type="button" aria-expanded={open === d.id} onClick={() => setOpen(open === d.id ? null : d.id)}>
                {fill(open === d.id ? w.hidePassages : w.showPassages, { name: d.title })}
              </button>{' '}
              <button
                type="button"
                onClick={() => {
                  if (window.confirm(w.confirmRemove)) remove.mutate(d.id)
                }}
              >
                {fill(w.remove, { name: d.title })}
              </button>
              {open === d.id && <Passages id={d.id} name={d.title} />}
            </li>
          ))}
        </ul>
      </section>
      <AiSettings />
    </main>
  )
}
