import { AsyncLocalStorage } from 'node:async_hooks'

/**
 * Bulk work (a newsletter's fan-out and its sends) runs inside `asBulkWork`; everything else (requests, a single
 * message's send, automation and follow-up steps) is interactive. On the embedded database, whose one connection runs
 * one statement at a time, interactive statements go before waiting bulk ones (see PriorityGate); on PostgreSQL the
 * mark changes nothing (its pool serves both, and the fair claim already keeps bulk jobs from taking every slot).
 */
const bulkWork = new AsyncLocalStorage<true>()

export function asBulkWork<T>(fn: () => Promise<T>): Promise<T> {
  return bulkWork.run(true, fn)
}

export function isBulkWork(): boolean {
  return bulkWork.getStore() === true
}

/**
 * How many interactive turns may pass a waiting bulk statement in a row: interactive work goes first, but a steady
 * stream of it (a busy API) must not stop a newsletter altogether.
 */
export const INTERACTIVE_STREAK = 8

/**
 * How long bulk statements may run one after another before the event loop gets a turn (timers fire, requests are
 * read): the longest a request waits to be read behind a newsletter, plus the one statement running then.
 */
export const BULK_RUN_MS = 10

/**
 * One holder at a time, interactive waiters before bulk ones. The embedded database runs its statements one by one in
 * the order they arrive (PGlite's own lock is first come, first served), so a newsletter's thousands of queued
 * statements would stand before every other account's; in front of that lock this gate lets a request's statement
 * (or transaction) go next, after at most the one bulk statement that holds the connection.
 *
 * `capacity` holders at once (default one): the embedded database on its own thread (pglite-thread.ts) is given a
 * few statements ahead, so it has the next one when it finishes one instead of waiting for this thread to send it;
 * they queue there in PGlite's order, so an interactive statement waits for at most `capacity` others.
 */
export class PriorityGate {
  readonly #capacity: number
  #holders = 0
  #streak = 0
  /** when a hand-over last waited for a turn of the event loop (performance.now()) */
  #turnAt = Number.NEGATIVE_INFINITY
  readonly #interactive: Array<() => void> = []
  readonly #bulk: Array<() => void> = []

  constructor(capacity = 1) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`a gate's capacity is a whole number >= 1`)
    this.#capacity = capacity
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const bulk = isBulkWork()
    await this.#enter(bulk)
    try {
      return await fn()
    } finally {
      this.#leave(bulk)
    }
  }

  /** statements waiting to run, by kind (for tests and metrics) */
  get waiting(): { interactive: number; bulk: number } {
    return { interactive: this.#interactive.length, bulk: this.#bulk.length }
  }

  #enter(bulk: boolean): Promise<void> {
    if (this.#holders < this.#capacity) {
      this.#holders++
      return Promise.resolve()
    }
    return new Promise((resolve) => (bulk ? this.#bulk : this.#interactive).push(resolve))
  }

  #leave(bulk: boolean): void {
    // A request's statements follow one another: its next one is usually asked for as soon as its await resumes, in
    // the microtasks after this one. A waiting bulk statement taking the turn now would make every step of a request
    // wait for a whole bulk statement (an import's batch, a newsletter's), so after an interactive statement the turn
    // is held until the next macrotask, and goes to the request's next statement if it came by then.
    if (!bulk && this.#interactive.length === 0 && this.#bulk.length > 0) {
      setImmediate(() => {
        this.#turnAt = performance.now()
        this.#handOver()
      })
      return
    }
    // Bulk statements pass the turn to each other on the next macrotask once they have run BULK_RUN_MS since the event
    // loop last turned here. The embedded database runs a statement synchronously and each hand-over is a promise's
    // resolution, so a newsletter's queue of statements ran one after another in one chain of microtasks: no timer
    // fired and no request was read until the queue was empty (the event loop's delay was 163–350 ms at the median
    // with a newsletter at 1,000/s). A turn after every bulk statement cost the newsletter a third of its pace.
    if (bulk && this.#interactive.length === 0 && this.#bulk.length > 0) {
      if (performance.now() - this.#turnAt >= BULK_RUN_MS) {
        setImmediate(() => {
          this.#turnAt = performance.now()
          this.#handOver()
        })
        return
      }
    }
    this.#handOver()
  }

  #handOver(): void {
    const interactiveNext =
      this.#interactive.length > 0 && (this.#bulk.length === 0 || this.#streak < INTERACTIVE_STREAK)
    const next = interactiveNext ? this.#interactive.shift() : this.#bulk.shift()
    this.#streak = interactiveNext && this.#bulk.length > 0 ? this.#streak + 1 : 0
    // the holder's turn passes to the next waiter, or the gate has one holder less
    if (next) next()
    else this.#holders--
  }
}
