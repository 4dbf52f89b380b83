import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { recordOptinChange } from '../../src/modules/contacts/index.ts'
import type { Harness, TestAccount } from './harness.ts'
import { type FileHarnessOptions, harnessPerFile } from './test-file.ts'

// What the contacts test files share: their harness and the requests most tests make.

let harness: Harness

/** The harness of a contacts test file: created before its tests, closed after them; `use` receives it. */
export function contactsHarnessPerFile(use: (harness: Harness) => void, options: FileHarnessOptions = {}): void {
  harnessPerFile(options, (created) => {
    harness = created
    use(created)
  })
}

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in assertions
export type Json = Record<string, any>

export const create = (account: TestAccount, payload: Record<string, unknown>, url = '/v1/contacts') =>
  account.request({ method: 'POST', url, payload })

export async function createContact(account: TestAccount, payload: Record<string, unknown>): Promise<Json> {
  const response = await create(account, payload)
  assert.equal(response.statusCode, 201, response.body)
  return response.json().contact
}

/** POST /v1/contacts (201 expected); the new contact's id. */
export const createdContactId = async (account: TestAccount, payload: Record<string, unknown>): Promise<string> =>
  (await createContact(account, payload)).id

export async function confirmBoth(accountId: string, contactId: string): Promise<void> {
  await harness.database.orm.transaction(async (tx) => {
    for (const channel of ['chat', 'email'] as const) {
      await recordOptinChange(tx, harness.clock, { accountId, contactId, channel, to: 'confirmed', source: 'test' })
    }
  })
}

export const getContact = async (account: TestAccount, id: string): Promise<Json> =>
  (await account.request({ method: 'GET', url: `/v1/contacts/${id}` })).json().contact

export function csvFile(lines: string[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'herold-import-'))
  const file = path.join(dir, 'contacts.csv')
  writeFileSync(file, `${lines.join('\n')}\n`)
  return file
}
