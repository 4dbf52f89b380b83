import { useEffect, useState } from 'react'
import { useWords } from './i18n.tsx'
import { commonWords } from './words.ts'
import './campaign.css'

// Small pieces the campaign pages (newsletters, follow-ups, automations, media and knowledge) share.

/** A value once it has stopped changing for `ms` (a search or a check as the member types). */
export function useDebounced<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value)
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms)
    return () => clearTimeout(timer)
  }, [value, ms])
  return settled
}

/** The offset of a timezone from UTC at an instant, in milliseconds. */
function zoneOffset(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(instant))
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0)
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'))
  return asUtc - Math.floor(instant / 1000) * 1000
}

/**
 * A wall-clock date and time (`YYYY-MM-DD`, `HH:MM`) in a timezone as an ISO instant with its zone (UTC), or null
 * when the input is not a date and time.
 */
export function zonedToIso(date: string, time: string, timeZone: string): string | null {
  const d = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date)
  const t = /^(\d{2}):(\d{2})$/.exec(time)
  if (!d || !t) return null
  const wall = Date.UTC(Number(d[1]), Number(d[2]) - 1, Number(d[3]), Number(t[1]), Number(t[2]))
  let instant = wall - zoneOffset(wall, timeZone)
  // near a DST change the offset at the guess differs from the one at the result: take the second look
  instant = wall - zoneOffset(instant, timeZone)
  return new Date(instant).toISOString()
}

/** An instant shown in a timezone, in the member's language. */
export function formatInZone(iso: string | null | undefined, language: string, timeZone: string): string {
  if (!iso) return '–'
  return new Intl.DateTimeFormat(language === 'de' ? 'de-DE' : 'en-GB', {
    dateStyle: 'medium',
    timeStyle: 'short',
    timeZone,
  }).format(new Date(iso))
}

/** A date (`YYYY-MM-DD`) in a timezone, `days` from now: the date picker's bounds. */
export function dateInZone(timeZone: string, days = 0): string {
  const parts = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' })
  return parts.format(new Date(Date.now() + days * 86_400_000))
}

/** A button that copies a text and says so. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const w = useWords(commonWords)
  const [done, setDone] = useState(false)
  return (
    <button
      type="button"
      aria-label={`${done ? w.copied : w.copy}: ${label}`}
      onClick={() => {
        void navigator.clipboard?.writeText(text).catch(() => {})
        setDone(true)
      }}
    >
      {done ? w.copied : w.copy}
    </button>
  )
}

export interface Bar {
  key: string
  label: string
  value: number
}

const COLORS = ['#6b6b6b', '#0b57d0', '#137333', '#5b3a9e', '#b3261e', '#8a5a00', '#0a6b50']

/** A stacked bar of parts of a whole (e.g. sends per status), with its numbers as text beside it. */
export function ProgressBar({ bars, total, label }: { bars: Bar[]; total: number; label: string }) {
  const whole = Math.max(
    total,
    bars.reduce((sum, b) => sum + b.value, 0),
    1,
  )
  let x = 0
  return (
    <figure className="chart">
      <svg viewBox="0 0 1000 24" width="100%" height="24" role="img" aria-label={label}>
        <rect x="0" y="0" width="1000" height="24" fill="#e8e8e8" />
        {bars.map((bar, i) => {
          const width = (bar.value / whole) * 1000
          const rect = <rect key={bar.key} x={x} y="0" width={width} height="24" fill={COLORS[i % COLORS.length]} />
          x += width
          return rect
        })}
      </svg>
      <figcaption>
        <ul className="legend">
          {bars.map((bar, i) => (
            <li key={bar.key} data-key={bar.key}>
              <svg width="12" height="12" aria-hidden="true">
                <rect width="12" height="12" fill={COLORS[i % COLORS.length]} />
              </svg>{' '}
              {bar.label}: <span data-testid={`count-${bar.key}`}>{bar.value}</span>
            </li>
          ))}
        </ul>
      </figcaption>
    </figure>
  )
}

/** A bar chart of counts, one column each; the numbers are in the table the chart stands for. */
export function BarChart({ bars, label }: { bars: Bar[]; label: string }) {
  const max = Math.max(1, ...bars.map((b) => b.value))
  const step = 1000 / Math.max(bars.length, 1)
  return (
    <svg viewBox="0 0 1000 160" width="100%" height="160" role="img" aria-label={label} className="chart">
      {bars.map((bar, i) => {
        const height = (bar.value / max) * 100
        return (
          <g key={bar.key}>
            <rect
              x={i * step + step * 0.2}
              y={130 - height}
              width={step * 0.6}
              height={height}
              fill={COLORS[i % COLORS.length]}
            />
            <text x={i * step + step / 2} y="150" textAnchor="middle" fontSize="14">
              {bar.label}
            </text>
            <text x={i * step + step / 2} y={125 - height} textAnchor="middle" fontSize="14">
              {bar.value}
            </text>
          </g>
        )
      })}
    </svg>
  )
}

/** A contact's values for the template variables, as the server fills them (`name` is the first word). */
export function previewText(
  text: string,
  contact: { name: string; email: string | null; phone: string | null } | null,
  fallback: string,
): string {
  const full = contact?.name.trim().replace(/\s+/g, ' ') ?? ''
  const values: Record<string, string> = {
    name: full === '' ? fallback : full.split(' ')[0],
    full_name: full === '' ? fallback : full,
    email: contact?.email ?? '',
    phone: contact?.phone ?? '',
  }
  return text.replace(/\{\{\s*([a-z_]+)\s*\}\}/g, (whole, key: string) => values[key] ?? whole)
}
