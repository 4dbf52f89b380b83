import { writeSync } from 'node:fs'

export interface LogDestination {
  write(line: string): void
  /** writes what is held, synchronously (at exit; a full pipe is waited for, up to a limit) */
  flushSync(): void
}

/**
 * Where the server's log lines go (stdout or stderr). The lines of one turn of the event loop are joined and written
 * in one synchronous write after that turn, from the main thread: a quiet server writes each line at once, a busy
 * one a few dozen lines a write. pino's own asynchronous destination (sonic-boom) measured Buffer.byteLength of
 * every line and handed each batch to a thread-pool thread; under GET /v1/me that was a tenth of the server's CPU.
 *
 * A pipe whose reader is slow (EAGAIN) keeps the rest for a later turn, in order, and drops the oldest lines beyond
 * `maxHeldBytes` rather than grow without bound or block the server; lines left at exit are written then.
 */
export function batchedLogDestination(fd: number, options: { maxHeldBytes?: number } = {}): LogDestination {
  const maxHeld = options.maxHeldBytes ?? 16 * 1024 * 1024
  let lines: string[] = []
  /** bytes of an earlier write that the pipe did not take yet */
  let rest: Buffer | null = null
  let scheduled = false

  const schedule = (retryMs = 0) => {
    if (scheduled) return
    scheduled = true
    if (retryMs > 0) setTimeout(flush, retryMs).unref()
    else setImmediate(flush)
  }

  /** Writes `data` from `offset`; returns what the pipe did not take (null when all went or the fd is gone). */
  const writeOut = (data: Buffer): Buffer | null => {
    let offset = 0
    while (offset < data.length) {
      try {
        offset += writeSync(fd, data, offset)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return data.subarray(offset)
        return null // EPIPE, EBADF: nobody reads the log any more
      }
    }
    return null
  }

  function flush() {
    scheduled = false
    if (lines.length === 0 && rest === null) return
    const fresh = lines.length === 0 ? null : Buffer.from(lines.length === 1 ? lines[0] : lines.join(''))
    lines = []
    let data = rest && fresh ? Buffer.concat([rest, fresh]) : (rest ?? fresh)!
    if (data.length > maxHeld) data = data.subarray(data.indexOf(10, data.length - maxHeld) + 1)
    rest = writeOut(data)
    if (rest) schedule(10)
  }

  return {
    write(line: string) {
      lines.push(line)
      schedule()
    },
    flushSync() {
      const deadline = Date.now() + 2000
      flush()
      while (rest && Date.now() < deadline) rest = writeOut(rest)
    },
  }
}
