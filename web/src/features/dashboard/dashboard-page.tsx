import { keepPreviousData, useQuery } from '@tanstack/react-query'
import { Link } from '@tanstack/react-router'
import { useId, useState } from 'react'
import { ErrorText, Field } from '../../ui/components.tsx'
import { fill, useEnum, useI18n, useWords } from '../../ui/i18n.tsx'
import { firstStepsQuery, statsQuery } from './queries.ts'
import { words } from './words.ts'

// The dashboard: GET /v1/stats as hand-written SVG charts. Each chart is an image with a title and a summary for
// screen readers, and its numbers are one click away as a table.

type Words = (typeof words)['en']

// colours with at least 3:1 contrast against white and against each other's neighbours
const COLOURS = ['#0b57d0', '#b3261e', '#146c2e', '#7a4d00', '#6f2da8', '#00696f']

/** A chart's caption (which its svg is labelled by) and its legend: one colour swatch per series, in order. */
function ChartHeading({ id, title, labels }: { id: string; title: string; labels: readonly string[] }) {
  return (
    <>
      <figcaption id={`${id}-title`}>{title}</figcaption>
      <ul className="legend">
        {labels.map((label, i) => (
          <li key={label}>
            <span className={`swatch c${i % COLOURS.length}`} aria-hidden="true" />
            {label}
          </li>
        ))}
      </ul>
    </>
  )
}

interface Series {
  label: string
  values: number[]
}

/** Grouped bars per day, with a y axis of round steps; the numbers as a table on request. */
function DayChart({
  title,
  dates,
  series,
  w,
  locale,
}: {
  title: string
  dates: string[]
  series: Series[]
  w: Words
  locale: string
}) {
  const id = useId()
  const [table, setTable] = useState(false)
  const max = Math.max(1, ...series.flatMap((s) => s.values))
  const step = niceStep(max)
  const top = Math.ceil(max / step) * step
  const width = 720
  const height = 220
  const left = 44
  const bottom = 28
  const plotW = width - left - 8
  const plotH = height - bottom - 8
  const slot = plotW / Math.max(1, dates.length)
  const barW = Math.max(1, (slot * 0.8) / series.length)
  const day = (date: string) =>
    new Intl.DateTimeFormat(locale, { day: 'numeric', month: 'numeric', timeZone: 'UTC' }).format(new Date(date))
  const labelEvery = Math.ceil(dates.length / 10)
  const summary = series
    .map((s) =>
      fill(w.summary, {
        series: s.label,
        total: s.values.reduce((a, b) => a + b, 0),
        from: dates[0] ?? '',
        to: dates.at(-1) ?? '',
        max: Math.max(0, ...s.values),
      }),
    )
    .join(' ')
  return (
    <figure className="chart">
      <ChartHeading id={id} title={title} labels={series.map((s) => s.label)} />
      <svg
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-labelledby={`${id}-title ${id}-desc`}
        preserveAspectRatio="xMidYMid meet"
      >
        <title>{title}</title>
        <desc id={`${id}-desc`}>{summary}</desc>
        {Array.from({ length: top / step + 1 }, (_, i) => i * step).map((tick) => {
          const y = 8 + plotH - (tick * plotH) / top
          return (
            <g key={tick}>
              <line x1={left} x2={width - 8} y1={y} y2={y} stroke="#d0d0d0" />
              <text x={left - 6} y={y + 4} textAnchor="end" fontSize="11" fill="#3b3b3b">
                {tick.toLocaleString(locale)}
              </text>
            </g>
          )
        })}
        {dates.map((date, d) => (
          <g key={date}>
            {series.map((s, i) => {
              const h = (s.values[d] * plotH) / top
              return (
                <rect
                  key={s.label}
                  x={left + d * slot + slot * 0.1 + i * barW}
                  y={8 + plotH - h}
                  width={barW}
                  height={h}
                  fill={COLOURS[i % COLOURS.length]}
                >
                  <title>{`${day(date)} ${s.label}: ${s.values[d]}`}</title>
                </rect>
              )
            })}
            {d % labelEvery === 0 && (
              <text x={left + d * slot + slot / 2} y={height - 10} textAnchor="middle" fontSize="11" fill="#3b3b3b">
                {day(date)}
              </text>
            )}
          </g>
        ))}
      </svg>
      <button type="button" className="link" aria-expanded={table} onClick={() => setTable((t) => !t)}>
        {w.asTable}
      </button>
      {table && (
        <table>
          <caption className="visually-hidden">{title}</caption>
          <thead>
            <tr>
              <th scope="col">{w.date}</th>
              {series.map((s) => (
                <th scope="col" key={s.label}>
                  {s.label}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {dates.map((date, d) => (
              <tr key={date}>
                <th scope="row">{date}</th>
                {series.map((s) => (
                  <td key={s.label}>{s.values[d]}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </figure>
  )
}

/** Horizontal stacked bars, one per row (such as chat and e-mail consent), each part labelled with its count. */
function StackChart({
  title,
  rows,
  parts,
  locale,
}: {
  title: string
  rows: Array<{ label: string; values: number[] }>
  parts: string[]
  locale: string
}) {
  const id = useId()
  const width = 720
  const rowH = 34
  const left = 110
  const height = rows.length * (rowH + 12) + 4
  const summary = rows
    .map((r) => `${r.label}: ${parts.map((p, i) => `${p} ${r.values[i].toLocaleString(locale)}`).join(', ')}.`)
    .join(' ')
  return (
    <figure className="chart">
      <ChartHeading id={id} title={title} labels={parts} />
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby={`${id}-title ${id}-desc`}>
        <title>{title}</title>
        <desc id={`${id}-desc`}>{summary}</desc>
        {rows.map((row, r) => {
          const total = row.values.reduce((a, b) => a + b, 0)
          let x = left
          const y = 4 + r * (rowH + 12)
          return (
            <g key={row.label}>
              <text x={left - 8} y={y + rowH / 2 + 4} textAnchor="end" fontSize="13" fill="#1b1b1b">
                {row.label}
              </text>
              {total === 0 && <rect x={left} y={y} width={width - left - 8} height={rowH} fill="#eeeeee" />}
              {row.values.map((value, i) => {
                const w = total === 0 ? 0 : ((width - left - 8) * value) / total
                const part = (
                  <g key={parts[i]}>
                    <rect x={x} y={y} width={w} height={rowH} fill={COLOURS[i % COLOURS.length]}>
                      <title>{`${row.label}, ${parts[i]}: ${value}`}</title>
                    </rect>
                    {w > 36 && (
                      <text x={x + w / 2} y={y + rowH / 2 + 4} textAnchor="middle" fontSize="12" fill="#ffffff">
                        {value.toLocaleString(locale)}
                      </text>
                    )}
                  </g>
                )
                x += w
                return part
              })}
            </g>
          )
        })}
      </svg>
    </figure>
  )
}

/** 1, 2 or 5 times a power of ten, so that the axis has at most five steps. */
function niceStep(max: number): number {
  const rough = max / 5
  const power = 10 ** Math.floor(Math.log10(Math.max(1, rough)))
  for (const m of [1, 2, 5, 10]) if (m * power >= rough) return Math.max(1, m * power)
  return power * 10
}

const STEPS = [
  ['connect_number', '/settings'],
  ['optin_template', '/templates'],
  ['import_contacts', '/contacts'],
  ['invite_team', '/team'],
] as const

/** A new account's first steps with their state, until all four are done. */
function FirstSteps() {
  const w = useWords(words)
  const steps = useQuery(firstStepsQuery)
  if (!steps.data) return <ErrorText error={steps.error} />
  const state = steps.data
  const done = STEPS.filter(([key]) => state[key]).length
  if (done === STEPS.length) return null
  return (
    <section aria-labelledby="first-steps-title" data-testid="first-steps">
      <h2 id="first-steps-title">{w.firstSteps}</h2>
      <p>
        {w.firstStepsIntro} <strong>{fill(w.stepsDone, { done: String(done) })}</strong>
      </p>
      <ol className="first-steps">
        {STEPS.map(([key, to], i) => (
          <li key={key} data-done={state[key]} data-testid={`step-${key}`}>
            <span className="mark" aria-hidden="true">
              {state[key] ? '✓' : i + 1}
            </span>
            <div>
              <h3>
                <Link to={to}>{w[key]}</Link>
              </h3>
              <p>{w[`${key}Text`]}</p>
              <span className={state[key] ? 'badge ok' : 'badge'}>{state[key] ? w.stepDone : w.stepOpen}</span>
            </div>
          </li>
        ))}
      </ol>
    </section>
  )
}

export function DashboardPage() {
  const { language } = useI18n()
  const w = useWords(words)
  const say = useEnum()
  const locale = language === 'de' ? 'de-DE' : 'en-GB'
  const [range, setRange] = useState<'7d' | '30d' | '90d'>('30d')
  const stats = useQuery({
    ...statsQuery(range),
    placeholderData: keepPreviousData,
  })
  const s = stats.data?.stats
  const dates = s?.days.map((d) => d.date) ?? []
  const statuses = ['queued', 'sent', 'delivered', 'read', 'failed', 'skipped'] as const
  const optins = ['none', 'pending', 'confirmed', 'opted_out'] as const
  // a new account's charts would be empty frames: a sentence instead, until there is something to draw
  const active = s !== undefined && (s.contacts.total > 0 || s.totals.messages_in + s.totals.messages_out > 0)
  return (
    <main>
      <h1>{w.title}</h1>
      <FirstSteps />
      <Field label={w.range}>
        <select value={range} onChange={(e) => setRange(e.target.value as typeof range)}>
          <option value="7d">{w.days7}</option>
          <option value="30d">{w.days30}</option>
          <option value="90d">{w.days90}</option>
        </select>
      </Field>
      <ErrorText error={stats.error} />
      {s && !active && <p className="empty">{w.noActivity}</p>}
      {s && active && (
        <div aria-busy={stats.isFetching}>
          <p>{fill(w.timezone, { timezone: s.timezone, from: s.from, to: s.to })}</p>
          <dl className="figures">
            {(
              [
                [w.contactsTotal, s.contacts.total],
                [w.contactsNew, s.totals.contacts_new],
                [w.messagesIn, s.totals.messages_in],
                [w.messagesOut, s.totals.messages_out],
                [w.linkClicks, s.totals.link_clicks],
                [w.automationRuns, s.totals.automation_runs],
                [w.followupRuns, s.totals.followup_runs],
                [w.aiReplies, s.totals.ai_replies],
              ] as const
            ).map(([label, value]) => (
              <div key={label}>
                <dt>{label}</dt>
                <dd>{value.toLocaleString(locale)}</dd>
              </div>
            ))}
          </dl>
          <DayChart
            title={w.messagesChart}
            dates={dates}
            w={w}
            locale={locale}
            series={[
              { label: w.messagesIn, values: s.days.map((d) => d.messages_in) },
              { label: w.messagesOut, values: s.days.map((d) => d.messages_out) },
            ]}
          />
          <DayChart
            title={w.contactsChart}
            dates={dates}
            w={w}
            locale={locale}
            series={[{ label: w.contactsNew, values: s.days.map((d) => d.contacts_new) }]}
          />
          <StackChart
            title={w.optinChart}
            locale={locale}
            parts={optins.map((o) => w[o])}
            rows={[
              { label: w.chat, values: optins.map((o) => s.contacts.optin_chat[o]) },
              { label: w.email, values: optins.map((o) => s.contacts.optin_email[o]) },
            ]}
          />
          <StackChart
            title={w.sendsChart}
            locale={locale}
            parts={statuses.map((o) => say('sendStatus', o))}
            rows={[
              { label: w.templateSends, values: statuses.map((o) => s.totals.template_sends[o]) },
              { label: w.newsletterSends, values: statuses.map((o) => s.totals.newsletter_sends[o]) },
            ]}
          />
        </div>
      )}
    </main>
  )
}
