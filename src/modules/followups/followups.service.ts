import { type FollowupsDeps, followupsCore } from './followups.core.ts'
import { followupEnrollments } from './followups.enrollments.ts'
import { followupSendTimes } from './followups.send-times.ts'
import { followupSequences } from './followups.sequences.ts'
import { followupStatistics } from './followups.statistics.ts'
import { followupSteps } from './followups.steps.ts'
import type { DelayUnit, SequenceStatus, SequenceTrigger } from './followups.tables.ts'
import { followupRunner } from './followups.worker.ts'

export type { FollowupsDeps, FollowupsTenant, FollowupTemplates, SequenceInput } from './followups.core.ts'
export {
  ACTIVATION_BATCH,
  deleteContactEnrollments,
  enrollContact,
  followupSignals,
  followupTemplateUses,
  sequenceExists,
} from './followups.enrollment.ts'
export { FOLLOWUP_STEP_QUEUE } from './followups.repository.ts'
export type { StepInput } from './followups.rules.ts'
export { firstFutureStep, LATE_AFTER_MS, WAIT_RETRY_MS } from './followups.schedule.ts'

/**
 * The follow-ups service: its responsibilities in files of their own (sequences, steps, enrollments, send times,
 * statistics), composed over the helpers they share (followups.core.ts).
 */
export function followupsService(deps: FollowupsDeps) {
  const core = followupsCore(deps)
  return {
    ...followupSequences(deps, core),
    ...followupSteps(deps, core),
    ...followupEnrollments(deps, core),
    ...followupSendTimes(deps, core),
    ...followupStatistics(deps, core),
    // the step jobs' runner
    ...followupRunner(deps),
  }
}

export type FollowupsService = ReturnType<typeof followupsService>
export type { DelayUnit, SequenceStatus, SequenceTrigger }
