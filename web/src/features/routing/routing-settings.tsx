import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import type { operations } from '../../api/app.ts'
import { app, call } from '../../api/client.ts'
import { Field, handleSubmit, TextField } from '../../ui/components.tsx'
import { fill, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import type { Answer } from '../../ui/query.ts'
import { availabilityQuery, openingStateQuery, routingQuery } from './queries.ts'
import { errors, words } from './words.ts'

// The settings of the inbox's routing: automatic assignment, opening hours with days off, and the away message.

const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const
type Day = (typeof DAYS)[number]
type Routing = Answer<typeof routingQuery>
type Range = { from: string; to: string }
type HoursBody = NonNullable<operations['updateOpeningHours']['requestBody']>['content']['application/json']

const rangesText = (ranges: Range[]) => ranges.map((r) => `${r.from}-${r.to}`).join(', ')
const RANGE = /^(\d{2}:\d{2})\s*[-–]\s*(\d{2}:\d{2})$/

/** "09:00-12:00, 13:00-17:00" as ranges; null when a part is not a range. */
export function parseRanges(text: string): Range[] | null {
  const parts = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
  const ranges: Range[] = []
  for (const part of parts) {
    const match = part.match(RANGE)
    if (!match) return null
    ranges.push({ from: match[1], to: match[2] })
  }
  return ranges
}

export function RoutingSettings({ canWrite }: { canWrite: boolean }) {
  const w = useWords(words)
  const e = useWords(errors)
  const routing = useQuery(routingQuery)
  return (
    <>
      <section aria-labelledby="assignment-title">
        <h2 id="assignment-title">{w.assignment}</h2>
        <PageError error={routing.error} words={e} />
        {routing.data && (
          // not keyed on the data: a save puts its answer in the cache, and a remount would drop the form's "Saved."
          <AssignmentForm data={routing.data} canWrite={canWrite} />
        )}
        <Members />
      </section>
      <section aria-labelledby="hours-title">
        <h2 id="hours-title">{w.hours}</h2>
        {routing.data && <p role="status">{routing.data.open_now ? w.openNow : w.closedNow}</p>}
        {routing.data && <HoursForm data={routing.data} canWrite={canWrite} />}
      </section>
    </>
  )
}

function useSaved() {
  const queryClient = useQueryClient()
  return (result: Routing) => {
    queryClient.setQueryData(routingQuery.queryKey, result)
    void queryClient.invalidateQueries({ queryKey: openingStateQuery.queryKey })
    void queryClient.invalidateQueries({ queryKey: availabilityQuery.queryKey })
  }
}

function AssignmentForm({ data, canWrite }: { data: Routing; canWrite: boolean }) {
  const w = useWords(words)
  const e = useWords(errors)
  const saved = useSaved()
  const [mode, setMode] = useState(data.assignment.mode)
  const [limit, setLimit] = useState(String(data.assignment.limit))
  const save = useMutation({
    mutationFn: () => call(app.PATCH('/app/inbox/routing/assignment', { body: { mode, limit: Number(limit) } })),
    onSuccess: saved,
  })
  return (
    <form onSubmit={handleSubmit(() => save.mutate())}>
      <Field label={w.mode}>
        <select
          value={mode}
          disabled={!canWrite}
          onChange={(ev) => setMode(ev.target.value === 'round_robin' ? 'round_robin' : 'off')}
        >
          <option value="off">{w.assignmentOff}</option>
          <option value="round_robin">{w.assignmentRoundRobin}</option>
        </select>
      </Field>
      <TextField
        label={w.limit}
        type="number"
        min={1}
        max={1000}
        required
        value={limit}
        readOnly={!canWrite}
        onChange={setLimit}
      />
      <PageError error={save.error} words={e} />
      {save.isSuccess && <p role="status">{w.saved}</p>}
      {canWrite && (
        <button type="submit" disabled={save.isPending}>
          {w.save}
        </button>
      )}
    </form>
  )
}

function Members() {
  const w = useWords(words)
  const availability = useQuery(availabilityQuery)
  if (!availability.data || availability.data.members.length === 0) return null
  return (
    <>
      <h3>{w.members}</h3>
      <ul>
        {availability.data.members.map((m) => (
          <li key={m.member_id}>
            {fill(w.memberLine, {
              name: m.name || m.email,
              state: m.available ? w.available : w.away,
              count: String(m.open_conversations),
            })}
          </li>
        ))}
      </ul>
    </>
  )
}

function HoursForm({ data, canWrite }: { data: Routing; canWrite: boolean }) {
  const w = useWords(words)
  const e = useWords(errors)
  const saved = useSaved()
  const [enabled, setEnabled] = useState(data.hours.enabled)
  const [timezone, setTimezone] = useState(data.hours.timezone)
  const [weekly, setWeekly] = useState<Record<Day, string>>(
    Object.fromEntries(DAYS.map((d) => [d, rangesText(data.hours.weekly[d])])) as Record<Day, string>,
  )
  const [daysOff, setDaysOff] = useState(data.hours.days_off.join(', '))
  const [awayEnabled, setAwayEnabled] = useState(data.away.enabled)
  const [awayMessage, setAwayMessage] = useState(data.away.message)
  const [intervalHours, setIntervalHours] = useState(String(Math.max(1, Math.round(data.away.interval_minutes / 60))))
  const [badRanges, setBadRanges] = useState(false)
  const save = useMutation({
    mutationFn: (body: HoursBody) => call(app.PATCH('/app/inbox/routing/hours', { body })),
    onSuccess: saved,
  })
  const submit = () => {
    const parsed = DAYS.map((d) => [d, parseRanges(weekly[d])] as const)
    if (parsed.some(([, r]) => r === null)) {
      setBadRanges(true)
      return
    }
    setBadRanges(false)
    save.mutate({
      enabled,
      timezone: timezone.trim(),
      weekly: Object.fromEntries(parsed) as HoursBody['weekly'],
      days_off: daysOff
        .split(',')
        .map((d) => d.trim())
        .filter(Boolean),
      away_enabled: awayEnabled,
      away_message: awayMessage,
      away_interval_minutes: Number(intervalHours) * 60,
    })
  }
  return (
    <form onSubmit={handleSubmit(submit)}>
      <label className="check">
        <input
          type="checkbox"
          checked={enabled}
          disabled={!canWrite}
          onChange={(ev) => setEnabled(ev.target.checked)}
        />
        {w.hoursEnabled}
      </label>
      <TextField label={w.timezone} required value={timezone} readOnly={!canWrite} onChange={setTimezone} />
      <p>{w.rangesHint}</p>
      {DAYS.map((d) => (
        <TextField
          key={d}
          label={w[d]}
          value={weekly[d]}
          placeholder="09:00-17:00"
          readOnly={!canWrite}
          onChange={(value) => setWeekly({ ...weekly, [d]: value })}
        />
      ))}
      {badRanges && <p role="alert">{w.badRanges}</p>}
      <TextField label={w.daysOff} value={daysOff} readOnly={!canWrite} onChange={setDaysOff} />
      <h3>{w.awayTitle}</h3>
      <label className="check">
        <input
          type="checkbox"
          checked={awayEnabled}
          disabled={!canWrite}
          onChange={(ev) => setAwayEnabled(ev.target.checked)}
        />
        {w.awayEnabled}
      </label>
      <Field label={w.awayMessage}>
        <textarea
          maxLength={4000}
          rows={3}
          value={awayMessage}
          readOnly={!canWrite}
          onChange={(ev) => setAwayMessage(ev.target.value)}
        />
      </Field>
      <TextField
        label={w.awayInterval}
        type="number"
        min={1}
        max={720}
        required
        value={intervalHours}
        readOnly={!canWrite}
        onChange={setIntervalHours}
      />
      <PageError error={save.error} words={e} />
      {save.isSuccess && <p role="status">{w.saved}</p>}
      {canWrite && (
        <button type="submit" disabled={save.isPending}>
          {w.save}
        </button>
      )}
    </form>
  )
}
