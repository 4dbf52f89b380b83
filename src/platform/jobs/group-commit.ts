/**
 * Group commit: items submitted while a batch is being written wait for the next batch, so an idle system writes
 * each item at once (after the current tick, to gather the ones submitted together) and a busy one writes many
 * per statement. No timer delays anything unless `gatherMs` asks for it: then an idle system's first item waits that
 * long for others to join it. `write` answers item by item, in order; if it throws, every item of that batch is
 * rejected with the error.
 */
export function groupCommit<T, R>(
  write: (items: T[]) => Promise<R[]>,
  options: { maxBatch?: number; gatherMs?: number } = {},
): (item: T) => Promise<R> {
  const maxBatch = options.maxBatch ?? 500
  let waiting: Array<{ item: T; resolve: (result: R) => void; reject: (error: unknown) => void }> = []
  let writing = false

  const flush = async () => {
    while (waiting.length > 0) {
      const batch = waiting.slice(0, maxBatch)
      waiting = waiting.slice(batch.length)
      try {
        const results = await write(batch.map((w) => w.item))
        for (const [i, w] of batch.entries()) w.resolve(results[i])
      } catch (error) {
        for (const w of batch) w.reject(error)
      }
    }
    writing = false
  }

  return (item) =>
    new Promise<R>((resolve, reject) => {
      waiting.push({ item, resolve, reject })
      if (writing) return
      writing = true
      if (options.gatherMs) setTimeout(flush, options.gatherMs)
      else setImmediate(flush)
    })
}
