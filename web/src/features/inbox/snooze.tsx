import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query'
import { useState } from 'react'
import { app, call } from '../../api/client.ts'
import { fill, useI18n, useWords } from '../../ui/i18n.tsx'
import { PageError } from '../../ui/page-error.tsx'
import { apiQuery } from '../../ui/query.ts'
import type { SessionShape } from '../../ui/session.ts'
import { formatInZone, zonedToIso } from '../../ui/time.ts'
import { availabilityQuery } from '../routing/queries.ts'
import { viewWords } from './views-words.ts'
import { errors } from './words.ts'

// A conversation's handling in its thread: status (open, snoozed, closed) with close and reopen, the snooze menu
// (in 1 hour, tomorrow 9:00 in the account's time zone, a date and time, until the customer writes) and the
// assignee picker. Live changes refetch ['conversation', id] (live.ts).

export const conversationQuery = (id: string) =>
  apiQuery(['conversation', id], () => app.GET('/app/conversations/{id}', { params: { path: { id } } }))

/** Tomorrow's date (YYYY-MM-DD) in a time zone. */
function tomorrowIn(timeZone: string, now = new Date()): string {
  const today = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' })
    .format(now)
    .split('-')
    .map(Number)
  return new Date(Date.UTC(today[0], today[1] - 1, today[2] + 1)).toISOString().slice(0, 10)
}

type SnoozeBody = { until: string } | { until_reply: true }

export function ConversationActions({ id, session }: { id: string; session: SessionShape }) {
  const w = useWords(viewWords)
  const e = useWords(errors)
  const { language } = useI18n()
  const queryClient = useQueryClient()
  const timeZone = session.account.timezone
  const canWrite = session.scopes.includes('messages:write')
  const conversation = useQuery(conversationQuery(id)).data?.conversation
  const members = useQuery(availabilityQuery).data?.members ?? []
  const [picked, setPicked] = useState('')
  const [menuOpen, setMenuOpen] = useState(false)
  const changed = () => {
    setMenuOpen(false)
    void queryClient.invalidateQueries({ queryKey: ['conversation', id] })
    void queryClient.invalidateQueries({ queryKey: ['inbox-page'] })
  }
  const act = useMutation({
    mutationFn: (action: 'close' | 'reopen') =>
      call(
        action === 'close'
          ? app.POST('/app/conversations/{id}/close', { params: { path: { id } } })
          : app.POST('/app/conversations/{id}/reopen', { params: { path: { id } } }),
      ),
    onSuccess: changed,
  })
  const snooze = useMutation({
    mutationFn: (body: SnoozeBody) =>
      call(app.POST('/app/conversations/{id}/snooze', { params: { path: { id } }, body })),
    onSuccess: changed,
  })
  const assign = useMutation({
    mutationFn: (memberId: string | null) =>
      call(app.PUT('/app/conversations/{id}/assignee', { params: { path: { id } }, body: { member_id: memberId } })),
    onSuccess: changed,
  })
  if (!conversation) return null
  const status =
    conversation.status === 'snoozed'
      ? conversation.snoozed_until
        ? fill(w.snoozedUntil, { time: formatInZone(conversation.snoozed_until, language, timeZone) })
        : w.snoozedUntilReply
      : w[`status_${conversation.status}`]
  const assignee = conversation.assignee_id
  const known = members.some((m) => m.member_id === assignee)
  const label = (m: { member_id: string; name: string; email: string }) => {
    const name = m.name || m.email
    return m.member_id === session.user.id ? fill(w.me, { name }) : name
  }
  const pickedIso = picked ? zonedToIso(picked.slice(0, 10), picked.slice(11, 16), timeZone) : null
  return (
    <div className="conversation-actions" data-testid="conversation-actions">
      <span className="badge" data-testid="conversation-status" data-status={conversation.status}>
        {status}
      </span>
      <label className="assignee">
        <span>{w.assignee}</span>
        <select
          value={assignee ?? ''}
          disabled={!canWrite || assign.isPending}
          onChange={(event) => assign.mutate(event.target.value || null)}
        >
          <option value="">{w.nobody}</option>
          {assignee && !known && <option value={assignee}>{assignee.slice(0, 8)}</option>}
          {members.map((m) => (
            <option key={m.member_id} value={m.member_id}>
              {label(m)}
            </option>
          ))}
        </select>
      </label>
      {canWrite && (
        <div className="status-buttons">
          {conversation.status !== 'closed' && (
            <button type="button" className="secondary" disabled={act.isPending} onClick={() => act.mutate('close')}>
              {w.close}
            </button>
          )}
          {conversation.status !== 'open' && (
            <button type="button" className="secondary" disabled={act.isPending} onClick={() => act.mutate('reopen')}>
              {w.reopen}
            </button>
          )}
          <details className="snooze-menu" open={menuOpen} onToggle={(ev) => setMenuOpen(ev.currentTarget.open)}>
            <summary>{w.snooze}</summary>
            <div className="snooze-choices">
              <button
                type="button"
                className="secondary"
                onClick={() => snooze.mutate({ until: new Date(Date.now() + 60 * 60 * 1000).toISOString() })}
              >
                {w.inHour}
              </button>
              <button
                type="button"
                className="secondary"
                onClick={() => {
                  const until = zonedToIso(tomorrowIn(timeZone), '09:00', timeZone)
                  if (until) snooze.mutate({ until })
                }}
              >
                {w.tomorrow}
              </button>
              <button type="button" className="secondary" onClick={() => snooze.mutate({ until_reply: true })}>
                {w.untilReply}
              </button>
              <label className="field">
                <span>
                  {w.pickTime} ({timeZone})
                </span>
                <input type="datetime-local" value={picked} onChange={(event) => setPicked(event.target.value)} />
              </label>
              <button
                type="button"
                disabled={!pickedIso || snooze.isPending}
                onClick={() => pickedIso && snooze.mutate({ until: pickedIso })}
              >
                {w.snoozeAt}
              </button>
            </div>
          </details>
        </div>
      )}
      <PageError error={act.error ?? snooze.error ?? assign.error} words={{ ...e, ...w }} />
    </div>
  )
}
