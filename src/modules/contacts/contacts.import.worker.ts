// The import's reading thread: started by openLineReaderOnThread (contacts.import-thread.ts), it opens the file with
// openLineReader, sends its header, waits for the plan of its columns, and sends the checked lines batch by batch, at
// most READ_AHEAD ahead of the batches taken (the protocol is contacts.import-thread.ts's).
import { parentPort, workerData } from 'node:worker_threads'
import { CsvError } from './contacts.csv.ts'
import { type LinePlan, openLineReader } from './contacts.import-lines.ts'
import {
  type FromImportThread,
  type ImportThreadStart,
  READ_AHEAD,
  type ToImportThread,
} from './contacts.import-thread.ts'

const port = parentPort
if (!port) throw new Error('contacts.import.worker.ts runs as a worker thread (see contacts.import-thread.ts)')
const start = workerData as ImportThreadStart
const send = (message: FromImportThread) => port.postMessage(message)

let credits = READ_AHEAD
let wake: (() => void) | null = null
let planned: (plan: LinePlan) => void = () => undefined
const plan = new Promise<LinePlan>((resolve) => (planned = resolve))
port.on('message', (message: ToImportThread) => {
  if (message.type === 'plan') planned(message.plan)
  else {
    credits++
    wake?.()
    wake = null
  }
})

try {
  const reader = await openLineReader(start.file, start.format, start.batchSize)
  send({ type: 'header', header: reader.header })
  if (reader.header) {
    for await (const batch of reader.batches(await plan)) {
      while (credits === 0) await new Promise<void>((resolve) => (wake = resolve))
      credits--
      send({ type: 'batch', batch })
    }
  }
  send({ type: 'done' })
} catch (error) {
  send({
    type: 'error',
    csv: error instanceof CsvError,
    message: error instanceof Error ? error.message : String(error),
  })
}
