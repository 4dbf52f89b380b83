// The knowledge extraction thread: started by extractDocumentOnThread (knowledge.extract-thread.ts), it extracts one
// document and sends the result, or the 400 that refuses it, once.
import { parentPort, workerData } from 'node:worker_threads'
import { AppError } from '../../platform/http/errors.ts'
import { extractDocument } from './knowledge.extract.ts'
import type { ExtractThreadStart, FromExtractThread } from './knowledge.extract-thread.ts'

const port = parentPort
if (!port) throw new Error('knowledge.extract-worker.ts runs as a worker thread (see knowledge.extract-thread.ts)')
const start = workerData as ExtractThreadStart
const send = (message: FromExtractThread) => port.postMessage(message)

try {
  const data = Buffer.from(start.data.buffer, start.data.byteOffset, start.data.byteLength)
  send({ type: 'done', extracted: await extractDocument(data, start.filename, start.mime) })
} catch (error) {
  if (error instanceof AppError) {
    const { status, code, key, message, details } = error
    send({ type: 'refused', status, code, key, message, details })
  } else send({ type: 'failed', message: error instanceof Error ? error.message : String(error) })
}
