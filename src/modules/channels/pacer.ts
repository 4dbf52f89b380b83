import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { perTick } from '../../platform/db/per-tick.ts'
import { bookSlots, PACE_GUARD, PACE_LATE_MS, PACE_TICK_MS } from '../../platform/jobs/jobs.ts'

/** Coexistence (the number also in use in the WhatsApp Business app) allows 20 messages per second. */
export const COEXISTENCE_MESSAGES_PER_SECOND = 20
export const DEFAULT_MESSAGES_PER_SECOND = 80
export const MAX_MESSAGES_PER_SECOND = 1000
/**
 * The paced lane (platform/jobs setPace) of an account's chat number, for every process together: its template sends
 * are claimed with a slot each on it, and every other message of the number books its slot on it (createPacer).
 */
export const CHAT_LANE = 'chat'

export function effectiveRate(messagesPerSecond: number, coexistence: boolean): number {
  if (coexistence) return COEXISTENCE_MESSAGES_PER_SECOND
  return Math.min(MAX_MESSAGES_PER_SECOND, Math.max(1, messagesPerSecond))
}

/**
 * The pace of a chat number's messages sent outside the job claim (free text, media, consent messages, AI replies).
 * `pace` books the message's slot on the account's CHAT_LANE in the database (platform/jobs bookSlots: one UPDATE for the
 * messages of a turn, which moves the lane past them) and waits for it: the same lane the claim of template sends books its slots on, so all the
 * number's messages, from every API and worker process, keep one pace together. An interactive message waits behind
 * the slots already booked (at most PACE_WINDOW_MS of the claim's and those of other interactive messages), never
 * behind a campaign's queued sends. A chat connection without a lane row (none is expected: connecting sets it) falls
 * back to a pacer in this process, a generic cell rate algorithm with the same burst (`reserve`).
 */
export function createPacer(clock: Clock, lane: { db?: Db; burstMs?: number; exclusive?: boolean } = {}) {
  const theoretical = new Map<string, number>()
  const burstMs = lane.burstMs ?? 0
  // the messages of a turn (or, while a booking is on its way, of the turns until it is answered) book together
  const book = perTick(
    (db: Db, accountIds: readonly string[]) => bookSlots(db, clock, { lane: CHAT_LANE, burstMs }, accountIds),
    { grouped: true, maxBatchSize: 1_000 },
  )
  // One timer per tick of PACE_TICK_MS, shared by the messages whose slots fall in it: they leave together, in one turn
  // of the event loop, so what a provider call writes (the sandbox's outbox, the statuses after it) is written for
  // them together, as it was when a claim's messages all left at once.
  const ticks = new Map<number, Promise<void>>()
  const tickOf = (slot: Date) => Math.floor(slot.getTime() / PACE_TICK_MS) * PACE_TICK_MS
  const waitFor = (slot: Date): Promise<void> => {
    const at = tickOf(slot)
    const wait = at - clock.now().getTime()
    if (wait < 1) return Promise.resolve()
    let tick = ticks.get(at)
    if (!tick) {
      tick = new Promise<void>((resolve) =>
        setTimeout(() => {
          ticks.delete(at)
          resolve()
        }, wait),
      )
      ticks.set(at, tick)
    }
    return tick
  }
  /** waits for `slot`'s tick; false when this process got there more than PACE_LATE_MS after it (the slot is spent) */
  const reached = async (slot: Date) => {
    await waitFor(slot)
    // with a burst the operator set, slots in the past are the burst's: it allows a second over the pace anyway; the
    // only process of the database (embedded) holds late messages at its own window instead (`admit`)
    return burstMs > 0 || lane.exclusive === true || clock.now().getTime() - tickOf(slot) <= PACE_LATE_MS
  }
  // The embedded database has one process, so every message of a number leaves through this pacer: it keeps the
  // times its messages left in the last second (real time, not the injectable clock) and holds one that would make
  // more than the pace in any second until the oldest is a second old. A late message (the embedded database runs on
  // this thread, so timers fire late while it works) waits a moment instead of giving up its slot.
  const left = new Map<string, number[]>()
  /** waits while the last second's window is full; the moment it let the message go (performance.now()), if it kept one */
  const admit = async (number: string, perSecond: number): Promise<number | undefined> => {
    if (!lane.exclusive || burstMs > 0) return undefined
    const times = left.get(number) ?? []
    left.set(number, times)
    for (;;) {
      const now = performance.now()
      // 1,001 ms: the times recorded (sent_at) hold whole milliseconds
      while (times.length > 0 && times[0] <= now - 1001) times.shift()
      if (times.length < perSecond) {
        times.push(now)
        return now
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.ceil(times[0] + 1001 - now))))
    }
  }
  const pacer = {
    /** the in-process fallback: milliseconds the caller must wait before this send; the slot is booked either way */
    reserve(number: string, perSecond: number): number {
      const now = clock.now().getTime()
      const interval = (1000 * PACE_GUARD) / perSecond
      const tat = Math.max(theoretical.get(number) ?? -Infinity, now - burstMs)
      theoretical.set(number, tat + interval)
      return Math.max(0, tat - now)
    },
    /**
     * Books this message's slot on the account's chat lane (every process's) and waits for it. A slot reached more
     * than PACE_LATE_MS late (a busy process) is given up and a new one booked: sent late, the message would crowd the
     * second of the slots after it, which the lane has already given out. Answers what `admit` answers.
     */
    async pace(accountId: string, number: string, perSecond: number): Promise<number | undefined> {
      for (let booking = 1; lane.db; booking++) {
        const slot = await book(lane.db, accountId)
        if (!slot) break
        if ((await reached(slot)) || booking === MAX_BOOKINGS) return admit(number, perSecond)
      }
      const wait = pacer.reserve(number, perSecond)
      if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait))
      return admit(number, perSecond)
    },
    /**
     * Waits for the slot a claimed job got on the lane (ClaimedJob.slotAt); reached too late, the message books a new
     * one as `pace` does.
     */
    async atSlot(accountId: string, number: string, perSecond: number, slot: Date): Promise<number | undefined> {
      if (await reached(slot)) return admit(number, perSecond)
      return pacer.pace(accountId, number, perSecond)
    },
  }
  return pacer
}

/** a message late for its slot books again, at most this many times in all (then it goes at the last one reached) */
const MAX_BOOKINGS = 3

export type Pacer = ReturnType<typeof createPacer>
