import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { type ReactNode, useId, useState } from 'react'
import { ApiError, app, call, v1 } from '../../api/client.ts'
import { EnumOptions, ErrorText, Field, formatTime, handleSubmit, TextField } from '../../ui/components.tsx'
import { useDebounced } from '../../ui/hooks.ts'
import { fill, useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import { commonWords } from '../../ui/words.ts'
import {
  aiSettingsQuery,
  type DocumentItem,
  knowledgeDocumentsQuery,
  knowledgeSearchKey,
  knowledgeSearchQuery,
  type MediaItem,
  mediaKey,
  mediaQuery,
  passagesQuery,
} from './queries.ts'
import { words } from './words.ts'

const USAGES = ['generic', 'landing', 'newsletter', 'template', 'logo', 'avatar', 'blog'] as const

/** A drop zone with a file input beside it (the keyboard's way in). */
function DropZone({ onFile, busy, accept }: { onFile: (file: File) => void; busy: boolean; accept?: string }) {
  const w = useWords(words)
  const [over, setOver] = useState(false)
  const id = useId()
  return (
    // dragging is the mouse's way in; the file input inside is the keyboard's
    // biome-ignore lint/a11y/noStaticElementInteractions: see above
    <div
      className={over ? 'dropzone over' : 'dropzone'}
      data-testid="dropzone"
      onDragOver={(e) => {
        e.preventDefault()
        setOver(true)
      }}
      onDragLeave={() => setOver(false)}
      onDrop={(e) => {
        e.preventDefault()
        setOver(false)
        const file = e.dataTransfer.files[0]
        if (file) onFile(file)
      }}
    >
      <p>{w.drop}</p>
      <label htmlFor={id}>{w.choose}</label>{' '}
      <input
        id={id}
        type="file"
        accept={accept}
        disabled={busy}
        onChange={(e) => {
          const file = e.target.files?.[0]
          if (file) onFile(file)
          e.target.value = ''
        }}
      />
    </div>
  )
}

function UrlForm({ onUrl, busy, children }: { onUrl: (url: string) => void; busy: boolean; children?: ReactNode }) {
  const w = useWords(words)
  const [url, setUrl] = useState('')
  return (
    <form className="inline" onSubmit={handleSubmit(() => onUrl(url))}>
      <TextField label={w.url} type="url" value={url} required onChange={setUrl} />
      {children}
      <button type="submit" disabled={busy}>
        {w.load}
      </button>
    </form>
  )
}

export function MediaPage() {
  const w = useWords(words)
  const say = useEnum()
  const queryClient = useQueryClient()
  const [kind, setKind] = useState<'' | 'image' | 'video' | 'document'>('')
  const [usageFilter, setUsageFilter] = useState('')
  const [usage, setUsage] = useState<(typeof USAGES)[number]>('generic')
  const media = useQuery({
    ...mediaQuery(kind),
    placeholderData: keepPreviousData,
  })
  const done = () => void queryClient.invalidateQueries({ queryKey: mediaKey })
  const upload = useMutation({
    mutationFn: async (file: File) => {
      const form = new FormData()
      form.append('usage', usage)
      form.append('file', file, file.name)
      return call(v1.POST('/v1/media', { body: form as never }))
    },
    onSuccess: done,
  })
  const fromUrl = useMutation({
    mutationFn: (url: string) => call(v1.POST('/v1/media', { body: { url, usage } })),
    onSuccess: done,
  })
  const remove = useMutation({
    mutationFn: (id: string) => call(v1.DELETE('/v1/media/{id}', { params: { path: { id } } })),
    onSuccess: done,
  })
  const items = (media.data?.media ?? []).filter((m) => !usageFilter || m.usage === usageFilter)
  const last = (upload.data ?? fromUrl.data) as { media: MediaItem } | undefined
  return (
    <main>
      <h1>{w.media}</h1>
      <section>
        <h2>{w.upload}</h2>
        <Field label={w.usage}>
          <select value={usage} onChange={(e) => setUsage(e.target.value as (typeof USAGES)[number])}>
            <EnumOptions kind="mediaUsage" values={USAGES} />
          </select>
        </Field>
        <DropZone
          onFile={(f) => upload.mutate(f)}
          busy={upload.isPending}
          accept="image/jpeg,image/png,video/mp4,video/3gpp,application/pdf"
        />
        <h3>{w.byUrl}</h3>
        <UrlForm onUrl={(u) => fromUrl.mutate(u)} busy={fromUrl.isPending} />
        <ErrorText error={upload.error ?? fromUrl.error} />
        {last && (upload.isSuccess || fromUrl.isSuccess) && (
          <p role="status">{fill(w.uploaded, { name: String(last.media.filename) })}</p>
        )}
      </section>
      <section>
        <h2>{w.media}</h2>
        <div className="inline">
          <Field label={w.kind}>
            <select value={kind} onChange={(e) => setKind(e.target.value as typeof kind)}>
              <option value="">{w.all}</option>
              <option value="image">{w.image}</option>
              <option value="video">{w.video}</option>
              <option value="document">{w.document}</option>
            </select>
          </Field>
          <Field label={w.usage}>
            <select value={usageFilter} onChange={(e) => setUsageFilter(e.target.value)}>
              <option value="">{w.all}</option>
              <EnumOptions kind="mediaUsage" values={USAGES} />
            </select>
          </Field>
        </div>
        <ErrorText error={media.error ?? remove.error} />
        {media.data && items.length === 0 && <p className="empty">{w.none}</p>}
        <ul className="library" aria-busy={media.isFetching}>
          {items.map((m) => (
            <li key={m.id} data-testid="media-item" data-kind={m.kind}>
              {m.kind === 'image' ? (
                <img src={m.url} alt={m.filename ?? undefined} width={160} height={120} loading="lazy" />
              ) : (
                <span className="thumb" aria-hidden="true">
                  {m.kind === 'document' ? 'PDF' : 'MP4'}
                </span>
              )}
              <a href={m.url}>{m.filename}</a>
              <small>
                {say('mediaKind', m.kind)} · {say('mediaUsage', m.usage)} ·{' '}
                {fill(w.size, { kb: String(Math.ceil(m.size / 1024)) })}
                {m.width ? ` · ${m.width}×${m.height}` : ''}
              </small>
              <button
                type="button"
                onClick={() => {
                  if (window.confirm(w.confirmRemove)) remove.mutate(m.id)
                }}
              >
                {fill(w.remove, { name: String(m.filename) })}
              </button>
            </li>
          ))}
        </ul>
      </section>
    </main>
  )
}

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

/** A refusal of POST /app/knowledge/ask in the page's words (by the envelope's key), else as every error. */
function AskError({ error }: { error: unknown }) {
  const w = useWords(words)
  if (error instanceof ApiError && (error.code === 'ai_unavailable' || error.code === 'ai_call_failed')) {
    const said = (w as Record<string, string>)[`e_${error.key}`] ?? w.e_ai_call_failed
    return (
      <p className="error" role="alert">
        {fill(said, { message: error.message, status: /answered (\d{3})/.exec(error.message)?.[1] ?? '?' })}
      </p>
    )
  }
  return <ErrorText error={error} />
}

/** The AI reply settings' test question: the configured model answers it from the knowledge, nothing is sent. */
function AskTheAi() {
  const w = useWords(words)
  const [question, setQuestion] = useState('')
  const ask = useMutation({
    mutationFn: async () => call(app.POST('/app/knowledge/ask', { body: { question } })),
  })
  const result = ask.data
  return (
    <section>
      <h3>{w.testQuestion}</h3>
      <p className="note">{w.testIntro}</p>
      <form onSubmit={handleSubmit(() => ask.mutate())}>
        <Field label={w.testQuestion}>
          <textarea value={question} maxLength={2000} required onChange={(e) => setQuestion(e.target.value)} />
        </Field>
        <button type="submit" disabled={ask.isPending}>
          {w.ask}
        </button>
      </form>
      <div aria-live="polite" data-testid="ai-test">
        {ask.isPending && <p>{w.asking}</p>}
        {!ask.isPending && <AskError error={ask.error} />}
        {!ask.isPending && result && (
          <>
            {result.outcome === 'answer' ? (
              <>
                <p>
                  <strong>{w.wouldAnswer}</strong>
                </p>
                <blockquote data-testid="ai-answer">{result.answer}</blockquote>
              </>
            ) : (
              <div data-testid="ai-declined">
                <p>
                  <strong>{w.wouldDecline}</strong>
                </p>
                <p>
                  {w.why.replace(
                    '{reason}',
                    (w as Record<string, string>)[`d_${result.reason}`] ?? result.reason ?? '',
                  )}
                </p>
                {result.detail && <p>{fill(w.modelSaid, { detail: result.detail })}</p>}
              </div>
            )}
            {result.passages.length > 0 && (
              <>
                <h4>{w.promptPassages}</h4>
                <ol>
                  {result.passages.map((p) => (
                    <li key={`${p.document_id}-${p.position}`} data-testid="ai-passage">
                      <strong>{p.document_title}</strong>
                      {p.heading ? ` · ${p.heading}` : ''}
                      {p.used ? <em className="cited"> · {w.cited}</em> : null}
                      <p>{p.text}</p>
                    </li>
                  ))}
                </ol>
              </>
            )}
          </>
        )}
      </div>
    </section>
  )
}

function AiSettings() {
  const w = useWords(words)
  const queryClient = useQueryClient()
  const settings = useQuery(aiSettingsQuery)
  const [draft, setDraft] = useState<{ replies: boolean; tags: boolean; perHour: number } | null>(null)
  const s = settings.data
  const value =
    draft ?? (s ? { replies: s.replies_enabled, tags: s.tags_enabled, perHour: s.replies_per_contact_per_hour } : null)
  const save = useMutation({
    mutationFn: () =>
      call(
        v1.PATCH('/v1/settings/ai', {
          body: {
            replies_enabled: value!.replies,
            tags_enabled: value!.tags,
            replies_per_contact_per_hour: value!.perHour,
          },
        }),
      ),
    onSuccess: (data) => {
      queryClient.setQueryData(aiSettingsQuery.queryKey, data)
      setDraft(null)
    },
  })
  return (
    <section>
      <h2>{w.ai}</h2>
      <ErrorText error={settings.error} />
      {s && value && (
        <>
          <p>
            {s.active ? w.aiActive : w.aiInactive}
            {!s.available || s.reason ? ` · ${fill(w.aiUnavailable, { reason: s.reason ?? '' })}` : ''}
            {s.model ? ` · ${w.model}: ${s.model}` : ''}
          </p>
          <form onSubmit={handleSubmit(() => save.mutate())}>
            <label className="check">
              <input
                type="checkbox"
                checked={value.replies}
                onChange={(e) => setDraft({ ...value, replies: e.target.checked })}
              />{' '}
              {w.replies}
            </label>
            <label className="check">
              <input
                type="checkbox"
                checked={value.tags}
                onChange={(e) => setDraft({ ...value, tags: e.target.checked })}
              />{' '}
              {w.tags}
            </label>
            <Field label={w.perHour}>
              <input
                type="number"
                min={1}
                max={60}
                value={value.perHour}
                onChange={(e) => setDraft({ ...value, perHour: Number(e.target.value) })}
              />
            </Field>
            <ErrorText error={save.error} />
            <button type="submit" disabled={save.isPending}>
              {w.save}
            </button>
            {save.isSuccess && <span role="status"> {w.saved}</span>}
          </form>
          <AskTheAi />
        </>
      )}
    </section>
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
