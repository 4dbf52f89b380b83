import assert from 'node:assert/strict'
import { recordOptinChange } from '../../src/modules/contacts/index.ts'
import { drainJobs, sandboxAccount as fixtureAccount, phoneSequence } from './fixtures.ts'
import type { Harness, TestAccount } from './harness.ts'

// What the newsletters' tests do over and over: accounts on the sandbox, contacts with their chat opt-in, a draft,
// its schedule and status, over the API of the given harness.

export const HOUR = 3600_000
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
export type Json = Record<string, any>

/** POST /v1/newsletters/{id}/schedule at `scheduledAt` (with an Idempotency-Key where given). */
export function scheduleNewsletter(account: TestAccount, id: string, scheduledAt: string, key?: string) {
  return account.request({
    method: 'POST',
    url: `/v1/newsletters/${id}/schedule`,
    payload: { scheduled_at: scheduledAt },
    ...(key ? { headers: { 'idempotency-key': key } } : {}),
  })
}

export function newsletterHelpers(harness: () => Harness) {
  const nextPhone = phoneSequence('+4916')
  const deps = () => ({ config: harness().config, database: harness().database, clock: harness().clock })
  const drain = () => drainJobs(harness())
  const sandboxAccount = (options: { messagesPerMonth?: number } = {}) =>
    fixtureAccount(harness(), { messagesPerMonth: options.messagesPerMonth ?? 1000 })

  async function contact(
    account: TestAccount,
    optin: 'none' | 'pending' | 'confirmed' | 'opted_out',
    tags: string[] = [],
    name = 'Erika Mustermann',
  ): Promise<string> {
    const response = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name, phone: nextPhone() },
    })
    assert.equal(response.statusCode, 201, response.body)
    const id = response.json().contact.id as string
    const steps: Array<'pending' | 'confirmed' | 'opted_out'> =
      optin === 'none'
        ? []
        : optin === 'pending'
          ? ['pending']
          : optin === 'confirmed'
            ? ['confirmed']
            : ['confirmed', 'opted_out']
    for (const to of steps) {
      await harness().database.orm.transaction((tx) =>
        recordOptinChange(tx, harness().clock, {
          accountId: account.accountId,
          contactId: id,
          channel: 'chat',
          to,
          source: 'test',
        }),
      )
    }
    for (const tag of tags) {
      const added = await account.request({ method: 'POST', url: `/v1/contacts/${id}/tags`, payload: { tag } })
      assert.ok(added.statusCode < 300, added.body)
    }
    return id
  }

  async function draft(account: TestAccount, body: Json = {}): Promise<Json> {
    const response = await account.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'Frühlingsangebote', content: 'Hallo {{name}}, unsere Tulpen sind da.', ...body },
    })
    assert.equal(response.statusCode, 201, response.body)
    return response.json().newsletter
  }

  const inHours = (hours: number) => new Date(harness().clock.now().getTime() + hours * HOUR).toISOString()

  const status = async (account: TestAccount, id: string): Promise<Json> =>
    (await account.request({ method: 'GET', url: `/v1/newsletters/${id}/status` })).json()

  return { deps, drain, sandboxAccount, contact, draft, inHours, schedule: scheduleNewsletter, status }
}
