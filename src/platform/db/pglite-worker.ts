// The embedded database on a thread of its own: started by PGliteThread (pglite-thread.ts) as a worker, it opens
// PGlite on the data directory it is given and answers that thread's requests (the protocol is pglite-thread.ts's).
// Rows are parsed here by PGlite's own parsers (Date, Uint8Array, numbers, JSON) and cross by structured clone.
import { parentPort, workerData } from 'node:worker_threads'
import { messages, PGlite, type QueryOptions, type Transaction } from '@electric-sql/pglite'
import type { ThreadReply, ThreadRequest, ThreadStart, WireError } from './pglite-thread.ts'
import { pgliteOptions } from './pglite-options.ts'

const port = parentPort
if (!port) throw new Error('pglite-worker.ts runs as a worker thread (see pglite-thread.ts)')
const start = workerData as ThreadStart

/** open transactions by their id: PGlite's own, held open until the main thread ends them */
const transactions = new Map<number, { tx: Transaction; end: (commit: boolean) => void }>()
const listeners = new Map<number, () => Promise<void>>()
/** the marker that makes PGlite roll a transaction back (a rejection of its callback) */
const ROLLBACK = Symbol('rollback')

function keepText(value: string): string {
  return value
}

function queryOptions(request: { rowMode?: 'array' | 'object'; rawTypes?: number[] }): QueryOptions | undefined {
  if (!request.rowMode && !request.rawTypes) return undefined
  const options: QueryOptions = {}
  if (request.rowMode) options.rowMode = request.rowMode
  if (request.rawTypes) options.parsers = Object.fromEntries(request.rawTypes.map((type) => [type, keepText]))
  return options
}

/** PostgreSQL's fields of an error (code, constraint, detail...) as plain values: an Error's own fields do not clone. */
function wireError(error: unknown): WireError {
  if (!(error instanceof Error)) return { message: String(error), name: 'Error', fields: {} }
  const fields: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(error)) {
    if (value === null || (typeof value !== 'object' && typeof value !== 'function')) fields[key] = value
  }
  return { message: error.message, name: error.name, fields, database: error instanceof messages.DatabaseError }
}

function txOf(id: number | undefined): Transaction | undefined {
  if (id === undefined) return undefined
  const open = transactions.get(id)
  if (!open) throw new Error(`transaction ${id} is not open`)
  return open.tx
}

async function handle(client: PGlite, request: ThreadRequest): Promise<unknown> {
  switch (request.op) {
    case 'query': {
      const on = txOf(request.tx) ?? client
      return on.query(request.sql, request.params, queryOptions(request))
    }
    case 'exec': {
      const on = txOf(request.tx) ?? client
      return on.exec(request.sql, queryOptions(request))
    }
    case 'begin':
      return new Promise((began, failed) => {
        const done = client.transaction(
          (tx) =>
            new Promise<void>((commit, rollback) => {
              transactions.set(request.id, {
                tx,
                end: (ok) => (ok ? commit() : rollback(ROLLBACK)),
              })
              began(undefined)
            }),
        )
        // BEGIN failing rejects `done` before the callback runs; the end's result is the reply to 'end'
        ended.set(request.id, done)
        done.catch((error) => {
          if (!transactions.has(request.id)) failed(error)
        })
      })
    case 'end': {
      const open = transactions.get(request.tx)
      const done = ended.get(request.tx)
      if (!open || !done) throw new Error(`transaction ${request.tx} is not open`)
      open.end(request.commit)
      try {
        await done
      } catch (error) {
        if (error !== ROLLBACK) throw error
      } finally {
        transactions.delete(request.tx)
        ended.delete(request.tx)
      }
      return undefined
    }
    case 'rollback': {
      const tx = txOf(request.tx)
      await tx?.rollback()
      return undefined
    }
    case 'listen': {
      const id = request.id
      const unlisten = await client.listen(request.channel, (payload) => {
        port?.postMessage({ notify: id, payload } satisfies ThreadReply)
      })
      listeners.set(id, unlisten)
      return undefined
    }
    case 'unlisten': {
      const unlisten = listeners.get(request.listener)
      listeners.delete(request.listener)
      await unlisten?.()
      return undefined
    }
    case 'dump': {
      const dump = await client.dumpDataDir('gzip')
      return new Uint8Array(await dump.arrayBuffer())
    }
    case 'close':
      await client.close()
      return undefined
  }
}

/** the promises of open transactions' PGlite calls, which settle when the transaction ends */
const ended = new Map<number, Promise<unknown>>()

try {
  const client = await PGlite.create(start.dataDir, pgliteOptions())
  port.on('message', (request: ThreadRequest) => {
    handle(client, request).then(
      (value) => {
        const transfer = value instanceof Uint8Array ? [value.buffer as ArrayBuffer] : []
        port.postMessage({ id: request.id, value } satisfies ThreadReply, transfer)
      },
      (error: unknown) => port.postMessage({ id: request.id, error: wireError(error) } satisfies ThreadReply),
    )
  })
  port.postMessage({ id: 0, value: undefined } satisfies ThreadReply)
} catch (error) {
  port.postMessage({ id: 0, error: wireError(error) } satisfies ThreadReply)
}
