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
  close(): Promise<void>
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

async function openPglite(dataDir: string): Promise<Database> {
  if (!dataDir.startsWith('memory://')) mkdirSync(dataDir, { recursive: true })
  const client = await PGlite.create(dataDir, { extensions: { pg_trgm, btree_gin } })
  const orm = drizzlePglite(client, { schema }) as unknown as Db
  let closed = false
  return {
    kind: 'pglite',
    orm,
    async query<T>(sql: string, params?: unknown[]) {
      const result = await client.query<T>(sql, params)
      return result.rows
    },
    // PGlite is one connection: the whole database is the session.
    withSession: (fn) => fn({ query: (sql, params) => client.query(sql, params) }),
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
    async close() {
      if (closed) return
      closed = true
      await pool.end()
    },
  }
}
