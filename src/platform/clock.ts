/** The one source of time: tests move it instead of sleeping. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }

export class TestClock implements Clock {
  #at: number
  constructor(start: Date | string = new Date()) {
    this.#at = new Date(start).getTime()
  }
  now(): Date {
    return new Date(this.#at)
  }
  advance(ms: number): void {
    this.#at += ms
  }
  set(at: Date | string): void {
    this.#at = new Date(at).getTime()
  }
}
