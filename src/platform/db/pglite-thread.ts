import { Worker } from 'node:worker_threads'
import { messages, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite'

/**
 * The embedded database on a worker thread (pglite-worker.ts), so PostgreSQL's WebAssembly runs on a core of its own
 * instead of the server's: the part of PGlite's interface Herold uses (what drizzle's pglite driver calls: query with
 * rowMode and parsers, exec, transaction; listen, dumpDataDir, close). Statements are sent one at a time by the
 * caller's PriorityGate (client.ts), as before; a transaction is PGlite's own on the worker, held open until its
 * callback here settles. Rows are parsed on the worker and cross by structured clone (Date and Uint8Array survive);
 * errors cross as their fields, so a DatabaseError here carries PostgreSQL's code, constraint and detail.
 *
 * Parsers cannot cross (functions): the only ones accepted are those that keep a type's text as it is, which is what
 * drizzle passes (timestamps, dates, intervals, numeric arrays); any other is refused at the call.
 */

/** what the worker is started with */
export interface ThreadStart {
  dataDir: string
}

interface Shape {
  rowMode?: 'array' | 'object'
  /** types whose text is kept as it is (a parser that returns its input) */
  rawTypes?: number[]
}

export type ThreadRequest =
  | ({ id: number; op: 'query'; sql: string; params?: unknown[]; tx?: number } & Shape)
  | ({ id: number; op: 'exec'; sql: string; tx?: number } & Shape)
  | { id: number; op: 'begin' }
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'rollback'; tx: number }
  | { id: number; op: 'listen'; channel: string }
  | { id: number; op: 'unlisten'; listener: number }
  | { id: number; op: 'dump' }
  | { id: number; op: 'close' }

export interface WireError {
  message: string
  name: string
  fields: Record<string, unknown>
  /** a DatabaseError (PostgreSQL's), rebuilt as one */
  database?: boolean
}

export type ThreadReply =
  | { id: number; value: unknown; error?: undefined; notify?: undefined }
  | { id: number; error: WireError; value?: undefined; notify?: undefined }
  | { notify: number; payload: string; id?: undefined }

type Request = ThreadRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never

const WORKER_URL = new URL('./pglite-worker.ts', import.meta.url)
const PROBE = '\u0000probe'

function shapeOf(options: QueryOptions | undefined): Shape {
  if (!options) return {}
  const { rowMode, parsers, ...rest } = options
  for (const [key, value] of Object.entries(rest)) {
    if (value !== undefined) throw new Error(`the embedded database's thread does not take the query option ${key}`)
  }
  const shape: Shape = {}
  if (rowMode) shape.rowMode = rowMode
  if (parsers) {
    shape.rawTypes = Object.entries(parsers).map(([type, parser]) => {
      if (parser(PROBE, Number(type)) !== PROBE) {
        throw new Error(`the embedded database's thread keeps a type's text or parses it itself (type ${type})`)
      }
      return Number(type)
    })
  }
  return shape
}

function toError(wire: WireError): Error {
  const error = wire.database
    ? new messages.DatabaseError(wire.message, 0, 'error')
    : Object.assign(new Error(wire.message), { name: wire.name })
  Object.assign(error, wire.fields)
  return error
}

export class PGliteThread {
  readonly #worker: Worker
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>()
  readonly #listeners = new Map<number, (payload: string) => void>()
  #next = 1
  #dead: Error | null = null
  #closed = false

  private constructor(dataDir: string) {
    // named: the thread shows as herold-db beside the server's own (top -H, /proc/PID/task/*/comm)
    this.#worker = new Worker(WORKER_URL, { name: 'herold-db', workerData: { dataDir } satisfies ThreadStart })
    this.#worker.on('message', (reply: ThreadReply) => this.#reply(reply))
    this.#worker.on('error', (error) => this.#fail(error))
    this.#worker.on('exit', (code) => this.#fail(new Error(`the embedded database's thread stopped (exit ${code})`)))
  }

  /** Starts the thread and opens the data directory there (an existing one, or 'memory://'). */
  static async create(dataDir: string): Promise<PGliteThread> {
    const thread = new PGliteThread(dataDir)
    const opened = new Promise((resolve, reject) => thread.#pending.set(0, { resolve, reject }))
    thread.#worker.ref()
    try {
      await opened
    } catch (error) {
      await thread.#worker.terminate()
      throw error
    } finally {
      thread.#idle()
    }
    return thread
  }

  get closed(): boolean {
    return this.#closed
  }

  query<T>(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> {
    return this.#call({ op: 'query', sql, params, ...shapeOf(options) }) as Promise<Results<T>>
  }

  exec(sql: string, options?: QueryOptions): Promise<Array<Results>> {
    return this.#call({ op: 'exec', sql, ...shapeOf(options) }) as Promise<Array<Results>>
  }

  /** BEGIN, fn, then COMMIT, or ROLLBACK when fn throws (its error is rethrown), on the worker's one connection. */
  async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
    // the BEGIN is not waited for: the worker runs the transaction's statements after it (in the order sent), so
    // fn starts at once, as on PGlite in this thread; when the BEGIN fails its statements fail with its error
    const id = this.#next
    const began = this.#call({ op: 'begin' })
    began.catch(() => {})
    let closed = false
    const open = () => {
      if (closed) throw new Error('Transaction is closed')
    }
    const tx = {
      query: async <R>(sql: string, params?: unknown[], options?: QueryOptions) => {
        open()
        return (await this.#call({ op: 'query', sql, params, tx: id, ...shapeOf(options) })) as Results<R>
      },
      exec: async (sql: string, options?: QueryOptions) => {
        open()
        return (await this.#call({ op: 'exec', sql, tx: id, ...shapeOf(options) })) as Array<Results>
      },
      rollback: async () => {
        open()
        await this.#call({ op: 'rollback', tx: id })
        closed = true
      },
      sql: () => Promise.reject(new Error('tx.sql is not offered on the embedded database thread')),
      listen: () => Promise.reject(new Error('tx.listen is not offered on the embedded database thread')),
      get closed() {
        return closed
      },
    } as unknown as Transaction
    let result: T
    try {
      result = await fn(tx)
    } catch (error) {
      closed = true
      // a transaction that never began has nothing to end on the worker
      if (
        await began.then(
          () => true,
          () => false,
        )
      )
        await this.#call({ op: 'end', tx: id, commit: false })
      throw error
    }
    closed = true
    await began
    await this.#call({ op: 'end', tx: id, commit: true })
    return result
  }

  /** Calls callback for every NOTIFY on channel; resolves to the function that stops it. */
  async listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>> {
    const id = this.#next
    this.#listeners.set(id, callback)
    try {
      await this.#call({ op: 'listen', channel })
    } catch (error) {
      this.#listeners.delete(id)
      throw error
    }
    return async () => {
      if (!this.#listeners.delete(id) || this.#closed) return
      await this.#call({ op: 'unlisten', listener: id })
    }
  }

  async dumpDataDir(compression: 'gzip' = 'gzip'): Promise<Blob> {
    const bytes = (await this.#call({ op: 'dump' })) as Uint8Array<ArrayBuffer>
    return new Blob([bytes], { type: compression === 'gzip' ? 'application/x-gzip' : 'application/x-tar' })
  }

  async close(): Promise<void> {
    if (this.#closed) return
    try {
      await this.#call({ op: 'close' })
    } finally {
      this.#closed = true
      this.#listeners.clear()
      await this.#worker.terminate()
    }
  }

  #call(request: Request): Promise<unknown> {
    if (this.#dead) return Promise.reject(this.#dead)
    if (this.#closed) return Promise.reject(new Error('PGlite is closed'))
    const id = this.#next++
    const reply = new Promise((resolve, reject) => this.#pending.set(id, { resolve, reject }))
    // the thread keeps the process alive only while a statement is under way (an idle PGlite never did)
    if (this.#pending.size === 1) this.#worker.ref()
    this.#worker.postMessage({ ...request, id } as ThreadRequest)
    return reply
  }

  #reply(reply: ThreadReply): void {
    if (reply.notify !== undefined) {
      this.#listeners.get(reply.notify)?.(reply.payload)
      return
    }
    const waiting = this.#pending.get(reply.id)
    if (!waiting) return
    this.#pending.delete(reply.id)
    this.#idle()
    if (reply.error) waiting.reject(toError(reply.error))
    else waiting.resolve(reply.value)
  }

  #idle(): void {
    if (this.#pending.size === 0) this.#worker.unref()
  }

  #fail(error: Error): void {
    if (this.#closed) return
    this.#dead ??= error
    for (const waiting of this.#pending.values()) waiting.reject(error)
    this.#pending.clear()
  }
}
