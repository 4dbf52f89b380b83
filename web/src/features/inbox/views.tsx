import { useQuery } from '@tanstack/react-query'
import { useEffect, useState } from 'react'
import { app } from '../../api/client.ts'
import { fill, useWords } from '../../ui/i18n.tsx'
import { apiQuery } from '../../ui/query.ts'
import { viewWords } from './views-words.ts'

// The inbox's views (mine, unassigned, all open, snoozed, closed) with their counts, and the search box. Their
// queries sit under the inbox page's key ('inbox-page'), so every live change that refetches the list refetches them.

export const VIEWS = ['mine', 'unassigned', 'all', 'snoozed', 'closed'] as const
export type InboxView = (typeof VIEWS)[number]
/** a count the server stopped at (GET /app/inbox/counts) */
const COUNT_CAP = 10_000

/** One view's conversations matching the search, latest activity first. */
export const inboxViewQuery = (view: InboxView, q: string) =>
  apiQuery(['inbox-page', 'view', view, q], () =>
    app.GET('/app/conversations', { params: { query: { limit: 100, view, ...(q ? { q } : {}) } } }),
  )

export const inboxCountsQuery = apiQuery(['inbox-page', 'counts'], () => app.GET('/app/inbox/counts'))

/** A value kept for the browser tab (the list and a thread are two pages: the view stays when one is opened). */
function useTabState<T extends string>(key: string, initial: T, allowed?: readonly T[]): [T, (value: T) => void] {
  const [value, setValue] = useState<T>(() => {
    const stored = typeof sessionStorage === 'undefined' ? null : sessionStorage.getItem(key)
    return stored !== null && (!allowed || allowed.includes(stored as T)) ? (stored as T) : initial
  })
  const set = (next: T) => {
    setValue(next)
    sessionStorage.setItem(key, next)
  }
  return [value, set]
}

/** The chosen view and search text (typed text reaches the query after a pause). */
export function useInboxView() {
  const [view, setView] = useTabState<InboxView>('herold.inbox.view', 'all', VIEWS)
  const [typed, setTyped] = useTabState<string>('herold.inbox.q', '')
  const [q, setQ] = useState(typed.trim())
  useEffect(() => {
    const timer = setTimeout(() => setQ(typed.trim()), 300)
    return () => clearTimeout(timer)
  }, [typed])
  return { view, setView, typed, setTyped, q }
}

/** The view tabs with their counts (updated live) and the search box. */
export function ViewTabs({
  view,
  onView,
  typed,
  onType,
  refetchInterval,
}: {
  view: InboxView
  onView: (view: InboxView) => void
  typed: string
  onType: (text: string) => void
  refetchInterval: number | false
}) {
  const w = useWords(viewWords)
  const counts = useQuery({ ...inboxCountsQuery, refetchInterval }).data?.counts
  const shown = (n: number | null | undefined) =>
    n === null || n === undefined ? '' : n >= COUNT_CAP ? `${COUNT_CAP}+` : String(n)
  return (
    <div className="inbox-views">
      <div className="view-tabs" role="tablist" aria-label={w.views}>
        {VIEWS.filter((v) => v !== 'mine' || counts?.mine !== null).map((v) => (
          <button
            key={v}
            type="button"
            role="tab"
            aria-selected={view === v}
            data-view={v}
            className={view === v ? 'view-tab active' : 'view-tab'}
            onClick={() => onView(v)}
          >
            {w[`view_${v}`]}
            {counts && <span className="view-count">{shown(counts[v])}</span>}
          </button>
        ))}
      </div>
      <input
        type="search"
        className="inbox-search"
        aria-label={w.search}
        placeholder={w.searchHint}
        maxLength={100}
        value={typed}
        onChange={(event) => onType(event.target.value)}
      />
    </div>
  )
}

/** What an empty view says. */
export function EmptyView({ q }: { q: string }) {
  const w = useWords(viewWords)
  return <p className="empty">{q ? fill(w.noneFound, { q }) : w.noneInView}</p>
}
