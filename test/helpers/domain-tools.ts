import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { recordOptinChange } from '../../src/modules/contacts/index.ts'
import { nextPhone } from './fixtures.ts'
import { createHarness, createTestAccount, type Harness } from './harness.ts'
import { McpClients, toolOk } from './mcp-client.ts'

// What the test files of the domain tools (newsletters, follow-ups, templates, media, knowledge, automations,
// statistics) share: the harness served on loopback, accounts with an MCP client, confirmed contacts.

let harness: Harness
export const mcpClients = new McpClients()

/** The harness of a domain-tools test file, served on loopback for the MCP clients. */
export async function domainToolsHarness(): Promise<Harness> {
  harness = await createHarness({ config: { allowPrivateTargets: true } })
  await mcpClients.listen(harness)
  return harness
}

export const mcp = (token: string) => mcpClients.connect(token)

export async function account() {
  const created = await createTestAccount(harness, { plan: { requestsPerMinute: 10_000 } })
  return { ...created, client: await mcp(created.key) }
}

export async function confirmedContact(client: Client, accountId: string, name: string, tags: string[] = []) {
  const { contact } = await toolOk(client, 'create_contact', { name, phone: nextPhone() })
  await harness.database.orm.transaction((tx) =>
    recordOptinChange(tx, harness.clock, {
      accountId,
      contactId: contact.id,
      channel: 'chat',
      to: 'confirmed',
      source: 'test',
    }),
  )
  for (const tag of tags) await toolOk(client, 'add_contact_tag', { contact_id: contact.id, tag })
  return contact.id as string
}
