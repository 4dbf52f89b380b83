import { createTestAccount, type Harness, type TestAccount } from './harness.ts'
import { McpClients } from './mcp-client.ts'
import { type FileHarnessOptions, harnessPerFile } from './test-file.ts'

// What the MCP tool test files set up the same way: the file's harness served on loopback to the SDK's clients, a
// client for a token, and a new account with a client for its key.

type AccountOptions = NonNullable<Parameters<typeof createTestAccount>[1]>

export interface McpFile {
  clients: McpClients
  /** a client connected with the token (an API key or an OAuth access token) */
  mcp: (token: string) => ReturnType<McpClients['connect']>
  /** a new account (made with the file's `account` options) and a client for its key */
  account: () => Promise<TestAccount & { client: Awaited<ReturnType<McpClients['connect']>> }>
}

/** The file's harness (given to `use` once made) with MCP clients; closed after the file's tests. */
export function mcpHarnessPerFile(
  use: (harness: Harness) => void,
  options: Omit<FileHarnessOptions, 'mcp'> & { account?: AccountOptions } = {},
): McpFile {
  const { account: accountOptions, ...harnessOptions } = options
  const clients = new McpClients()
  let harness: Harness
  harnessPerFile({ ...harnessOptions, mcp: clients }, (created) => {
    harness = created
    use(created)
  })
  const mcp = (token: string) => clients.connect(token)
  return {
    clients,
    mcp,
    async account() {
      const created = await createTestAccount(harness, accountOptions)
      return { ...created, client: await mcp(created.key) }
    },
  }
}
