import DataLoader from 'dataloader'
import type { Db } from './client.ts'

/**
 * A lookup whose calls of one turn of the event loop (the requests that arrived together) go to the database as one
 * statement: `load` answers the keys in their order. Under load the statement and its round trip, not the row, cost
 * most; nothing is remembered between turns, so every call reads what is committed. Per database, never a
 * transaction (a batch is shared by requests that hold no transaction).
 */
export function perTick<K, V>(load: (db: Db, keys: readonly K[]) => Promise<V[]>, maxBatchSize = 200) {
  const loaders = new WeakMap<Db, DataLoader<K, V>>()
  return (db: Db, key: K): Promise<V> => {
    let loader = loaders.get(db)
    if (!loader) {
      loader = new DataLoader<K, V>((keys) => load(db, keys), {
        cache: false,
        maxBatchSize,
        batchScheduleFn: (run) => setImmediate(run),
      })
      loaders.set(db, loader)
    }
    return loader.load(key)
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether a key can go into a batch's `::uuid[]` parameter (one malformed id would fail the whole batch). */
export const isUuidKey = (value: string) => UUID.test(value)
