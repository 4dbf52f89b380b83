import { mcpRetention } from './mcp/mcp.retention.ts'
import { modules } from './modules/index.ts'
import type { Retention } from './platform/db/maintenance.ts'

/** The upkeep every owner of tables declares (the modules, the tool server), handed to the maintenance worker. */
export const declaredRetention: Retention[] = [
  ...modules.flatMap((module) => (module.retention ? [module.retention] : [])),
  mcpRetention,
]
