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

type UseHarness = (harness: Harness) => void
/** options given as a function are read when the hook runs, after the file's own earlier hooks (a fake server's URL) */
type Options = FileHarnessOptions | (() => FileHarnessOptions)

/**
 * A test file's harness: created before its tests, closed after them; `use` receives it once created. Register a
 * file's own `before` first when the harness needs it (hooks run in the order they are registered).
 */
export function harnessPerFile(...args: [use: UseHarness] | [options: Options, use: UseHarness]): void {
  const [options, use] = args.length === 1 ? [{}, args[0]] : args
  let harness: Harness | undefined
  let mcpClients: McpClients | undefined
  before(async () => {
    const { mcp, drainOnly, ...harnessOptions } = typeof options === 'function' ? options() : options
    harness = await createHarness(drainOnly ? { ...harnessOptions, workers: true } : harnessOptions)
    if (drainOnly) await harness.jobs!.stop()
    mcpClients = mcp
    await mcp?.listen(harness)
    use(harness)
  })
  after(async () => {
    await mcpClients?.close()
    await harness?.close()
  })
}
