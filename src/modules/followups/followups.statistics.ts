import { rangeStart, type StatisticsRange, sendFunnel } from '../../platform/http/statistics.ts'
import type { FollowupsCore, FollowupsDeps, FollowupsTenant } from './followups.core.ts'
import * as repo from './followups.repository.ts'

/** A sequence's statistics over a range. */
export function followupStatistics(deps: FollowupsDeps, core: FollowupsCore) {
  const { db, clock } = deps
  const { require } = core
  return {
    /**
     * GET /followups/{id}/statistics: enrollments started in the range by their status now, and the sends of each
     * step in the range by the furthest status reached.
     */
    async statistics(tenant: FollowupsTenant, id: string, range: StatisticsRange) {
      const sequence = await require(db, tenant.accountId, id)
      const since = rangeStart(clock.now(), range)
      const enrollments = { started: 0, active: 0, completed: 0, stopped: 0 }
      for (const r of await repo.enrollmentCountsOf(db, tenant.accountId, [sequence.id], since)) {
        enrollments[r.status] = Number(r.n)
        enrollments.started += Number(r.n)
      }
      const steps = await repo.stepsOf(db, tenant.accountId, sequence.id)
      const perStep = new Map<string, Record<string, number>>()
      if (steps.length > 0) {
        const counts = await repo.sendCountsOf(
          db,
          tenant.accountId,
          steps.map((s) => s.id),
          since,
        )
        for (const r of counts) {
          const entry = perStep.get(r.origin_id) ?? {}
          entry[r.status] = (entry[r.status] ?? 0) + Number(r.n)
          perStep.set(r.origin_id, entry)
        }
      }
      const all: Record<string, number> = {}
      for (const entry of perStep.values()) for (const [k, n] of Object.entries(entry)) all[k] = (all[k] ?? 0) + n
      const finished = enrollments.completed + enrollments.stopped
      return {
        followup_id: sequence.id,
        name: sequence.name,
        range,
        since,
        enrollments: {
          ...enrollments,
          completion_rate: finished === 0 ? null : Math.round((enrollments.completed / finished) * 10_000) / 10_000,
        },
        sends: sendFunnel(all),
        steps: steps.map((s) => ({ step_id: s.id, position: s.position, sends: sendFunnel(perStep.get(s.id) ?? {}) })),
      }
    },
  }
}
