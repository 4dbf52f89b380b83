import assert from 'node:assert/strict'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { listenOnLoopback } from './fixtures.ts'
import type { Harness } from './harness.ts'

// biome-ignore lint/suspicious/noExplicitAny: tool results are read loosely in tests
export type Json = Record<string, any>

/**
 * An MCP client of the official SDK, over Streamable HTTP, with a Bearer credential. It lists the tools first, so the
 * SDK validates every call's structuredContent against the tool's outputSchema (a mismatch throws).
 */
export async function connectMcp(base: string, token: string): Promise<Client> {
  const client = new Client({ name: 'herold-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
    }),
  )
  await client.listTools()
  return client
}

/** A test file's MCP clients, to the harness's app served on loopback; `close()` closes every one. */
export class McpClients {
  /** the app's address, once `listen` has served it */
  base = ''
  readonly #open: Client[] = []

  async listen(harness: Harness): Promise<string> {
    this.base = await listenOnLoopback(harness)
    return this.base
  }

  async connect(token: string): Promise<Client> {
    const client = await connectMcp(this.base, token)
    this.#open.push(client)
    return client
  }

  async close(): Promise<void> {
    for (const client of this.#open) await client.close().catch(() => {})
  }
}

export async function callTool(client: Client, name: string, args: Json = {}) {
  const result = await client.callTool({ name, arguments: args })
  return { isError: result.isError === true, data: (result.structuredContent ?? {}) as Json }
}

/** The tool's structured result; fails the test on a tool error. */
export async function toolOk(client: Client, name: string, args: Json = {}): Promise<Json> {
  const outcome = await callTool(client, name, args)
  assert.equal(outcome.isError, false, `${name}: ${JSON.stringify(outcome.data)}`)
  return outcome.data
}

/** The tool error's envelope; fails the test unless the tool answers this code (and key). */
export async function toolFails(client: Client, name: string, args: Json, code: string, key?: string): Promise<Json> {
  const outcome = await callTool(client, name, args)
  assert.equal(outcome.isError, true, `${name} should fail: ${JSON.stringify(outcome.data)}`)
  assert.equal(outcome.data.error.code, code, JSON.stringify(outcome.data))
  if (key) assert.equal(outcome.data.error.key, key, JSON.stringify(outcome.data))
  assert.equal(typeof outcome.data.error.message, 'string')
  return outcome.data.error
}

/** A two-step tool: the preview, then the same call with its confirm_token. */
export async function toolConfirmed(client: Client, name: string, args: Json): Promise<Json> {
  const preview = await toolOk(client, name, args)
  assert.equal(preview.confirmation_required, true, `${name} is two-step`)
  return toolOk(client, name, { ...args, confirm_token: preview.confirm_token })
}
