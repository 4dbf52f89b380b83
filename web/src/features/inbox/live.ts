import { type QueryClient, type QueryKey, useQueryClient } from '@tanstack/react-query'
import { useEffect, useSyncExternalStore } from 'react'
import { inboxPageQuery } from '../../ui/inbox-query.ts'

// The inbox's live updates: one EventSource per page on GET /app/events (opened by the frame for a member who may read
// the inbox). Each event names what changed; the queries that show it are refetched. While the stream is down the
// inbox's queries poll (usePolling), as they did before the stream.

/** One change as the server names it (src/modules/inbox/inbox.live.ts). */
export interface InboxChange {
  type: 'message' | 'message_status' | 'conversation' | 'note' | 'assignment' | 'status' | 'read'
  conversation_id: string
  message_id?: string
  actor_id?: string | null
}

/** The first parts of every query key the inbox shows: `resync` refetches them all. */
const INBOX_KEYS = new Set<unknown>([inboxPageQuery.queryKey[0], 'messages', 'conversation', 'mentions'])

/**
 * The queries a change makes stale: the list (and the frame's unread count, which shares it), the thread; a note
 * also the member's mentions (it may mention them, or they marked theirs read on another page).
 */
export function staleKeys(change: InboxChange): QueryKey[] {
  const keys: QueryKey[] = [inboxPageQuery.queryKey, ['conversation', change.conversation_id]]
  if (change.type === 'message' || change.type === 'message_status' || change.type === 'note') {
    keys.push(['messages', change.conversation_id])
  }
  if (change.type === 'note') keys.push(['mentions'])
  return keys
}

// whether the stream is up, for every component of the page
let connected = false
const listeners = new Set<() => void>()
function setConnected(value: boolean) {
  if (connected === value) return
  connected = value
  for (const listener of listeners) listener()
}
const subscribe = (listener: () => void) => {
  listeners.add(listener)
  return () => listeners.delete(listener)
}

/** Whether the live stream is up. */
export function useLiveConnected(): boolean {
  return useSyncExternalStore(
    subscribe,
    () => connected,
    () => false,
  )
}

/** A query's refetchInterval: none while the stream is up, `ms` while it is down. */
export function usePolling(ms: number): number | false {
  return useLiveConnected() ? false : ms
}

/** refetches at most this often (a burst of events is one refetch) */
const COALESCE_MS = 250
/** after a refused or ended stream: the first wait before opening it again, doubled up to the last */
const BACKOFF_MS = [2000, 5000, 15_000, 60_000]

/**
 * Opens the live stream while `enabled` (a signed-in member with inbox:read) and keeps it open: the browser
 * reconnects a dropped stream itself with Last-Event-ID (the server replays what was missed, or says `resync`); a
 * refused one (429, 503, a lost session) is opened again after a pause; `end` (signed out, expired) stops it.
 */
export function useLiveInbox(enabled: boolean): void {
  const queryClient = useQueryClient()
  useEffect(() => {
    if (!enabled || typeof EventSource === 'undefined') return
    return openLive(queryClient)
  }, [enabled, queryClient])
}

function openLive(queryClient: QueryClient): () => void {
  let source: EventSource | null = null
  let stopped = false
  let attempt = 0
  let retry: ReturnType<typeof setTimeout> | null = null
  // whether this stream got an event with an id: then the browser's reconnection resumes from it
  let resumable = false

  const stale = new Map<string, QueryKey>()
  let all = false
  let flushAt = 0
  let flushing: ReturnType<typeof setTimeout> | null = null
  const flush = () => {
    flushing = null
    flushAt = Date.now()
    if (all) {
      void queryClient.invalidateQueries({ predicate: (query) => INBOX_KEYS.has(query.queryKey[0]) })
    } else {
      for (const queryKey of stale.values()) void queryClient.invalidateQueries({ queryKey })
    }
    all = false
    stale.clear()
  }
  const later = () => {
    if (!flushing) flushing = setTimeout(flush, Math.max(0, flushAt + COALESCE_MS - Date.now()))
  }
  const refetch = (changes: InboxChange[]) => {
    for (const change of changes) for (const key of staleKeys(change)) stale.set(JSON.stringify(key), key)
    later()
  }
  const refetchAll = () => {
    all = true
    later()
  }

  const open = () => {
    retry = null
    if (stopped) return
    const next = new EventSource('/app/events', { withCredentials: true })
    source = next
    next.addEventListener('ready', (event) => {
      attempt = 0
      setConnected(true)
      const { resumed } = JSON.parse((event as MessageEvent).data) as { resumed: boolean }
      // a new stream (or one the server could not resume): what happened before it opened is fetched again
      if (!resumed && !resumable) refetchAll()
    })
    next.addEventListener('inbox', (event) => {
      resumable = true
      refetch((JSON.parse((event as MessageEvent).data) as { changes: InboxChange[] }).changes)
    })
    next.addEventListener('resync', (event) => {
      if ((event as MessageEvent).lastEventId) resumable = true
      refetchAll()
    })
    next.addEventListener('end', (event) => {
      const { reason } = JSON.parse((event as MessageEvent).data) as { reason: string }
      next.close()
      setConnected(false)
      // a shut-down server is back soon (another process takes it meanwhile); a session that ended is not
      if (reason === 'shutdown') again()
    })
    next.onerror = () => {
      setConnected(false)
      // a dropped stream is reopened by the browser (with Last-Event-ID when it had one); a refused one is not
      if (next.readyState === EventSource.CLOSED) again()
    }
  }
  const again = () => {
    source?.close()
    if (stopped || retry) return
    retry = setTimeout(open, BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)])
    attempt++
  }

  open()
  return () => {
    stopped = true
    if (retry) clearTimeout(retry)
    if (flushing) clearTimeout(flushing)
    source?.close()
    setConnected(false)
  }
}
