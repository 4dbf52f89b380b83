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
/** options given as a function are made when the hook runs: it may start first what the harness needs (a fake server) */
type Options = FileHarnessOptions | (() => FileHarnessOptions | Promise<FileHarnessOptions>)

/**
 * A test file's harness: created before its tests, closed after them; `use` receives it once created. A file's
 * top-level `before` hooks run at the same time (its `after` hooks one by one, in order).
 */
export function harnessPerFile(...args: [use: UseHarness] | [options: Options, use: UseHarness]): void {
  const [options, use] = args.length === 1 ? [{}, args[0]] : args
  let harness: Harness | undefined
  let mcpClients: McpClients | undefined
  before(async () => {
    const { mcp, drainOnly, ...harnessOptions } = typeof options === 'function' ? await options() : options
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
