import { useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { ApiError, app } from '../../api/client.ts'
import { Field, handleSubmit } from '../../ui/components.tsx'
import { fill, useI18n, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import { useSession } from '../../ui/session.ts'
import { contactsKey } from './queries.ts'
import { importErrors, importWords } from './words.ts'

// CSV import on the contacts page: the file goes up as it is (POST /app/contacts/import), the answer streams a
// progress line per batch and the report with the rejected lines.

interface ImportEventShape {
  type: 'progress' | 'done' | 'error'
  bytes?: number
  total_bytes?: number
  rows?: number
  report?: {
    rows: number
    created: number
    updated: number
    unchanged: number
    rejected: number
    rejected_lines: Array<{ line: number; reason: string }>
    notes: Array<{ line: number; note: string }>
    seconds: number
  }
  error?: { code: string; key: string; message: string }
}

const SHOWN = 200

export function ContactImport() {
  const w = useWords(importWords)
  const e = useWords(importErrors)
  const { language } = useI18n()
  const session = useSession()
  const queryClient = useQueryClient()
  const [file, setFile] = useState<File | null>(null)
  const [running, setRunning] = useState(false)
  const [progress, setProgress] = useState<{ bytes: number; total: number; rows: number } | null>(null)
  const [report, setReport] = useState<ImportEventShape['report'] | null>(null)
  const [error, setError] = useState<unknown>(null)
  if (!session.data?.scopes.includes('contacts:write')) return null
  const locale = language === 'de' ? 'de-DE' : 'en-GB'

  async function start() {
    if (!file) return
    setRunning(true)
    setReport(null)
    setError(null)
    setProgress({ bytes: 0, total: file.size, rows: 0 })
    try {
      const { response, error: failure } = await app.POST('/app/contacts/import', {
        body: file as unknown as never,
        bodySerializer: (body: unknown) => body as BodyInit,
        headers: { 'content-type': 'text/csv' },
        parseAs: 'stream',
      })
      if (!response.ok) {
        // openapi-fetch has read the error envelope already
        const body = (failure ?? {}) as { error?: { code?: string; key?: string; message?: string } }
        throw new ApiError(response.status, body.error?.code ?? 'unknown', body.error?.message ?? '', body.error?.key)
      }
      const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
      let buffered = ''
      for (;;) {
        const { value, done } = await reader.read()
        if (value) buffered += value
        const lines = buffered.split('\n')
        buffered = lines.pop() ?? ''
        for (const line of lines) {
          if (!line.trim()) continue
          const event = JSON.parse(line) as ImportEventShape
          if (event.type === 'progress') {
            setProgress({ bytes: event.bytes ?? 0, total: event.total_bytes ?? file.size, rows: event.rows ?? 0 })
          } else if (event.type === 'done' && event.report) {
            setReport(event.report)
            setProgress((p) => (p ? { ...p, bytes: p.total, rows: event.report?.rows ?? p.rows } : p))
          } else if (event.type === 'error' && event.error) {
            throw new ApiError(500, event.error.code, event.error.message, event.error.key)
          }
        }
        if (done) break
      }
      void queryClient.invalidateQueries({ queryKey: contactsKey })
    } catch (caught) {
      setError(caught instanceof ApiError ? caught : new ApiError(0, 'network', ''))
    } finally {
      setRunning(false)
    }
  }

  return (
    <section aria-labelledby="import-title">
      <h2 id="import-title">{w.title}</h2>
      <p className="muted">{w.help}</p>
      <form className="inline" onSubmit={handleSubmit(() => void start())}>
        <Field label={w.file}>
          <input type="file" accept=".csv,text/csv" required onChange={(ev) => setFile(ev.target.files?.[0] ?? null)} />
        </Field>
        <div className="field">
          <button type="submit" disabled={!file || running}>
            {w.start}
          </button>
        </div>
      </form>
      {progress && (
        <div>
          <progress
            aria-label={w.progress}
            max={Math.max(1, progress.total)}
            value={Math.min(progress.bytes, progress.total)}
          />
          <p role="status" data-testid="import-progress">
            {progress.rows === 0 && running
              ? w.uploading
              : fill(w.rows, { rows: progress.rows.toLocaleString(locale) })}
          </p>
        </div>
      )}
      <PageError error={error} words={e} />
      {report && (
        <div>
          <p role="status" data-testid="import-report">
            {fill(w.done, {
              created: report.created.toLocaleString(locale),
              updated: report.updated.toLocaleString(locale),
              unchanged: report.unchanged.toLocaleString(locale),
              rejected: report.rejected.toLocaleString(locale),
              rows: report.rows.toLocaleString(locale),
              seconds: report.seconds.toLocaleString(locale),
            })}
          </p>
          {report.rejected_lines.length > 0 && (
            <table>
              <caption>{w.rejected}</caption>
              <thead>
                <tr>
                  <th scope="col">{w.line}</th>
                  <th scope="col">{w.reason}</th>
                </tr>
              </thead>
              <tbody>
                {report.rejected_lines.slice(0, SHOWN).map((r) => (
                  <tr key={r.line}>
                    <td>{r.line}</td>
                    <td>{r.reason}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {report.rejected > SHOWN && <p>{fill(w.more, { count: report.rejected - SHOWN })}</p>}
          {report.notes.length > 0 && (
            <details>
              <summary>{w.notes}</summary>
              <ul>
                {report.notes.slice(0, SHOWN).map((n) => (
                  <li key={`${n.line}-${n.note}`}>
                    {w.line} {n.line}: {n.note}
                  </li>
                ))}
              </ul>
            </details>
          )}
        </div>
      )}
    </section>
  )
}
