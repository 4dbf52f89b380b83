import assert from 'node:assert/strict'
import { randomInt } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { sql } from 'drizzle-orm'
import { recordOptinChange } from '../../src/modules/contacts/index.ts'
import { createMember } from '../../src/modules/people/index.ts'
import type { Role } from '../../src/platform/auth/people.tables.ts'
import { rows } from '../../src/platform/db/rows.ts'
import { webAppBuilt } from '../../src/platform/http/web-app.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from './harness.ts'
import { freePort } from './process.ts'

// What many test files set up the same way: phone numbers, a sandbox-connected account, an opt-in, the job queue
// drained, a member signed in to /app, the app on a loopback port.

/**
 * Phone numbers unique in this process (the pid keeps test processes sharing a database apart); `prefix` keeps one
 * file's numbers apart from another's.
 */
export function phoneSequence(prefix = '+4917'): () => string {
  let counter = 0
  return () => `${prefix}${String(process.pid % 1000).padStart(3, '0')}${String(++counter).padStart(5, '0')}`
}

export const nextPhone = phoneSequence('+4917')

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
export type Json = Record<string, any>

let uniqueCounter = 0
/** A string no other call in this test process (nor another process sharing the database) gives. */
export const unique = () => `${process.pid}-${Date.now()}-${++uniqueCounter}`

/** An account with a plan and its chat channel connected to the sandbox provider. */
export async function sandboxAccount(
  harness: Harness,
  plan: { messagesPerMonth?: number; requestsPerMinute?: number } = { messagesPerMonth: 1000 },
  name?: string,
): Promise<TestAccount> {
  const account = await createTestAccount(harness, { plan, name })
  await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
  return account
}

/** A message from a customer through the sandbox's inbound endpoint (200 expected); answers how many were stored. */
export async function sandboxInbound(account: TestAccount, body: Record<string, unknown>): Promise<{ stored: number }> {
  const response = await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: body })
  assert.equal(response.statusCode, 200, response.body)
  return response.json() as { stored: number }
}

/** An opt-in change recorded as the consent flow records it (source `test`); by default the chat opt-in confirmed. */
export async function setOptin(
  harness: Harness,
  accountId: string,
  contactId: string,
  to: 'pending' | 'confirmed' | 'opted_out' = 'confirmed',
  channel: 'chat' | 'email' = 'chat',
): Promise<void> {
  await harness.database.orm.transaction((tx) =>
    recordOptinChange(tx, harness.clock, { accountId, contactId, channel, to, source: 'test' }),
  )
}

/** Runs every due job of a harness whose runner is stopped between steps, and stops it again. */
export async function drainJobs(harness: Harness): Promise<void> {
  await harness.jobs!.start()
  await harness.jobs!.drain()
  await harness.jobs!.stop()
}

/** Serves the harness's app on a loopback port (for MCP clients and browsers); its base address. */
export async function listenOnLoopback(harness: Harness): Promise<string> {
  await harness.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(harness.app.server.address() as AddressInfo).port}`
}

/**
 * A harness serving the built web app on a loopback port chosen first, so that its public URL (the links it makes)
 * is the address a browser opens; that base address.
 */
export async function servedHarness(
  options: Parameters<typeof createHarness>[0] = {},
): Promise<{ harness: Harness; base: string }> {
  assert.ok(webAppBuilt(), 'the web app is built (npm install does it; npm run web:build by hand)')
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const harness = await createHarness({ ...options, config: { publicUrl: base, ...options.config } })
  await harness.app.listen({ host: '127.0.0.1', port })
  return { harness, base }
}

export interface SignedIn {
  /** the account the session is in */
  accountId: string
  /** the session cookie, `name=value` */
  cookie: string
  csrf: string
  /** the cookie and the CSRF token, as a changing /app request sends them */
  headers: { cookie: string; 'x-csrf-token': string }
}

/** A random private address: sign-ins are limited per address, and on Redis the limit is shared by every test file. */
export const ownAddress = () => `10.${randomInt(1, 255)}.${randomInt(256)}.${randomInt(1, 255)}`

/** POST /app/sign-in; fails the test unless it is a 200. */
export async function signIn(
  harness: Harness,
  credentials: { email: string; password: string },
  remoteAddress = ownAddress(),
): Promise<SignedIn> {
  const response = await harness.app.inject({
    method: 'POST',
    url: '/app/sign-in',
    payload: credentials,
    remoteAddress,
  })
  assert.equal(response.statusCode, 200, response.body)
  const cookie = String(response.headers['set-cookie']).split(';')[0]
  const { csrf_token: csrf, account } = response.json() as { csrf_token: string; account: { id: string } }
  return { accountId: account.id, cookie, csrf, headers: { cookie, 'x-csrf-token': csrf } }
}

/** A member of the account with this role, signed in to /app. */
export async function signedInMember(
  harness: Harness,
  member: { accountId: string; role: Role; email: string; password: string; name?: string },
  remoteAddress = ownAddress(),
): Promise<SignedIn & { id: string }> {
  const { accountId, role, email, password, name = 'M' } = member
  const user = await createMember(harness.database.orm, { accountId, email, name, password, role })
  return { id: user.id, ...(await signIn(harness, { email, password }, remoteAddress)) }
}

/** An /app request with a member's session: the cookie, and the CSRF token on every changing request. */
export type AppCall = (
  method: 'GET' | 'PUT' | 'PATCH' | 'POST' | 'DELETE',
  url: string,
  payload?: Json,
) => Promise<{ status: number; body: Json }>

/** A member of the account with this role, signed in to /app, and a call with their session. */
export async function appMember(
  harness: Harness,
  account: { accountId: string },
  { role = 'member', name = 'M' }: { role?: Role; name?: string } = {},
): Promise<{ id: string; call: AppCall }> {
  const signed = await signedInMember(harness, {
    accountId: account.accountId,
    email: `member-${unique()}@example.org`,
    password: 'member password 12',
    role,
    name,
  })
  return {
    id: signed.id,
    async call(method, url, payload) {
      const headers = method === 'GET' ? { cookie: signed.cookie } : signed.headers
      const response = await harness.app.inject({
        method,
        url,
        headers,
        payload: method === 'GET' ? undefined : payload,
      })
      return { status: response.statusCode, body: response.json() as Json }
    },
  }
}

/**
 * A contact created through REST who then wrote through the sandbox, the chat opt-in confirmed: a contact who wrote
 * within 24 hours, with its conversation.
 */
export async function contactWhoWrote(
  harness: Harness,
  account: TestAccount,
  { name = 'Erika Mustermann', email }: { name?: string; email?: string } = {},
): Promise<{ contactId: string; phone: string; conversationId: string }> {
  const phone = nextPhone()
  const created = await account.request({
    method: 'POST',
    url: '/v1/contacts',
    payload: { name, phone, ...(email ? { email } : {}) },
  })
  assert.equal(created.statusCode, 201, created.body)
  const contactId = created.json().contact.id as string
  await sandboxInbound(account, { from: phone, text: 'Hallo' })
  await setOptin(harness, account.accountId, contactId)
  const [conversation] = rows<{ id: string }>(
    await harness.database.orm.execute(
      sql`SELECT id FROM conversations WHERE account_id = ${account.accountId} AND contact_id = ${contactId}`,
    ),
  )
  return { contactId, phone, conversationId: conversation.id }
}

/** The body of an /app answer below 300; otherwise the test fails with the status and body. */
export async function succeeded(answer: ReturnType<AppCall>): Promise<Json> {
  const { status, body } = await answer
  assert.ok(status < 300, `${status} ${JSON.stringify(body)}`)
  return body
}

/** A customer's message through the sandbox (with a profile name where given); the id of its conversation. */
export async function inboundConversation(
  harness: Harness,
  account: TestAccount,
  from: string,
  text = 'Hallo?',
  name?: string,
): Promise<string> {
  await sandboxInbound(account, { from, text, ...(name ? { name } : {}) })
  return conversationWith(harness, account, from)
}

/** The id of the account's conversation with the contact of this phone number; the test fails when there is none. */
export async function conversationWith(harness: Harness, account: TestAccount, phone: string): Promise<string> {
  const found = rows<{ id: string }>(
    await harness.database.orm.execute(sql`
      SELECT c.id FROM conversations c JOIN contacts k ON k.account_id = c.account_id AND k.id = c.contact_id
      WHERE c.account_id = ${account.accountId} AND k.phone = ${phone}`),
  )
  assert.ok(found[0], `no conversation for ${phone}`)
  return found[0].id
}
