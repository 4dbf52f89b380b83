import assert from 'node:assert/strict'
import { test } from 'node:test'
import { catalogue } from '../../src/mcp/catalogue.ts'
import { connectMcp, toolConfirmed, toolOk } from '../helpers/mcp-client.ts'
import { childEnv, freePort, listeningAt, startProcess, tempDataDir } from '../helpers/process.ts'

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

test('npm start serves the tool server: an MCP client with the printed key lists the tools and calls them', async () => {
  const port = await freePort()
  const server = await startProcess(
    npm,
    ['start'],
    childEnv({ HEROLD_DATA_DIR: tempDataDir(), PORT: String(port) }),
    listeningAt,
  )
  try {
    const key = /HEROLD_API_KEY=(hk_[A-Za-z0-9_-]+)/.exec(server.output())?.[1]
    assert.ok(key, server.output())
    const client = await connectMcp(server.url, key)
    try {
      assert.equal(client.getServerVersion()?.name, 'herold')
      const { tools } = await client.listTools()
      assert.equal(tools.length, catalogue.length)
      assert.equal((await toolOk(client, 'get_account')).account.name, 'Default')
      const created = await toolOk(client, 'create_contact', { name: 'Erika Mustermann', phone: '+49 151 12345678' })
      const found = await toolOk(client, 'search_contacts', { query: 'erika' })
      assert.deepEqual(
        found.contacts.map((c: { id: string }) => c.id),
        [created.contact.id],
      )
      const deleted = await toolConfirmed(client, 'delete_contact', { contact_id: created.contact.id })
      assert.equal(deleted.ok, true)
      assert.equal((await toolOk(client, 'search_contacts', { query: 'erika' })).contacts.length, 0)
    } finally {
      await client.close()
    }
  } finally {
    await server.stop()
  }
})
