import { mcpRetention } from './mcp/mcp.retention.ts'
import { modules } from './modules/index.ts'
import { authRetention } from './platform/auth/auth.retention.ts'
import type { Retention } from './platform/db/maintenance.ts'
import { eventsRetention } from './platform/events/events.retention.ts'
import { idempotencyRetention } from './platform/idempotency/idempotency.retention.ts'
import { jobsRetention } from './platform/jobs/jobs.retention.ts'

/**
 * The upkeep every owner of tables declares (the platform's parts, the modules, the tool server), handed to the
 * maintenance worker; the platform's first, in the order their deletes ran before they were declared here.
 */
export const declaredRetention: Retention[] = [
  jobsRetention,
  idempotencyRetention,
  authRetention,
  eventsRetention,
  ...modules.flatMap((module) => (module.retention ? [module.retention] : [])),
  mcpRetention,
]
