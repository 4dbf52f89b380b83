import DataLoader from 'dataloader'
import type { Db } from './client.ts'

/**
 * A lookup whose calls of one turn of the event loop (the requests that arrived together) go to the database as one
 * statement: `load` answers the keys in their order. Under load the statement and its round trip, not the row, cost
 * most; nothing is remembered between turns, so every call reads what is committed. Per database, never a
 * transaction (a batch is shared by requests that hold no transaction).
 *
 * `grouped`: at most one batch is on its way to the database at a time; the calls that arrive meanwhile, over as many
 * turns as it takes, go together as the next one (as a group commit does for writes). A busy server's requests then
 * share a statement however their turns fall, for at most one statement's wait; an idle one's go at once.
 */
export function perTick<K, V>(
  load: (db: Db, keys: readonly K[]) => Promise<V[]>,
  options: { maxBatchSize?: number; grouped?: boolean } = {},
) {
  const maxBatchSize = options.maxBatchSize ?? 200
  const loaders = new WeakMap<Db, DataLoader<K, V>>()
  return (db: Db, key: K): Promise<V> => {
    let loader = loaders.get(db)
    if (!loader) {
      loader = options.grouped ? groupedLoader(db, load, maxBatchSize) : turnLoader(db, load, maxBatchSize)
      loaders.set(db, loader)
    }
    return loader.load(key)
  }
}

function turnLoader<K, V>(db: Db, load: (db: Db, keys: readonly K[]) => Promise<V[]>, maxBatchSize: number) {
  return new DataLoader<K, V>((keys) => load(db, keys), {
    cache: false,
    maxBatchSize,
    batchScheduleFn: (run) => setImmediate(run),
  })
}

function groupedLoader<K, V>(db: Db, load: (db: Db, keys: readonly K[]) => Promise<V[]>, maxBatchSize: number) {
  let loading = false
  const waiting: Array<() => void> = []
  const next = () => {
    const run = waiting.shift()
    if (run) run()
    else loading = false
  }
  return new DataLoader<K, V>(
    async (keys) => {
      try {
        return await load(db, keys)
      } finally {
        next()
      }
    },
    {
      cache: false,
      maxBatchSize,
      // a batch starts when none is loading; else it keeps gathering until the one loading is answered
      batchScheduleFn: (run) =>
        setImmediate(() => {
          if (loading) waiting.push(run)
          else {
            loading = true
            run()
          }
        }),
    },
  )
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether a key can go into a batch's `::uuid[]` parameter (one malformed id would fail the whole batch). */
export const isUuidKey = (value: string) => UUID.test(value)
