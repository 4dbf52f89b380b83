import type { Clock } from '../../platform/clock.ts'

/** Coexistence (the number also in use in the WhatsApp Business app) allows 20 messages per second. */
export const COEXISTENCE_MESSAGES_PER_SECOND = 20
export const DEFAULT_MESSAGES_PER_SECOND = 80
export const MAX_MESSAGES_PER_SECOND = 1000

export function effectiveRate(messagesPerSecond: number, coexistence: boolean): number {
  if (coexistence) return COEXISTENCE_MESSAGES_PER_SECOND
  return Math.min(MAX_MESSAGES_PER_SECOND, Math.max(1, messagesPerSecond))
}

/**
 * Outbound pacing per business number, as a generic cell rate algorithm (a token bucket holding one second of
 * sends): `reserve` books the next slot and answers how long to wait before sending. State is in this process:
 * with several worker processes each paces on its own, so the sum can reach processes × rate (a shared
 * Redis bucket would hold across processes; until then run one worker process per number's load).
 */
export function createPacer(clock: Clock) {
  const theoretical = new Map<string, number>()
  return {
    /** milliseconds the caller must wait before this send; the slot is booked either way */
    reserve(number: string, perSecond: number): number {
      const now = clock.now().getTime()
      const interval = 1000 / perSecond
      const burst = 1000 - interval
      const tat = Math.max(theoretical.get(number) ?? now, now)
      const wait = Math.max(0, tat - burst - now)
      theoretical.set(number, tat + interval)
      return wait
    },
    async pace(number: string, perSecond: number): Promise<void> {
      const wait = this.reserve(number, perSecond)
      if (wait >= 1) await new Promise((resolve) => setTimeout(resolve, wait))
    },
  }
}

export type Pacer = ReturnType<typeof createPacer>
