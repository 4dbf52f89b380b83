import { execFile } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import pg from 'pg'
import { span, tracingOn } from '../tracing/tracing.ts'
import { pgliteOptions } from './pglite-options.ts'
import { PGliteThread } from './pglite-thread.ts'
import { PriorityGate } from './work-priority.ts'

/**
 * The typed query builder; a transaction handle has the same type. Without a schema: queries name their tables, so
 * opening the database loads no module (`db.query` is not used).
 */
export type Db = PgDatabase<PgQueryResultHKT>

/** The smallest raw-SQL surface both drivers offer. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>
}

export interface Database {
  kind: 'pglite' | 'postgres'
  orm: Db
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>
  /** Runs fn on one dedicated connection (advisory locks, LISTEN). */
  withSession<T>(fn: (session: Queryable) => Promise<T>): Promise<T>
  /**
   * Calls handler for every NOTIFY on channel (fired at the commit of the notifying transaction). After a lost
   * connection is re-established the handler is called once without a payload, since notifications may have
   * been missed; `onLost` is called as soon as the connection drops (nothing is heard until the handler's call
   * without a payload). Resolves to the function that stops listening.
   */
  listen(
    channel: string,
    handler: (payload: string | undefined) => void,
    options?: { onLost?: () => void },
  ): Promise<() => Promise<void>>
  /** the embedded database only: a consistent gzip'd tar of its data directory (see backup.ts) */
  dumpDataDir?(): Promise<Blob>
  /** connections open, idle, at most, and statements or callers waiting for one (GET /metrics) */
  poolUse(): { total: number; idle: number; max: number; waiting: number }
  close(): Promise<void>
}

function assertChannel(channel: string): void {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(channel)) throw new Error(`invalid LISTEN channel name "${channel}"`)
}

export interface OpenDatabaseOptions {
  databaseUrl?: string
  /** a directory, or 'memory://' for a throwaway database */
  dataDir: string
  poolSize?: number
  /**
   * the embedded database on a worker thread of its own (pglite-thread.ts) rather than in the server's thread;
   * default: HEROLD_EMBEDDED_THREAD=1 in the environment
   */
  embeddedThread?: boolean
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  return options.databaseUrl
    ? openPostgres(options.databaseUrl, options.poolSize ?? 10)
    : openPglite(options.dataDir, options.embeddedThread ?? process.env.HEROLD_EMBEDDED_THREAD === '1')
}

const INITDB_SCRIPT = fileURLToPath(new URL('./pglite-initdb.ts', import.meta.url))

/**
 * A new data directory is created by a child process (pglite-initdb.ts): PGlite's initdb in this process would leave
 * about 35 MB of fragmented heap behind for the process's life. Its settings are the server's (pglite-options.ts).
 */
async function createDataDir(dataDir: string): Promise<void> {
  try {
    await promisify(execFile)(process.execPath, [INITDB_SCRIPT, dataDir], { maxBuffer: 16 * 1024 * 1024 })
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim()
    throw new Error(`creating the embedded database in ${dataDir} failed${stderr ? `: ${stderr}` : ''}`, {
      cause: error,
    })
  }
}

/** What Herold uses of PGlite, in this thread (PGlite) or on a worker thread (PGliteThread). */
type Embedded = Pick<PGlite, 'query' | 'exec' | 'transaction' | 'listen' | 'close'> & {
  dumpDataDir(compression: 'gzip'): Promise<Blob>
}

/**
 * Statements in flight to the embedded database's thread at once (see PriorityGate). One keeps the gate's promise (a
 * request's statement waits for at most the one holding the connection); more would keep the thread fed while this
 * thread takes the last one's rows, at that promise's cost (HEROLD_EMBEDDED_THREAD_AHEAD, for measuring only).
 */
const THREAD_AHEAD = Number(process.env.HEROLD_EMBEDDED_THREAD_AHEAD) || 1

async function openPglite(dataDir: string, onThread: boolean): Promise<Database> {
  if (!dataDir.startsWith('memory://')) {
    mkdirSync(dataDir, { recursive: true })
    if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await createDataDir(dataDir)
  }
  const client: Embedded = onThread
    ? ((await PGliteThread.create(dataDir)) as unknown as Embedded)
    : await PGlite.create(dataDir, pgliteOptions())
  // every statement and transaction passes the gate: a request's goes before a newsletter's waiting ones
  const gate = new PriorityGate(onThread ? THREAD_AHEAD : 1)
  // the ORM's handle: the client itself (instanceof holds, hot statements use it) with its three entry points gated
  const gated: Embedded = Object.create(client)
  gated.query = (...args: Parameters<PGlite['query']>) => gate.run(() => client.query(...args))
  gated.exec = (...args: Parameters<PGlite['exec']>) => gate.run(() => client.exec(...args))
  if (tracingOn()) {
    // a span per statement (tracing on only: a wrapper on the hot path otherwise)
    const query = gated.query
    const exec = gated.exec
    gated.query = ((text: string, ...rest: unknown[]) =>
      statementSpan(text, () => query(text, ...(rest as [])))) as PGlite['query']
    gated.exec = ((text: string, ...rest: unknown[]) =>
      statementSpan(text, () => exec(text, ...(rest as [])))) as PGlite['exec']
  }
  gated.transaction = (fn) => gate.run(() => client.transaction(fn))
  const orm = drizzlePglite(gated as PGlite) as unknown as Db
  let closed = false
  return {
    kind: 'pglite',
    orm,
    async query<T>(sql: string, params?: unknown[]) {
      const result = await gate.run(() => client.query<T>(sql, params))
      return result.rows
    },
    dumpDataDir: () => gate.run(() => client.dumpDataDir('gzip')),
    poolUse() {
      const { interactive, bulk } = gate.waiting
      return { total: 1, idle: 0, max: 1, waiting: interactive + bulk }
    },
    // PGlite is one connection: the whole database is the session.
    withSession: (fn) => fn({ query: (sql, params) => gate.run(() => client.query(sql, params)) }),
    async listen(channel, handler) {
      assertChannel(channel)
      const unlisten = await client.listen(channel, (payload) => handler(payload))
      return async () => {
        if (!closed) await unlisten()
      }
    },
    async close() {
      if (closed) return
      closed = true
      await client.close()
    },
  }
}

async function openPostgres(url: string, max: number): Promise<Database> {
  const pool = new pg.Pool({ connectionString: url, max })
  // An idle client losing its connection must not crash the process; the next query reports it.
  pool.on('error', () => {})
  if (tracingOn()) {
    // pool.query runs the callback form of a connection's query, which the connections' wrapper leaves alone
    const query = pool.query.bind(pool) as (...args: unknown[]) => unknown
    ;(pool as { query: unknown }).query = (...args: unknown[]) => tracedQuery(query, args)
    pool.on('connect', traceStatementsOf)
  }
  const orm = drizzleNodePg(pool) as unknown as Db
  let closed = false
  return {
    kind: 'postgres',
    orm,
    async query<T>(sql: string, params?: unknown[]) {
      const result = await pool.query(sql, params)
      return result.rows as T[]
    },
    async withSession(fn) {
      const client = await pool.connect()
      try {
        return await fn({
          query: async <T>(sql: string, params?: unknown[]) => ({
            rows: (await client.query(sql, params)).rows as T[],
          }),
        })
      } finally {
        client.release()
      }
    },
    listen: (channel, handler, options) => listenPostgres(url, channel, handler, options?.onLost),
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, max, waiting: pool.waitingCount }),
    async close() {
      if (closed) return
      closed = true
      await pool.end()
    },
  }
}

const RECONNECT_MS = 1000

/** LISTEN needs a connection of its own, outside the pool, kept open and re-opened when it drops. */
async function listenPostgres(
  url: string,
  channel: string,
  handler: (payload: string | undefined) => void,
  onLost?: () => void,
): Promise<() => Promise<void>> {
  assertChannel(channel)
  let stopped = false
  let client: pg.Client | null = null
  let retry: NodeJS.Timeout | null = null

  const open = async (): Promise<void> => {
    const next = new pg.Client({ connectionString: url })
    next.on('notification', (message) => {
      if (message.channel === channel) handler(message.payload)
    })
    next.on('error', () => reopen(next))
    next.on('end', () => reopen(next))
    await next.connect()
    await next.query(`LISTEN ${channel}`)
    client = next
  }
  const reopen = (dead: pg.Client) => {
    if (stopped || client !== dead) return
    client = null
    onLost?.()
    dead.end().catch(() => {})
    const attempt = () => {
      retry = null
      if (stopped) return
      open().then(
        () => handler(undefined),
        () => {
          retry = setTimeout(attempt, RECONNECT_MS)
          retry.unref()
        },
      )
    }
    retry = setTimeout(attempt, RECONNECT_MS)
    retry.unref()
  }

  await open()
  return async () => {
    stopped = true
    if (retry) clearTimeout(retry)
    const last = client
    client = null
    await last?.end().catch(() => {})
  }
}

/** A database statement's span: its first words as the name (never its parameters). */
function statementSpan<T>(text: string, run: () => Promise<T>): Promise<T> {
  const statement = text.trim().replace(/\s+/g, ' ')
  const operation = /^(WITH|SELECT|INSERT|UPDATE|DELETE|BEGIN|COMMIT|ROLLBACK|LISTEN|VACUUM|ANALYZE|SET)\b/i.exec(
    statement,
  )
  return span(
    `db ${operation ? operation[1].toUpperCase() : 'statement'}`,
    { 'db.system.name': 'postgresql', 'db.query.text': statement.slice(0, 500) },
    run,
  )
}

/** Spans for every statement of a pool connection (tracing on): the driver's promise form of query. */
function traceStatementsOf(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown
  ;(client as { query: unknown }).query = (...args: unknown[]) => tracedQuery(query, args)
}

function tracedQuery(query: (...args: unknown[]) => unknown, args: unknown[]): unknown {
  const first = args[0]
  const text = typeof first === 'string' ? first : (first as { text?: string } | null)?.text
  // the callback form (and a Submittable) is left as it is
  if (text === undefined || typeof args[args.length - 1] === 'function') return query(...args)
  return statementSpan(text, () => query(...args) as Promise<unknown>)
}
