import assert from 'node:assert/strict'
import type { SequenceInput } from '../../src/modules/followups/index.ts'
import type { Harness, TestAccount } from './harness.ts'

// What the follow-up test files share: a sequence created through the service, read back through the API.

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>

/** A sequence created by the service, for an account whose language is German. */
export async function createSequence(harness: Harness, account: TestAccount, input: SequenceInput): Promise<Json> {
  const tenant = { accountId: account.accountId, account: { language: 'de' } }
  return harness.services.followups.create(tenant, input) as Promise<Json>
}

/** GET /v1/followups/{id} (200 expected); the follow-up. */
export async function getFollowup(account: TestAccount, id: string): Promise<Json> {
  const response = await account.request({ method: 'GET', url: `/v1/followups/${id}` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().followup
}
