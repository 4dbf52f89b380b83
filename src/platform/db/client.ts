import { mkdirSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import { drizzle as drizzleNodePg } from 'drizzle-orm/node-postgres'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import pg from 'pg'
import * as schema from './schema.ts'

export type Schema = typeof schema
/** The typed query builder; a transaction handle has the same type. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>

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

/**
 * PGlite's memory is a WebAssembly memory that only grows: PostgreSQL's defaults (128 MB of shared buffers, 64 MB
 * for maintenance) would be kept for the process's life. One connection in one process needs far less; the
 * operating system's page cache keeps the data files warm anyway.
 */
const PGLITE_SETTINGS = ['shared_buffers = 32MB', 'maintenance_work_mem = 16MB', 'wal_buffers = 1MB']

async function openPglite(dataDir: string): Promise<Database> {
  if (!dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true })
  const client = await PGlite.create(dataDir, { extensions: { pg_trgm, btree_gin }, postgresqlconf: PGLITE_SETTINGS })
  const orm = drizzlePglite(client, { schema }) as unknown as Db
  let closed = false
  return {
    kind: 'pglite',
    orm,
    async query<T>(sql: string, params?: unknown[]) {
      const result = await client.query<T>(sql, params)
      return result.rows
    },
    dumpDataDir: () => client.dumpDataDir('gzip'),
    // PGlite is one connection: the whole database is the session.
    withSession: (fn) => fn({ query: (sql, params) => client.query(sql, params) }),
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
  const orm = drizzleNodePg(pool, { schema }) as unknown as Db
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
