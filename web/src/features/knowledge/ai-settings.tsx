import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { ApiError, app, call, v1 } from '../../api/client.ts'
import { ErrorText, Field, handleSubmit } from '../../ui/components.tsx'
import { fill, useWords } from '../../ui/i18n.tsx'
import { aiSettingsQuery } from './queries.ts'
import { words } from './words.ts'

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

export function AiSettings() {
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
