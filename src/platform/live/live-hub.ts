import type { ServerResponse } from 'node:http'
import type { Clock } from '../clock.ts'
import type { Database } from '../db/client.ts'
import { AppError } from '../http/errors.ts'
import { LIVE_CHANNEL, type LiveNotice } from './publish.ts'

/** Who holds a stream: a member's session in one account. */
export interface LiveOwner {
  accountId: string
  userId: string
  sessionId: string
  /** the session's end: the stream closes then (checked at each heartbeat, no database work) */
  expiresAt: Date
}

export interface LiveLimits {
  /** open streams of one member in one account (their tabs); one more is 429 */
  perMember: number
  /** open streams of one account in this process */
  perAccount: number
  /** open streams of this process */
  perProcess: number
  /** notifications kept for Last-Event-ID (all accounts, in commit order) */
  replayBuffer: number
  /** a comment line on every stream this often, so proxies keep it open and a dead peer is found */
  heartbeatMs: number
  /** a stream whose unsent bytes grow beyond this (a reader that does not read) is closed; it comes back and replays */
  maxUnsentBytes: number
  /**
   * events heard within this long are written to a stream together, in one write (the events stay separate, each with
   * its id): a burst of 100 messages a second to an account with 500 open streams is 500 writes per flush rather than
   * 500 per message
   */
  flushMs: number
}

export const DEFAULT_LIVE_LIMITS: LiveLimits = {
  perMember: 10,
  perAccount: 1000,
  perProcess: 20_000,
  replayBuffer: 10_000,
  heartbeatMs: 25_000,
  maxUnsentBytes: 1024 * 1024,
  flushMs: 25,
}

interface Stream {
  owner: LiveOwner
  raw: ServerResponse
}

/** A heard change as every stream of its account gets it: the bytes of its event, built once. */
interface Heard {
  id: string
  accountId: string
  frame: string
}

/** How long a browser waits before it reconnects (the `retry:` of the stream) */
const RETRY_MS = 3000

/**
 * The live streams of one process (Server-Sent Events, GET /app/events). It LISTENs on one channel (publish.ts) and
 * fans every notification out in memory to the open streams of its account, so an open stream costs no database work
 * while nothing happens; what is heard within `flushMs` goes to a stream in one write. Every notification is kept in a ring buffer in the order it was heard (commit order, the
 * same on every process); a stream reopened with Last-Event-ID gets its account's events after that id, or `resync`
 * when the id is no longer (or never was) in this process's buffer. Ended sessions close their streams; shutdown
 * closes every stream.
 */
export class LiveHub {
  readonly #database: Pick<Database, 'listen'>
  readonly #clock: Clock
  readonly #limits: LiveLimits
  readonly #byAccount = new Map<string, Set<Stream>>()
  readonly #perMember = new Map<string, number>()
  #count = 0
  /** the ring: heard[seq % size]; positions by id */
  readonly #ring: Array<Heard | undefined>
  readonly #positions = new Map<string, number>()
  #next = 0
  #listening: Promise<() => Promise<void>> | null = null
  #heartbeat: NodeJS.Timeout | null = null
  #closed = false
  /** frames heard since the last flush, by account, in the order heard */
  readonly #unsent = new Map<string, string[]>()
  #flushing: NodeJS.Timeout | null = null

  constructor(database: Pick<Database, 'listen'>, clock: Clock, limits: Partial<LiveLimits> = {}) {
    this.#database = database
    this.#clock = clock
    this.#limits = { ...DEFAULT_LIVE_LIMITS, ...limits }
    this.#ring = new Array(this.#limits.replayBuffer)
  }

  /** open streams of this process */
  get size(): number {
    return this.#count
  }

  /** Refuses a stream beyond the limits (429 too_many_streams) or after shutdown began (503). */
  admit(owner: LiveOwner): void {
    if (this.#closed) throw new AppError(503, 'shutting_down', 'The server is shutting down; reconnect in a moment')
    const ofAccount = this.#byAccount.get(owner.accountId)?.size ?? 0
    const ofMember = this.#perMember.get(memberKey(owner)) ?? 0
    if (
      ofMember >= this.#limits.perMember ||
      ofAccount >= this.#limits.perAccount ||
      this.#count >= this.#limits.perProcess
    ) {
      throw new AppError(
        429,
        'too_many_streams',
        `Too many live streams open (at most ${this.#limits.perMember} per member); close another tab of the console`,
        { key: 'zu_viele_streams' },
      )
    }
  }

  /** Starts listening once for the process; resolves when notifications are heard. */
  ready(): Promise<unknown> {
    this.#listening ??= this.#database.listen(LIVE_CHANNEL, (payload) => this.#hear(payload), {
      onLost: () => this.#forget(),
    })
    return this.#listening
  }

  /**
   * Serves an admitted stream on a raw response (the route hijacked it): the head, what the member missed after
   * `lastEventId` (or `resync` when that is unknown here), then `ready`; then every event of the account until the
   * peer goes, the session ends or the server shuts down.
   */
  attach(owner: LiveOwner, raw: ServerResponse, lastEventId: string | undefined): void {
    // what was heard before this stream came is in the ring (its replay) and goes to the others now, not to it twice
    this.#flush()
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store, no-transform',
      connection: 'keep-alive',
      // nginx and other proxies hand each event on at once
      'x-accel-buffering': 'no',
    })
    raw.socket?.setNoDelay(true)
    const stream: Stream = { owner, raw }
    let streams = this.#byAccount.get(owner.accountId)
    if (!streams) {
      streams = new Set()
      this.#byAccount.set(owner.accountId, streams)
    }
    streams.add(stream)
    this.#count++
    this.#perMember.set(memberKey(owner), (this.#perMember.get(memberKey(owner)) ?? 0) + 1)
    raw.on('close', () => this.#remove(stream))
    this.#startHeartbeat()

    let head = `retry: ${RETRY_MS}\n\n`
    let resumed = false
    if (lastEventId) {
      const missed = this.#after(owner.accountId, lastEventId)
      if (missed) {
        head += missed.join('')
        resumed = true
      } else head += 'event: resync\ndata: {}\n\n'
    }
    head += `event: ready\ndata: ${JSON.stringify({ resumed })}\n\n`
    this.#write(stream, head)
  }

  /** Closes every stream (shutdown): each gets `event: end` with the reason `shutdown`, so the browser reconnects later. */
  async close(): Promise<void> {
    this.#closed = true
    this.#flush()
    for (const streams of this.#byAccount.values()) {
      for (const stream of streams) this.#end(stream, 'shutdown')
    }
    if (this.#heartbeat) clearInterval(this.#heartbeat)
    this.#heartbeat = null
    const listening = this.#listening
    this.#listening = null
    if (listening) await (await listening.catch(() => async () => {}))()
  }

  /** The frames of an account's events heard after `id`, or null when `id` is not in the buffer (or another account's). */
  #after(accountId: string, id: string): string[] | null {
    const at = this.#positions.get(id)
    if (at === undefined) return null
    const size = this.#ring.length
    if (this.#ring[at % size]?.accountId !== accountId) return null
    const frames: string[] = []
    for (let seq = at + 1; seq < this.#next; seq++) {
      const heard = this.#ring[seq % size]
      if (heard?.accountId === accountId) frames.push(heard.frame)
    }
    return frames
  }

  #hear(payload: string | undefined): void {
    // heard again after a lost connection: what was said meanwhile is unknown, so everything is refetched
    if (payload === undefined) {
      this.#flush()
      this.#forget()
      for (const streams of this.#byAccount.values()) {
        for (const stream of streams) this.#write(stream, 'event: resync\ndata: {}\n\n')
      }
      return
    }
    let notice: LiveNotice
    try {
      notice = JSON.parse(payload) as LiveNotice
    } catch {
      return
    }
    if ('e' in notice) {
      this.#flush()
      this.#endSessions(notice.e)
      return
    }
    const frame =
      'r' in notice
        ? `id: ${notice.i}\nevent: resync\ndata: {}\n\n`
        : `id: ${notice.i}\nevent: ${notice.k}\ndata: ${JSON.stringify(notice.d)}\n\n`
    this.#keep({ id: notice.i, accountId: notice.a, frame })
    if (!this.#byAccount.has(notice.a)) return
    const unsent = this.#unsent.get(notice.a)
    if (unsent) unsent.push(frame)
    else this.#unsent.set(notice.a, [frame])
    this.#flushing ??= setTimeout(() => this.#flush(), this.#limits.flushMs).unref()
  }

  /** Writes what was heard since the last flush: each account's frames to each of its streams, in one write. */
  #flush(): void {
    if (this.#flushing) clearTimeout(this.#flushing)
    this.#flushing = null
    for (const [accountId, frames] of this.#unsent) {
      const streams = this.#byAccount.get(accountId)
      if (!streams) continue
      const text = frames.length === 1 ? frames[0] : frames.join('')
      for (const stream of streams) this.#write(stream, text)
    }
    this.#unsent.clear()
  }

  #keep(heard: Heard): void {
    const size = this.#ring.length
    if (size === 0) return
    const slot = this.#next % size
    const old = this.#ring[slot]
    if (old) this.#positions.delete(old.id)
    this.#ring[slot] = heard
    this.#positions.set(heard.id, this.#next)
    this.#next++
  }

  /** The buffer is emptied: an id heard before is unknown from now on (its stream gets `resync`). */
  #forget(): void {
    this.#ring.fill(undefined)
    this.#positions.clear()
  }

  #endSessions(ended: { u: string | null; a: string | null; s: string | null }): void {
    const accounts = ended.a ? [this.#byAccount.get(ended.a)] : [...this.#byAccount.values()]
    for (const streams of accounts) {
      if (!streams) continue
      for (const stream of streams) {
        const { owner } = stream
        if (ended.s ? owner.sessionId === ended.s : owner.userId === ended.u) this.#end(stream, 'signed_out')
      }
    }
  }

  #write(stream: Stream, text: string): void {
    const { raw } = stream
    if (raw.destroyed || raw.writableEnded) return
    // a reader that does not read: it is closed rather than let its backlog grow (it comes back with Last-Event-ID)
    if (raw.writableLength > this.#limits.maxUnsentBytes) {
      raw.destroy()
      return
    }
    raw.write(text)
  }

  #end(stream: Stream, reason: 'shutdown' | 'signed_out' | 'expired'): void {
    this.#write(stream, `event: end\ndata: ${JSON.stringify({ reason })}\n\n`)
    stream.raw.end()
    this.#remove(stream)
  }

  #remove(stream: Stream): void {
    const streams = this.#byAccount.get(stream.owner.accountId)
    if (!streams?.delete(stream)) return
    if (streams.size === 0) this.#byAccount.delete(stream.owner.accountId)
    this.#count--
    const key = memberKey(stream.owner)
    const left = (this.#perMember.get(key) ?? 1) - 1
    if (left > 0) this.#perMember.set(key, left)
    else this.#perMember.delete(key)
    if (this.#count === 0 && this.#heartbeat) {
      clearInterval(this.#heartbeat)
      this.#heartbeat = null
    }
  }

  /** One timer for the process while streams are open: a comment on each, and the end of expired sessions. */
  #startHeartbeat(): void {
    if (this.#heartbeat) return
    this.#heartbeat = setInterval(() => {
      const now = this.#clock.now().getTime()
      for (const streams of this.#byAccount.values()) {
        for (const stream of streams) {
          if (stream.owner.expiresAt.getTime() <= now) this.#end(stream, 'expired')
          else this.#write(stream, ':\n\n')
        }
      }
    }, this.#limits.heartbeatMs)
    this.#heartbeat.unref()
  }
}

function memberKey(owner: LiveOwner): string {
  return `${owner.accountId}/${owner.userId}`
}
