import type { Database } from './client.ts'

/**
 * Values of rarely changing rows kept in this process, on the embedded database only: there this process is the only
 * writer (the CLI sends its commands to the server), and the NOTIFY a trigger sends at the commit of any change on
 * `channel` is delivered before the writing call returns, so the cache is dropped before anything can read it stale.
 * On PostgreSQL other processes write and their notifications arrive later: there every call loads (see perTick for
 * what makes that cheap). A load that started before a change stores nothing (a generation per clear).
 */
export class NotifiedCache<V> {
  readonly #entries = new Map<string, V>()
  readonly #database: Pick<Database, 'kind' | 'listen'>
  readonly #channel: string
  readonly #maxEntries: number
  #generation = 0
  #listening: 'no' | 'starting' | 'yes' = 'no'

  constructor(database: Pick<Database, 'kind' | 'listen'>, channel: string, maxEntries = 10_000) {
    this.#database = database
    this.#channel = channel
    this.#maxEntries = maxEntries
  }

  /** The value under `key`, from the cache or from `load` (stored when `keep` says so). */
  async get(key: string, load: () => Promise<V>, keep: (value: V) => boolean = () => true): Promise<V> {
    if (this.#listening === 'yes') {
      const hit = this.#entries.get(key)
      if (hit !== undefined) return hit
    } else if (this.#listening === 'no' && this.#database.kind === 'pglite') {
      this.#startListening()
    }
    const generation = this.#generation
    const value = await load()
    if (this.#listening === 'yes' && generation === this.#generation && keep(value)) this.#store(key, value)
    return value
  }

  #store(key: string, value: V) {
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next().value
      if (oldest !== undefined) this.#entries.delete(oldest)
    }
    this.#entries.set(key, value)
  }

  #startListening() {
    this.#listening = 'starting'
    this.#database
      .listen(this.#channel, () => {
        this.#generation++
        this.#entries.clear()
      })
      .then(
        () => {
          this.#generation++
          this.#listening = 'yes'
        },
        () => {
          this.#listening = 'no'
        },
      )
  }
}
