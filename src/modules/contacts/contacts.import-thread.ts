import { Worker } from 'node:worker_threads'
import { CsvError, type CsvOptions } from './contacts.csv.ts'
import type { LinePlan, LineReader, ReadBatch } from './contacts.import-lines.ts'

// A large import file is read on a thread of its own (contacts.import.worker.ts runs openLineReader there): parsing
// and checking its lines then runs on the other core while this thread writes (on the embedded database, this thread
// is the database), and this thread's event loop takes the database's answers as they come instead of after a chunk
// of lines. The worker loads only the reading's modules (no database schema): about 0.1 s to start.

/** What the import's thread is started with. */
export interface ImportThreadStart {
  file: string
  format: CsvOptions
  batchSize: number
}

/** The thread's messages: the header once, then batches, then done; or an error at any point. */
export type FromImportThread =
  | { type: 'header'; header: string[] | undefined }
  | { type: 'batch'; batch: ReadBatch }
  | { type: 'done' }
  | { type: 'error'; csv: boolean; message: string }

/** This thread's messages: the plan of the header's columns once, then one `more` for each batch taken. */
export type ToImportThread = { type: 'plan'; plan: LinePlan } | { type: 'more' }

/** Batches the thread may read ahead of the one taken last. */
export const READ_AHEAD = 2

const WORKER_URL = new URL('./contacts.import.worker.ts', import.meta.url)

/** openLineReader on a thread of its own: the same header, batches and errors (CsvError for the file's). */
export async function openLineReaderOnThread(file: string, format: CsvOptions, batchSize: number): Promise<LineReader> {
  const worker = new Worker(WORKER_URL, {
    name: 'herold-import',
    workerData: { file, format, batchSize } satisfies ImportThreadStart,
  })
  const inbox: FromImportThread[] = []
  let waiting: ((message: FromImportThread) => void) | null = null
  const deliver = (message: FromImportThread) => {
    if (!waiting) return void inbox.push(message)
    const resolve = waiting
    waiting = null
    resolve(message)
  }
  worker.on('message', deliver)
  worker.on('error', (error) => deliver({ type: 'error', csv: false, message: error.message }))
  worker.on('exit', (code) =>
    deliver({ type: 'error', csv: false, message: `the import's reading thread stopped (exit ${code})` }),
  )
  const next = (): Promise<FromImportThread> => {
    const message = inbox.shift()
    return message ? Promise.resolve(message) : new Promise((resolve) => (waiting = resolve))
  }
  const failure = (message: Extract<FromImportThread, { type: 'error' }>) =>
    message.csv ? new CsvError(message.message) : new Error(message.message)
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    worker.removeAllListeners('exit')
    void worker.terminate()
  }
  const first = await next()
  if (first.type !== 'header') {
    close()
    throw first.type === 'error' ? failure(first) : new Error(`the import's reading thread sent ${first.type} first`)
  }
  return {
    header: first.header,
    close,
    async *batches(plan) {
      worker.postMessage({ type: 'plan', plan } satisfies ToImportThread)
      try {
        for (;;) {
          const message = await next()
          if (message.type === 'done') return
          if (message.type === 'error') throw failure(message)
          if (message.type !== 'batch') throw new Error(`the import's reading thread sent ${message.type} again`)
          worker.postMessage({ type: 'more' } satisfies ToImportThread)
          yield message.batch
        }
      } finally {
        close()
      }
    },
  }
}
