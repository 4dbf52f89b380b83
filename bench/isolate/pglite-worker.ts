// node --import: the same idle embedded database in a worker thread of the server's process (its own V8 isolate).
import { once } from 'node:events'
import { Worker } from 'node:worker_threads'

// execArgv: [] so the worker does not run this --import module again
const worker = new Worker(new URL('./worker-thread.ts', import.meta.url), { execArgv: [] })
await once(worker, 'message')
// the server's own handles keep the process alive; the worker stays as long as it does
worker.unref()
