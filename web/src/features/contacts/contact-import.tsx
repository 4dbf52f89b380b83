import { useQueryClient } from '@tanstack/react-query'
import { useEffect, useState } from 'react'
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
/** the start of the file the preview reads (the server reads no more) */
const PREVIEW_BYTES = 256 * 1024
const CONTACT_TARGETS = ['name', 'first_name', 'last_name', 'email', 'phone', 'tags'] as const
const LEAVE_OUT = '-'

interface Preview {
  encoding: string
  delimiter: string
  columns: Array<{ header: string; target: string | null; new_field: boolean }>
  rows: string[][]
  fields: Array<{ key: string; label: string }>
  has_address: boolean
  /** the country national numbers are read in, and each shown line's number as it will be stored */
  country: string | null
  phones: Array<string | null>
}

/** The member's changes as the import's `map` (header=target, `-` leaves a column out). */
const mapOf = (overrides: Record<string, string>) =>
  Object.entries(overrides)
    .map(([header, target]) => `${header}=${target}`)
    .join(',')

/** A header the map cannot name (its syntax splits at commas and the last equals sign). */
const fixedHeader = (header: string) => header.includes(',') || header.includes('=')

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
  const [overrides, setOverrides] = useState<Record<string, string>>({})
  const [createFields, setCreateFields] = useState(false)
  const [preview, setPreview] = useState<Preview | null>(null)
  const query = {
    ...(Object.keys(overrides).length > 0 ? { map: mapOf(overrides) } : {}),
    ...(createFields ? { create_fields: true } : {}),
  }
  const queryKey = JSON.stringify(query)

  // the preview follows the file and the member's choices; nothing is written
  // biome-ignore lint/correctness/useExhaustiveDependencies: queryKey stands for query
  useEffect(() => {
    if (!file) {
      setPreview(null)
      return
    }
    let current = true
    void (async () => {
      const {
        data,
        error: failure,
        response,
      } = await app.POST('/app/contacts/import/preview', {
        params: { query },
        body: file.slice(0, PREVIEW_BYTES) as unknown as never,
        bodySerializer: (body: unknown) => body as BodyInit,
        headers: { 'content-type': 'text/csv' },
      })
      if (!current) return
      if (!response.ok) {
        const body = (failure ?? {}) as { error?: { code?: string; key?: string; message?: string } }
        setPreview(null)
        setError(
          new ApiError(response.status, body.error?.code ?? 'unknown', body.error?.message ?? '', body.error?.key),
        )
        return
      }
      setError(null)
      setPreview(data as Preview)
    })()
    return () => {
      current = false
    }
  }, [file, queryKey])

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
        params: { query },
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
          <input
            type="file"
            accept=".csv,text/csv"
            required
            onChange={(ev) => {
              setOverrides({})
              setFile(ev.target.files?.[0] ?? null)
            }}
          />
        </Field>
        <div className="field">
          <button type="submit" disabled={!file || running}>
            {w.start}
          </button>
        </div>
      </form>
      {preview && (
        <div data-testid="import-preview">
          <h3>{w.preview}</h3>
          <p className="muted">
            {fill(w.detected, {
              encoding: preview.encoding,
              delimiter: preview.delimiter === '\t' ? 'Tab' : preview.delimiter,
            })}
          </p>
          <p className="muted" data-testid="import-country">
            {preview.country ? fill(w.country, { country: preview.country }) : w.noCountry}
          </p>
          <label className="check">
            <input type="checkbox" checked={createFields} onChange={(ev) => setCreateFields(ev.target.checked)} />{' '}
            {w.createFields}
          </label>
          {!preview.has_address && (
            <p role="alert" className="error">
              {w.noAddress}
            </p>
          )}
          <div className="scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">{w.column}</th>
                  <th scope="col">{w.target}</th>
                  <th scope="col">{w.samples}</th>
                </tr>
              </thead>
              <tbody>
                {preview.columns.map((column, i) => (
                  // biome-ignore lint/suspicious/noArrayIndexKey: a file's columns are its order (headers may repeat)
                  <tr key={`${i}-${column.header}`}>
                    <th scope="row">{column.header}</th>
                    <td>
                      <select
                        aria-label={`${w.target}: ${column.header}`}
                        title={fixedHeader(column.header) ? w.fixedColumn : undefined}
                        disabled={fixedHeader(column.header) || running}
                        value={column.target ?? LEAVE_OUT}
                        onChange={(ev) => setOverrides((o) => ({ ...o, [column.header]: ev.target.value }))}
                      >
                        <option value={LEAVE_OUT}>{w.leaveOut}</option>
                        {CONTACT_TARGETS.map((t) => (
                          <option key={t} value={t}>
                            {w[`target_${t}`]}
                          </option>
                        ))}
                        {preview.fields.map((f) => (
                          <option key={f.key} value={f.key}>
                            {column.new_field && column.target === f.key ? fill(w.newField, { key: f.key }) : f.label}
                          </option>
                        ))}
                      </select>
                    </td>
                    <td>
                      {column.target === 'phone'
                        ? preview.rows
                            .slice(0, 3)
                            .flatMap((row, j) =>
                              (row[i] ?? '') === '' ? [] : [`${row[i]} → ${preview.phones[j] || w.phoneRefused}`],
                            )
                            .join(' · ')
                        : preview.rows
                            .slice(0, 3)
                            .map((row) => row[i] ?? '')
                            .filter((v) => v !== '')
                            .join(' · ')}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </div>
      )}
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
