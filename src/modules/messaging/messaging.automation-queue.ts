import { randomUUID } from 'node:crypto'
import type { Clock } from '../../platform/clock.ts'
import type { Db } from '../../platform/db/client.ts'
import { enqueue } from '../../platform/jobs/jobs.ts'
import { insertSends } from './messaging.repository.ts'
import { TEMPLATE_SEND_QUEUE } from './messaging.sends.ts'

/**
 * The template sends of a batch of automation runs' steps, queued in the runs' transaction: each send record exists
 * exactly when the step that sends is recorded, and the send pipeline re-checks consent, quota and the template right
 * before sending. The send records and their jobs in two statements.
 */
export async function queueAutomationTemplateSends(
  tx: Db,
  clock: Clock,
  list: Array<{
    accountId: string
    contactId: string
    templateId: string
    variables: Record<string, string>
    runId: string
  }>,
): Promise<string[]> {
  if (list.length === 0) return []
  const now = clock.now()
  const ids = list.map(() => randomUUID())
  await insertSends(
    tx,
    list.map((input, i) => ({
      accountId: input.accountId,
      id: ids[i],
      contactId: input.contactId,
      templateId: input.templateId,
      variables: input.variables,
      status: 'queued' as const,
      origin: 'automation' as const,
      originId: input.runId,
      createdAt: now,
      updatedAt: now,
    })),
  )
  await enqueue(
    tx,
    clock,
    list.map((input, i) => ({ accountId: input.accountId, queue: TEMPLATE_SEND_QUEUE, payload: { send_id: ids[i] } })),
  )
  return ids
}
