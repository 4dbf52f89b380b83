import type { PGliteOptions } from '@electric-sql/pglite'
import { btree_gin } from '@electric-sql/pglite/contrib/btree_gin'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'

/**
 * PGlite's memory is a WebAssembly memory that only grows: PostgreSQL's defaults (128 MB of shared buffers, 64 MB
 * for maintenance) would be kept for the process's life. One connection in one process needs far less; the
 * operating system's page cache keeps the data files warm anyway.
 */
export const PGLITE_SETTINGS = ['shared_buffers = 32MB', 'maintenance_work_mem = 16MB', 'wal_buffers = 1MB']

/** The options every PGlite of the application opens with (the server's, the data directory's creation). */
export function pgliteOptions(): PGliteOptions {
  return { extensions: { pg_trgm, btree_gin }, postgresqlconf: PGLITE_SETTINGS }
}
