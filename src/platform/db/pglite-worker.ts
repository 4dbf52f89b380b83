// The embedded database on a thread of its own: started by PGliteThread (pglite-thread.ts) as a worker, it opens
// PGlite on the data directory it is given and answers that thread's requests (the protocol is pglite-thread.ts's).
// Rows are parsed here by PGlite's own parsers (Date, Uint8Array, numbers, JSON) and cross by structured clone.
import { parentPort, workerData } from 'node:worker_threads'
import { messages, PGlite, type QueryOptions, type Transaction } from '@electric-sql/pglite'
import { pgliteOptions } from './pglite-options.ts'
import type { ThreadReply, ThreadRequest, ThreadStart, WireError } from './pglite-thread.ts'

const port = parentPort
if (!port) throw new Error('pglite-worker.ts runs as a worker thread (see pglite-thread.ts)')
const start = workerData as ThreadStart

/**
 * Open transactions by their id: PGlite's own, held open until the main thread ends them. An entry exists from the
 * 'begin' on, so the transaction's statements, sent right behind it, wait for its BEGIN here.
 */
interface OpenTransaction {
  tx: Promise<Transaction>
  done: Promise<void>
  end?: (commit: boolean) => void
}
const transactions = new Map<number, OpenTransaction>()
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

async function txOf(id: number | undefined): Promise<Transaction | undefined> {
  if (id === undefined) return undefined
  const open = transactions.get(id)
  if (!open) throw new Error(`transaction ${id} is not open`)
  return open.tx
}

function begin(client: PGlite, id: number): Promise<Transaction> {
  let opened!: (tx: Transaction) => void
  let failed!: (error: unknown) => void
  const entry = {} as OpenTransaction
  entry.tx = new Promise<Transaction>((resolve, reject) => {
    opened = resolve
    failed = reject
  })
  entry.done = client.transaction(
    (tx) =>
      new Promise<void>((commit, rollback) => {
        entry.end = (ok) => (ok ? commit() : rollback(ROLLBACK))
        opened(tx)
      }),
  )
  // BEGIN failing rejects `done` before the callback runs: the transaction's statements fail with its error (later
  // rejections, at its end, are the reply to 'end')
  entry.done.catch(failed)
  entry.tx.catch(() => transactions.delete(id))
  transactions.set(id, entry)
  return entry.tx
}

async function handle(client: PGlite, request: ThreadRequest): Promise<unknown> {
  switch (request.op) {
    case 'query': {
      const on = (await txOf(request.tx)) ?? client
      return on.query(request.sql, request.params, queryOptions(request))
    }
    case 'exec': {
      const on = (await txOf(request.tx)) ?? client
      return on.exec(request.sql, queryOptions(request))
    }
    case 'begin':
      await begin(client, request.id)
      return undefined
    case 'end': {
      const open = transactions.get(request.tx)
      if (!open?.end) throw new Error(`transaction ${request.tx} is not open`)
      open.end(request.commit)
      try {
        await open.done
      } catch (error) {
        if (error !== ROLLBACK) throw error
      } finally {
        transactions.delete(request.tx)
      }
      return undefined
    }
    case 'rollback': {
      const tx = await txOf(request.tx)
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
