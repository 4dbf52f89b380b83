import type { Line } from './contacts.import-lines.ts'

// The import's writes, one or more transactions at a time. A batch written beside others only creates contacts: a
// line whose address a contact already holds (or a line before it in the file) is not written there but held back,
// and written alone later, in file order, by the full path (match, update, the plan's limit). Lines that share no
// address commute, so the outcome is the one of writing the batches one after another (see docs/contacts.md).

/** What a write hands back: lines to write later, and whether they must be written alone (they met an address). */
export interface WriteResult {
  later: Line[]
  alone: boolean
}

export interface BatchWriterOps {
  /** The full path, with nothing else in flight; returns the lines held back (an address seen earlier in the batch). */
  writeAlone(lines: Line[]): Promise<Line[]>
  /** Creates the lines' contacts beside other writes; lines it did not create come back, to be written alone. */
  writeBeside(lines: Line[]): Promise<WriteResult>
  /** Whether writes may go beside each other now, with this many lines in flight or waiting (the plan's room). */
  mayWriteBeside(lines: number): Promise<boolean>
}

/**
 * Lines in file order split into those to write now and those that wait (`later`): a line sharing an address with an
 * earlier line, or with `busy` (addresses of writes in flight), waits. `busy` gains every line's addresses.
 */
export function splitByAddress(lines: Line[], busy: Set<string> = new Set()): { now: Line[]; later: Line[] } {
  const now: Line[] = []
  const later: Line[] = []
  for (const line of lines) {
    const keys = keysOf(line)
    if (keys.some((k) => busy.has(k))) later.push(line)
    else now.push(line)
    for (const k of keys) busy.add(k)
  }
  return { now, later }
}

/** A line's addresses as keys: two lines sharing one must be written in file order. */
function keysOf(line: Line): string[] {
  const keys: string[] = []
  if (line.email) keys.push(`e:${line.email}`)
  if (line.phone) keys.push(`p:${line.phone}`)
  return keys
}

interface Writing {
  done: Promise<WriteResult>
  keys: string[]
  lines: number
  alone: boolean
}

export class BatchWriters {
  readonly #writers: number
  readonly #ops: BatchWriterOps
  readonly #inFlight: Writing[] = []
  /** lines to write before any line added later, in file order once sorted */
  #held: Line[] = []
  /** whether a held line must be written alone */
  #aloneNext = false

  /** `writers`: transactions at once (1: every batch written alone, one after another, as before). */
  constructor(writers: number, ops: BatchWriterOps) {
    this.#writers = Math.max(1, Math.floor(writers))
    this.#ops = ops
  }

  /** Starts writing the next lines read (after every line added before); waits while the writers are all busy. */
  async add(read: Line[]): Promise<void> {
    while (this.#inFlight.length >= this.#writers || this.#inFlight.some((w) => w.alone)) await this.#settleOldest()
    const waiting = this.#inFlight.reduce((n, w) => n + w.lines, 0) + this.#held.length + read.length
    const beside = this.#writers > 1 && !this.#aloneNext && (await this.#ops.mayWriteBeside(waiting))
    if (!beside) {
      while (this.#inFlight.length > 0) await this.#settleOldest()
      this.#aloneNext = false
      this.#start(this.#take(read), true)
      return
    }
    // a line meeting an address of a write in flight, or of a line before it here, waits for that write
    const { now, later } = splitByAddress(this.#take(read), new Set(this.#inFlight.flatMap((w) => w.keys)))
    this.#held = later
    if (now.length > 0) this.#start(now, false)
  }

  /** Writes what is held back and waits for every write; the first failure is thrown, after all have ended. */
  async finish(): Promise<void> {
    while (this.#inFlight.length > 0 || this.#held.length > 0) {
      while (this.#inFlight.length > 0) await this.#settleOldest()
      if (this.#held.length > 0) this.#start(this.#take([]), true)
    }
  }

  /** Waits for every write in flight, failed or not (before an import reports what stopped it). */
  async settle(): Promise<void> {
    await Promise.allSettled(this.#inFlight.splice(0).map((w) => w.done))
  }

  #take(read: Line[]): Line[] {
    const lines = this.#held.sort((a, b) => a.line - b.line).concat(read)
    this.#held = []
    return lines
  }

  #start(lines: Line[], alone: boolean): void {
    const done = alone
      ? this.#ops.writeAlone(lines).then((later) => ({ later, alone: false }))
      : this.#ops.writeBeside(lines)
    // awaited by #settleOldest or settle(); meanwhile a failed write is not an unhandled rejection
    done.catch(() => undefined)
    this.#inFlight.push({ done, keys: lines.flatMap(keysOf), lines: lines.length, alone })
  }

  async #settleOldest(): Promise<void> {
    const writing = this.#inFlight[0]
    const result = await writing.done
    this.#inFlight.shift()
    this.#held.push(...result.later)
    if (result.alone && result.later.length > 0) this.#aloneNext = true
  }
}
