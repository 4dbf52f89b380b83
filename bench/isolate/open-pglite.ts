// Opens the embedded database of BENCH_PGLITE_DIR (already created) with the server's settings, reads from it once
// and keeps it open for the life of the thread that imports this module: bench/embedded-isolate.ts's two variants.
import { PGlite } from '@electric-sql/pglite'
import { pgliteOptions } from '../../src/platform/db/pglite-options.ts'

const dir = process.env.BENCH_PGLITE_DIR
if (!dir) throw new Error('BENCH_PGLITE_DIR is not set')
const database = await PGlite.create(dir, pgliteOptions())
await database.query('SELECT count(*) FROM pg_class')
export const kept = database
