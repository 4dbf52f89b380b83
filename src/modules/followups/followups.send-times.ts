import { sql } from 'drizzle-orm'
import { badRequest } from '../../platform/http/errors.ts'
import type { FollowupsCore, FollowupsDeps, FollowupsTenant } from './followups.core.ts'
import { rescheduleNextSteps } from './followups.enrollment.ts'
import * as repo from './followups.repository.ts'
import { UUID } from './followups.repository.ts'
import { checkSendTime } from './followups.rules.ts'
import { isTimezone } from './followups.timing.ts'

/** The account's follow-up timing: its send time, timezone and the steps' own send times. */
export function followupSendTimes(deps: FollowupsDeps, _core: FollowupsCore) {
  const { db, clock } = deps
  return {
    async timing(tenant: FollowupsTenant) {
      const timing = await repo.timingOf(db, tenant.accountId)
      const steps = await repo.stepSendTimes(db, tenant.accountId)
      return {
        send_time: timing.sendTime,
        timezone: timing.timezone,
        steps: steps.map((r) => ({
          id: r.id,
          sequence_id: r.sequence_id,
          position: Number(r.position),
          send_time: r.send_time,
        })),
      }
    },

    /**
     * PATCH /settings/followup-timing: send_time (HH:MM or null), timezone (IANA), steps [{id, send_time}] (steps of
     * other accounts and unknown ids are silently skipped). Scheduled step times move accordingly.
     */
    async updateTiming(
      tenant: FollowupsTenant,
      input: { send_time?: string | null; timezone?: string; steps?: Array<{ id: string; send_time: string | null }> },
    ) {
      checkSendTime(input.send_time, 'send_time')
      if (input.timezone !== undefined && !isTimezone(input.timezone)) {
        throw badRequest(`timezone must be an IANA name such as Europe/Berlin; "${input.timezone}" is unknown`)
      }
      for (const [i, step] of (input.steps ?? []).entries()) checkSendTime(step.send_time, `steps[${i}].send_time`)
      await db.transaction(async (tx) => {
        if (input.send_time !== undefined || input.timezone !== undefined) {
          const now = clock.now()
          const current = await repo.timingOf(tx, tenant.accountId)
          const row = await repo.storedTiming(tx, tenant.accountId)
          const sendTime = input.send_time === undefined ? (row?.send_time ?? current.sendTime) : input.send_time
          const timezone = input.timezone ?? row?.timezone ?? null
          await repo.saveTiming(tx, { accountId: tenant.accountId, sendTime, timezone, now })
        }
        const own = (input.steps ?? []).filter((s) => UUID.test(s.id))
        if (own.length > 0) await repo.setStepSendTimes(tx, tenant.accountId, own, clock.now())
        await rescheduleNextSteps(tx, clock, tenant.accountId, sql`TRUE`)
      })
      return this.timing(tenant)
    },
  }
}
