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
import { pgliteOptions } from './pglite-options.ts'
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
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options.poolSize ?? 10) : openPglite(options.dataDir)
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

async function openPglite(dataDir: string): Promise<Database> {
  if (!dataDir.startsWith('memory://')) {
    mkdirSync(dataDir, { recursive: true })
    if (!existsSync(path.join(dataDir, 'PG_VERSION'))) await createDataDir(dataDir)
  }
  const client = await PGlite.create(dataDir, pgliteOptions())
  // every statement and transaction passes the gate: a request's goes before a newsletter's waiting ones
  const gate = new PriorityGate()
  // the ORM's handle: PGlite itself (instanceof holds, hot statements use it) with its three entry points gated
  const gated: PGlite = Object.create(client)
  gated.query = (...args: Parameters<PGlite['query']>) => gate.run(() => client.query(...args))
  gated.exec = (...args: Parameters<PGlite['exec']>) => gate.run(() => client.exec(...args))
  gated.transaction = (fn) => gate.run(() => client.transaction(fn))
  const orm = drizzlePglite(gated) as unknown as Db
  let closed = false
  return {
    kind: 'pglite',
    orm,
    async query<T>(sql: string, params?: unknown[]) {
      const result = await gate.run(() => client.query<T>(sql, params))
      return result.rows
    },
    dumpDataDir: () => gate.run(() => client.dumpDataDir('gzip')),
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
