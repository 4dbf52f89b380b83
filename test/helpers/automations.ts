import assert from 'node:assert/strict'
import { after, before } from 'node:test'
import { drainJobs, sandboxAccount as fixtureAccount, nextPhone, setOptin } from './fixtures.ts'
import { createHarness, type Harness, type TestAccount } from './harness.ts'

// What the automations test files share: their harness and the steps every test takes (an account on the sandbox,
// a contact, an approved template, an active automation, its runs).

/** The test file's harness (set before its tests run, by withAutomationsHarness). */
export let harness: Harness

/** The harness of an automations test file; jobs run only inside drain(), so a test sees each state between steps. */
export async function automationsHarness(
  config: { allowPrivateTargets?: boolean } = { allowPrivateTargets: true },
): Promise<Harness> {
  harness = await createHarness({ config, workers: true })
  await harness.jobs!.stop()
  return harness
}

/**
 * The file's harness, made before its tests and closed after them (read it as `harness`). Outbound calls to this
 * machine are allowed (the webhook receivers of the tests) unless `allowPrivateTargets` is false.
 */
export function withAutomationsHarness(config?: { allowPrivateTargets?: boolean }): void {
  before(async () => {
    await automationsHarness(config)
  })
  after(() => harness.close())
}

export const HOUR = 3600_000
// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
export type Json = Record<string, any>
export const deps = () => ({ config: harness.config, database: harness.database, clock: harness.clock })
let counter = 0

export const drain = () => drainJobs(harness)

export async function sandboxAccount(options: { email?: boolean } = {}) {
  const account = await fixtureAccount(harness, { messagesPerMonth: 100 })
  if (options.email) {
    await harness.services.channels.connect(account.accountId, {
      channel: 'email',
      provider: 'sandbox',
      address: 'team@shop.example',
    })
  }
  return account
}

export async function createContact(account: TestAccount, body: Json = {}): Promise<string> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/contacts',
    payload: { name: 'Erika Mustermann', phone: nextPhone(), ...body },
  })
  assert.equal(response.statusCode, 201, response.body)
  return response.json().contact.id
}

export const confirm = (account: TestAccount, contactId: string) => setOptin(harness, account.accountId, contactId)

/** A new contact whose chat opt-in is confirmed; its id. */
export async function confirmedContact(account: TestAccount): Promise<string> {
  const contactId = await createContact(account)
  await confirm(account, contactId)
  return contactId
}

/** A new template of the account (named `prefix` and a number), as the API answers it. */
export async function createTemplate(account: TestAccount, content: string, prefix = 'Danke'): Promise<Json> {
  const created = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: { name: `${prefix} ${process.pid} ${++counter}`, content, language: 'de' },
  })
  assert.equal(created.statusCode, 201, created.body)
  return created.json().template
}

/** A template submitted and approved by the sandbox provider; its id. */
export async function approvedTemplate(
  account: TestAccount,
  content = 'Hallo {{name}}, danke für deinen Einkauf bei uns.',
  prefix = 'Danke',
): Promise<string> {
  const { id } = await createTemplate(account, content, prefix)
  const submitted = await account.request({ method: 'POST', url: `/v1/templates/${id}/submit` })
  assert.equal(submitted.json().template.provider_status, 'approved', submitted.body)
  return id
}

export const create = (account: TestAccount, payload: Json) =>
  account.request({ method: 'POST', url: '/v1/automations', payload: { name: 'Willkommen', ...payload } })

export async function active(account: TestAccount, payload: Json): Promise<Json> {
  const created = await create(account, payload)
  assert.equal(created.statusCode, 200, created.body)
  const activated = await account.request({ method: 'POST', url: `/v1/automations/${created.json().id}/activate` })
  assert.equal(activated.statusCode, 200, activated.body)
  return { ...activated.json(), signing_secret: created.json().signing_secret }
}

/** Starts a run of an active automation for a contact, with the trigger's `data` if given (202); its id. */
export async function trigger(
  account: TestAccount,
  automationId: string,
  contactId: string,
  data?: Json,
): Promise<string> {
  const started = await account.request({
    method: 'POST',
    url: `/v1/automations/${automationId}/trigger`,
    payload: data === undefined ? { contact_id: contactId } : { contact_id: contactId, data },
  })
  assert.equal(started.statusCode, 202, started.body)
  return started.json().run_id as string
}

/** One run as GET /v1/automations/{id}/runs/{run_id} shows it. */
export async function runOf(account: TestAccount, automationId: string, runId: string): Promise<Json> {
  const response = await account.request({ method: 'GET', url: `/v1/automations/${automationId}/runs/${runId}` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json()
}

export async function runsOf(account: TestAccount, id: string): Promise<Json[]> {
  const response = await account.request({ method: 'GET', url: `/v1/automations/${id}/runs` })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().runs
}

export async function tagsOf(account: TestAccount, contactId: string): Promise<string[]> {
  const response = await account.request({ method: 'GET', url: `/v1/contacts/${contactId}` })
  return response.json().contact.tags
}

export const errorOf = (response: { json(): unknown }) => (response.json() as { error: Json }).error
