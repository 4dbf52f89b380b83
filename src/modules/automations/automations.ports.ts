import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import type { ClaimedJob } from '../../platform/jobs/jobs.ts'
import type { OutboundHttp } from '../../platform/outbound-http.ts'
import type { SecretBox } from '../../platform/secrets.ts'
import type { ChannelsService } from '../channels/index.ts'
import type { MessagingService, queueAutomationTemplateSends } from '../messaging/index.ts'
import type { AutomationRow, RunRow } from './automations.repository.ts'
import type { Step } from './automations.rules.ts'
import type { RunState } from './automations.tables.ts'

export const RUN_QUEUE = 'automations.run'
export const CALENDAR_POLL_QUEUE = 'automations.calendar_poll'
export const CALENDAR_START_QUEUE = 'automations.calendar_start'
/** the run queue's attempts for a thrown error (its handler's maxAttempts in index.ts) */
export const RUN_MAX_ATTEMPTS = 10

/** What running the steps needs: the calls out (messages, e-mail, webhooks) and the other modules' writes. */
export interface AutomationsEngineDeps {
  db: Db
  clock: Clock
  secrets: SecretBox
  http: OutboundHttp
  messaging: Pick<MessagingService, 'send'>
  channels: Pick<ChannelsService, 'sendEmail'>
  sign: (secret: string, timestamp: number, body: string) => string
  startOptin: (
    tx: Db,
    clock: Clock,
    input: { accountId: string; contactId: string; channel: 'chat' | 'email' },
  ) => Promise<boolean>
  /** queues the template sends of a batch of runs' steps in the batch's transaction (send ids in order) */
  queueTemplateSends: typeof queueAutomationTemplateSends
  userAgent: string
  /** the follow-ups module: enrolling a contact in the run's transaction */
  followups: {
    enroll(
      tx: Db,
      clock: Clock,
      input: { accountId: string; sequenceId: string; contactId: string },
    ): Promise<{ enrolled: boolean; enrollment_id: string | null; reason: string | null }>
  }
}

export const FINAL: RunState[] = ['completed', 'failed', 'cancelled']

// A batch's runs as the walk (automations.walk.ts), the call out and the engine hand them to each other.

/** a step that calls out after the commit */
export type External = Extract<Step, { type: 'send_text' | 'webhook' | 'notify_team' }>
/** what a call out answered: done (with what to log) or failed (to retry, for webhook steps) */
export type CallResult = { ok: true; detail?: Record<string, unknown> } | { ok: false; reason: string; retry?: boolean }
/** a job of the batch: its run, and the result of the run's call out when it made one since its last commit */
export type Pending = {
  job: ClaimedJob
  runId: string
  result?: { index: number; step: External; outcome: CallResult }
  /** the call out threw (not an answer): the job is tried again with the runner's backoff, the run stays `sending` */
  thrown?: string
}
/** a run whose step calls out after the commit (its job stays held until the result is recorded) */
export type Calling = {
  job: ClaimedJob
  run: RunRow
  automation: AutomationRow
  step: External
  index: number
}
/** one run in a round: its state as it will be written, and what the round does with its job */
export type Walk = {
  job: ClaimedJob
  run: RunRow
  automation: AutomationRow | null
  changed: boolean
  /** done stepping in this transaction: the job completes (or was requeued) unless `calling` */
  stopped: boolean
  calling?: { step: External; index: number }
  /** the run's next job, when it waits for a time */
  nextJobAt?: Date
  retryAt?: Date
  retryError?: string
  /** given up after the queue's attempts (the runner's maxAttempts for a thrown error) */
  dead?: boolean
}
