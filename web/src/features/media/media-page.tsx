import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { call, v1 } from '../../api/client.ts'
import { EnumOptions, ErrorText, Field } from '../../ui/components.tsx'
import { fill, useEnum, useWords } from '../../ui/i18n.tsx'
import { type MediaItem, mediaKey, mediaQuery } from './queries.ts'
import { DropZone, UrlForm } from './upload.tsx'
import { words } from './words.ts'

const USAGES = ['generic', 'landing', 'newsletter', 'template', 'logo', 'avatar', 'blog'] as const

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
