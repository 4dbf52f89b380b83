import type { Database } from '../db/client.ts'

/** Notified at the commit of any change to accounts, api_keys or plans (migration 0026's triggers). */
export const CREDENTIALS_CHANNEL = 'herold_credentials'

export interface CredentialCacheOptions {
  /** how long an entry serves while the notification connection is up (a safety net; changes clear it at once) */
  maxAgeMs?: number
  /** how long an entry serves while the notification connection is down: changes must show within 1 second */
  fallbackTtlMs?: number
  /** entries kept at most; the oldest go first */
  maxEntries?: number
  now?: () => number
}

/** The caches of this process, cleared directly by a change made here (before its notification arrives). */
const running = new Set<{ clear(): void }>()

/** A change to keys, accounts or plans was committed by this process: its caches drop everything now. */
export function credentialsChangedHere(): void {
  for (const cache of running) cache.clear()
}

interface Entry<T> {
  value: T
  at: number
}

/**
 * What a credential resolves to, per process, keyed by the credential's hash. Every change that matters clears it on
 * every process within a second: a NOTIFY at the change's commit (PostgreSQL between processes; the embedded
 * database delivers its own notifications in-process). While the notification connection is down, entries live
 * only `fallbackTtlMs` (counted from the loss for entries read before it), so a lost connection degrades to a short
 * TTL, never to stale access; when it comes back (notifications may have been missed) everything is dropped.
 *
 * A lookup that started before a change and finishes after it must not store what it read: each clear bumps a
 * generation, and a load stores its value only when the generation it started in is still current.
 */
export class CredentialCache<T> {
  readonly #entries = new Map<string, Entry<T>>()
  readonly #maxAgeMs: number
  readonly #fallbackTtlMs: number
  readonly #maxEntries: number
  readonly #now: () => number
  #generation = 0
  #listening = false
  /** when the notification connection was lost: entries read before it serve at most the fallback TTL after it */
  #lostAt = 0
  #unlisten: (() => Promise<void>) | null = null

  constructor(options: CredentialCacheOptions = {}) {
    this.#maxAgeMs = options.maxAgeMs ?? 60_000
    this.#fallbackTtlMs = options.fallbackTtlMs ?? 500
    this.#maxEntries = options.maxEntries ?? 10_000
    this.#now = options.now ?? Date.now
  }

  /** Starts listening for changes; until it has, entries live only the fallback TTL. */
  async start(database: Database): Promise<void> {
    this.#unlisten = await database.listen(
      CREDENTIALS_CHANNEL,
      () => {
        // a change, or the connection is back after a loss (changes may have been missed): either way, drop all
        this.#listening = true
        this.clear()
      },
      {
        onLost: () => {
          // what was committed before the loss was heard; what is committed from now on shows within the TTL
          this.#listening = false
          this.#lostAt = this.#now()
        },
      },
    )
    this.#listening = true
    running.add(this)
    this.clear()
  }

  async stop(): Promise<void> {
    running.delete(this)
    this.#listening = false
    const unlisten = this.#unlisten
    this.#unlisten = null
    await unlisten?.()
  }

  get listening(): boolean {
    return this.#listening
  }

  clear(): void {
    this.#generation++
    this.#entries.clear()
  }

  #fresh(entry: Entry<T>): boolean {
    const age = this.#now() - entry.at
    if (age >= this.#maxAgeMs) return false
    return this.#listening || this.#now() - Math.max(entry.at, this.#lostAt) < this.#fallbackTtlMs
  }

  /** The cached value while it is fresh, synchronously; undefined when get() would load it. */
  peek(key: string): T | undefined {
    const entry = this.#entries.get(key)
    return entry && this.#fresh(entry) ? entry.value : undefined
  }

  /** The cached value, or load()'s (stored when no change happened meanwhile); undefined from load is not cached. */
  async get(key: string, load: () => Promise<T | undefined>): Promise<T | undefined> {
    const entry = this.#entries.get(key)
    if (entry && this.#fresh(entry)) return entry.value
    const generation = this.#generation
    const started = this.#now()
    const value = await load()
    if (value !== undefined && generation === this.#generation) {
      this.#entries.delete(key)
      if (this.#entries.size >= this.#maxEntries) {
        const oldest = this.#entries.keys().next()
        if (!oldest.done) this.#entries.delete(oldest.value)
      }
      this.#entries.set(key, { value, at: started })
    }
    return value
  }
}
