import type { MessageStatusListener } from '../inbox/index.ts'
import { sendAcceptance } from './messaging.accept.ts'
import type { TemplateSendsDeps } from './messaging.ports.ts'
import * as repo from './messaging.repository.ts'
import { sendStatusChange } from './messaging.rules.ts'
import { sendDelivery } from './messaging.worker.ts'

export {
  MAX_RATE_LIMITED_ATTEMPTS,
  type SendsTenant,
  TEMPLATE_SEND_QUEUE,
  type TemplateSendsDeps,
} from './messaging.ports.ts'
export { SEND_WAIT_RETRY_MS, sendStatusChange, sendView, templateRefusal, WAIT_REASONS } from './messaging.rules.ts'

/** Template sends: accepted (POST /messages) on one side, delivered by the worker on the other. */
export function templateSends(deps: TemplateSendsDeps) {
  return { ...sendAcceptance(deps), ...sendDelivery(deps) }
}

/** Provider statuses of outbound messages (the inbox's listener): the matching send records move forward only. */
export const applySendStatuses: MessageStatusListener = async (tx, accountId, updates) => {
  const rows = await repo.sendsByMessageIds(
    tx,
    accountId,
    updates.map((u) => u.messageId),
  )
  const byMessage = new Map(rows.map((r) => [r.messageId, r]))
  // the changes of the batch are written together, one statement (a send's later change builds on its earlier one)
  const changed = new Map<string, repo.TemplateSendRow>()
  for (const update of updates) {
    const row = byMessage.get(update.messageId)
    if (!row) continue
    const change = sendStatusChange(row, update)
    if (!change) continue
    const next = { ...row, ...change, updatedAt: update.at }
    byMessage.set(update.messageId, next)
    changed.set(row.id, next)
  }
  await repo.setSendStatuses(tx, accountId, [...changed.values()])
}

export type TemplateSends = ReturnType<typeof templateSends>
