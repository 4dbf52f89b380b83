import type { Clock } from '../../platform/clock.ts'

/** Coexistence (the number also in use in the WhatsApp Business app) allows 20 messages per second. */
export const COEXISTENCE_MESSAGES_PER_SECOND = 20
export const DEFAULT_MESSAGES_PER_SECOND = 80
export const MAX_MESSAGES_PER_SECOND = 1000
/** The paced lane (platform/jobs setPace) of an account's chat number: its template sends are claimed at its pace. */
export const CHAT_LANE = 'chat'

export function effectiveRate(messagesPerSecond: number, coexistence: boolean): number {
  if (coexistence) return COEXISTENCE_MESSAGES_PER_SECOND
  return Math.min(MAX_MESSAGES_PER_SECOND, Math.max(1, messagesPerSecond))
}

/**
 * Outbound pacing per business number in this process, as a generic cell rate algorithm (a token bucket holding one
 * second of sends): `reserve` books the next slot and answers how long to wait before sending. Template sends are
 * already claimed at the number's pace for all worker processes together (the CHAT_LANE pace of the job claim), so
 * for them this never waits; it spaces the messages sent outside the claim (free text, consent messages, AI replies).
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
