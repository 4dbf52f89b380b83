import { after, before } from 'node:test'
import { createHarness, type Harness } from './harness.ts'
import type { McpClients } from './mcp-client.ts'

export type HarnessOptions = NonNullable<Parameters<typeof createHarness>[0]>

export interface FileHarnessOptions extends HarnessOptions {
  /** serves the app on loopback to these MCP clients, closed before the harness */
  mcp?: McpClients
  /** with `workers`: the runner is stopped, jobs run only inside drainJobs(), so a test sees each state between steps */
  drainOnly?: boolean
}

/**
 * A test file's harness: created before its tests, closed after them; `use` receives it once created. Register a
 * file's own `before` first when the harness needs it (hooks run in the order they are registered).
 */
export function harnessPerFile(use: (harness: Harness) => void): void
export function harnessPerFile(options: FileHarnessOptions, use: (harness: Harness) => void): void
export function harnessPerFile(
  first: FileHarnessOptions | ((harness: Harness) => void),
  second?: (harness: Harness) => void,
): void {
  const [options, use] = typeof first === 'function' ? [{}, first] : [first, second!]
  const { mcp, drainOnly, ...harnessOptions } = options
  let harness: Harness | undefined
  before(async () => {
    harness = await createHarness(drainOnly ? { ...harnessOptions, workers: true } : harnessOptions)
    if (drainOnly) await harness.jobs!.stop()
    if (mcp) await mcp.listen(harness)
    use(harness)
  })
  after(async () => {
    await mcp?.close()
    await harness?.close()
  })
}
