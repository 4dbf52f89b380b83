// Creates an embedded database's data directory, in a process of its own: `node pglite-initdb.ts DIR`.
//
// PGlite runs initdb (a WebAssembly program of its own) in the process that first opens an empty directory. What
// that leaves behind stays in the process for its life: about 35 MB of glibc's heap, freed but fragmented, that
// malloc cannot give back (measured 2026-11-23: a server's idle RSS after a first start 282–292 MB, with the
// directory created in a child process 253 MB, the same as a restart). openDatabase runs this script for a new
// directory, so the server only ever opens an existing one.
import { PGlite } from '@electric-sql/pglite'
import { pgliteOptions } from './pglite-options.ts'

const dataDir = process.argv[2]
if (!dataDir) {
  console.error('usage: node pglite-initdb.ts DATA_DIR')
  process.exit(2)
}
const client = await PGlite.create(dataDir, pgliteOptions())
await client.close()
