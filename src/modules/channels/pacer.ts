import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { bookSlots, PACE_GUARD } from '../../platform/jobs/jobs.ts'

/** Coexistence (the number also in use in the WhatsApp Business app) allows 20 messages per second. */
export const COEXISTENCE_MESSAGES_PER_SECOND = 20
export const DEFAULT_MESSAGES_PER_SECOND = 80
export const MAX_MESSAGES_PER_SECOND = 1000
/**
 * The paced lane (platform/jobs setPace) of an account's chat number, for every process together: its template sends
 * are claimed at its pace, and every message of the number books its slot on it as it leaves (createPacer).
 */
export const CHAT_LANE = 'chat'
/**
 * A message that wakes this much after its slot (a busy process, a long pause of its event loop) does not leave
 * then, with the others that waited as long: it books a new slot. Sent late together, a batch of messages made a
 * second of more than the pace with the messages of their own time (PACE_GUARD leaves 25 ms a second for lateness).
 */
export const PACE_LATE_MS = 20
/** how many times a message late for its slot books a new one before it leaves late (a process starved of CPU) */
const LATE_REBOOKS = 3
/**
 * The longest a message waits for its slot: a lane booked further ahead (a clock set back, as tests do) must not hold
 * a send for hours. At a sane pace its booked slots reach a second or two ahead.
 */
const MAX_SLOT_WAIT_MS = 30_000

export function effectiveRate(messagesPerSecond: number, coexistence: boolean): number {
  if (coexistence) return COEXISTENCE_MESSAGES_PER_SECOND
  return Math.min(MAX_MESSAGES_PER_SECOND, Math.max(1, messagesPerSecond))
}

/**
 * The pace of a chat number's messages, for every API and worker process together: `slots` books the next slots of
 * the account's CHAT_LANE in the database (platform/jobs bookSlots, one UPDATE for a batch) and `leave` waits for one
 * (booking a new one when the process woke too late for it); `pace` does both for one message (free text, media,
 * consent messages, AI replies). The claim of template sends takes the lane's jobs only while its booked slots leave
 * room (PACE_WINDOW_MS) and up to PACE_IN_FLIGHT_MS of its pace in flight, so an interactive message waits behind at
 * most that much, never behind a campaign's queued sends. A chat connection without a lane row (none is expected:
 * connecting sets it) falls back to a pacer in this process, a generic cell rate algorithm with the same interval
 * and burst (`reserve`).
 */
export function createPacer(clock: Clock, lane: { db?: Db; burstMs?: number } = {}) {
  const theoretical = new Map<string, number>()
  const burstMs = lane.burstMs ?? 0
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  /** the in-process fallback: milliseconds the caller must wait before this send; the slot is booked either way */
  function reserve(number: string, perSecond: number): number {
    const now = clock.now().getTime()
    const interval = (1000 * PACE_GUARD) / perSecond
    const tat = Math.max(theoretical.get(number) ?? -Infinity, now - burstMs)
    theoretical.set(number, tat + interval)
    return Math.max(0, tat - now)
  }

  /** the next `count` slots of the number (its account's lane) */
  async function slots(accountId: string, number: string, perSecond: number, count: number): Promise<Date[]> {
    const booked = lane.db ? await bookSlots(lane.db, clock, { accountId, lane: CHAT_LANE, count, burstMs }) : null
    if (booked) return booked
    return Array.from({ length: count }, () => new Date(clock.now().getTime() + reserve(number, perSecond)))
  }

  /**
   * waits for `slot`; woken more than PACE_LATE_MS after it (or after `bookedAt`, when its booking answered only after
   * the slot), books a new slot and waits for that
   */
  async function leave(
    accountId: string,
    number: string,
    perSecond: number,
    slot: Date,
    bookedAt: Date,
  ): Promise<void> {
    let at = slot.getTime()
    let since = bookedAt.getTime()
    for (let rebooks = 0; ; rebooks++) {
      const wait = Math.min(at - clock.now().getTime(), MAX_SLOT_WAIT_MS)
      if (wait >= 1) await sleep(wait)
      if (clock.now().getTime() - Math.max(at, since) <= PACE_LATE_MS || rebooks === LATE_REBOOKS) return
      at = (await slots(accountId, number, perSecond, 1))[0].getTime()
      since = clock.now().getTime()
    }
  }

  return {
    reserve,
    slots,
    leave,
    /** books this message's slot on the number's lane and waits for it */
    async pace(accountId: string, number: string, perSecond: number): Promise<void> {
      const [slot] = await slots(accountId, number, perSecond, 1)
      await leave(accountId, number, perSecond, slot, clock.now())
    },
  }
}

export type Pacer = ReturnType<typeof createPacer>
