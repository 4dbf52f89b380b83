import { Worker } from 'node:worker_threads'
import { AppError } from '../../platform/http/errors.ts'
import { type Extracted, extractDocument } from './knowledge.extract.ts'
import { tooComplex } from './knowledge.limits.ts'

// A document's text is extracted on a worker thread of its own (knowledge.extract-worker.ts runs extractDocument
// there): a PDF or DOCX that takes long or much memory to read then costs that thread, not the server's event loop,
// and a heap exhausted there ends the thread, not the process. The thread gets EXTRACT_HEAP_MB of heap and
// EXTRACT_TIMEOUT_MS; past either the document is a 400 (key document_too_complex). At most EXTRACT_THREADS run at
// once; later documents wait for one to finish. Small text documents are read in place (a thread costs about 0.1 s).

/** The heap of one extraction thread (its own limit; the server's is separate). */
export const EXTRACT_HEAP_MB = 192
/** How long one extraction may take. */
export const EXTRACT_TIMEOUT_MS = 30_000
/** Extractions at once. */
export const EXTRACT_THREADS = 2
/** Text, Markdown and HTML below this size are read on the calling thread. */
const IN_PLACE_MAX_BYTES = 1024 * 1024

/** What the thread is started with. */
export interface ExtractThreadStart {
  data: Uint8Array
  filename: string
  mime: string
}

/** The thread's one message: the extracted document, or the refusal (an AppError's parts) or failure. */
export type FromExtractThread =
  | { type: 'done'; extracted: Extracted }
  | {
      type: 'refused'
      status: number
      code: string
      key: string
      message: string
      details: Record<string, unknown>
    }
  | { type: 'failed'; message: string }

const WORKER_URL = new URL('./knowledge.extract-worker.ts', import.meta.url)

let running = 0
const queue: Array<() => void> = []

async function slot(): Promise<() => void> {
  if (running >= EXTRACT_THREADS) await new Promise<void>((resolve) => queue.push(resolve))
  running++
  let released = false
  return () => {
    if (released) return
    released = true
    running--
    queue.shift()?.()
  }
}

const isBinary = (data: Buffer) =>
  data.subarray(0, 5).toString('latin1') === '%PDF-' || data.subarray(0, 4).toString('hex') === '504b0304'

/** extractDocument off the event loop, with a heap and a time limit: the same result or the same 400s. */
export async function extractDocumentOnThread(data: Buffer, filename: string, mime: string): Promise<Extracted> {
  if (!isBinary(data) && data.length <= IN_PLACE_MAX_BYTES) return extractDocument(data, filename, mime)
  const release = await slot()
  try {
    return await runThread(data, filename, mime)
  } finally {
    release()
  }
}

function runThread(data: Buffer, filename: string, mime: string): Promise<Extracted> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_URL, {
      name: 'herold-knowledge-extract',
      workerData: { data: new Uint8Array(data), filename, mime } satisfies ExtractThreadStart,
      resourceLimits: { maxOldGenerationSizeMb: EXTRACT_HEAP_MB, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 },
      stdout: false,
      stderr: false,
    })
    let settled = false
    const settle = (outcome: () => void) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      worker.removeAllListeners()
      worker.on('error', () => undefined)
      void worker.terminate()
      outcome()
    }
    const timer = setTimeout(
      () =>
        settle(() =>
          reject(tooComplex(`Reading the document took longer than ${EXTRACT_TIMEOUT_MS / 1000} s`, { limit: 'time' })),
        ),
      EXTRACT_TIMEOUT_MS,
    )
    worker.on('message', (message: FromExtractThread) =>
      settle(() => {
        if (message.type === 'done') resolve(message.extracted)
        else if (message.type === 'refused') {
          const { status, code, key, details } = message
          reject(new AppError(status, code, message.message, { key, details }))
        } else reject(new Error(`knowledge extraction failed: ${message.message}`))
      }),
    )
    worker.on('error', (error: Error & { code?: string }) =>
      settle(() =>
        reject(
          error.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? tooComplex(`Reading the document needs more than ${EXTRACT_HEAP_MB} MB of memory`, { limit: 'memory' })
            : error,
        ),
      ),
    )
    worker.on('exit', (code) =>
      settle(() => reject(new Error(`the knowledge extraction thread stopped (exit ${code}) without an answer`))),
    )
  })
}
