import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { nextPhone, sandboxAccount, setOptin } from '../../../test/helpers/fixtures.ts'
import { type Harness, json, type TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { sandboxOutboxOf } from '../channels/index.ts'

// Template sends accepted together (POST /v1/messages at once): their reads are batched and their records and jobs
// committed as a group (messaging.sends.ts commitSends). These tests fire bursts and check every send on its own.

let harness: Harness

// jobs run only inside drain(), after the burst
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
type Json = Record<string, any>
let counter = 0

async function contactWith(account: TestAccount, optin: 'confirmed' | 'opted_out' | null): Promise<string> {
  const response = await account.request({
    method: 'POST',
    url: '/v1/contacts',
    payload: { name: `Kunde ${++counter}`, phone: nextPhone() },
  })
  assert.equal(response.statusCode, 201, response.body)
  const id = json<{ contact: { id: string } }>(response).contact.id
  if (optin) {
    await setOptin(harness, account.accountId, id, optin)
  }
  return id
}

/** A sandbox-connected account with an approved template `Hallo {{name}}, dein Code ist {{code}}. Bis bald!` */
async function readyAccount(plan: { requestsPerMinute?: number } = {}) {
  const account = await sandboxAccount(harness, { messagesPerMonth: 1000, requestsPerMinute: 1000, ...plan })
  const created = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: {
      name: `Abholung ${process.pid} ${++counter}`,
      content: 'Hallo {{name}}, dein Code ist {{code}}. Bis bald!',
      language: 'de',
    },
  })
  assert.equal(created.statusCode, 201, created.body)
  const id = created.json().template.id as string
  const submitted = await account.request({ method: 'POST', url: `/v1/templates/${id}/submit` })
  assert.equal(submitted.statusCode, 200, submitted.body)
  assert.equal(submitted.json().template.provider_status, 'approved', submitted.body)
  return { account, templateId: id }
}

const sendTemplate = (
  account: TestAccount,
  contactId: string,
  templateId: string,
  variables: Json,
  headers: Record<string, string> = {},
) =>
  account.request({
    method: 'POST',
    url: '/v1/messages',
    payload: { contact_id: contactId, template: { id: templateId, variables } },
    headers,
  })

const sendsOf = (accountId: string) =>
  harness.database.query<{ id: string; contact_id: string; status: string; variables: Json | string }>(
    'SELECT id, contact_id, status, variables FROM template_sends WHERE account_id = $1',
    [accountId],
  )
const sendJobsOf = (accountId: string) =>
  harness.database.query<{ payload: Json | string }>(
    "SELECT payload FROM jobs WHERE account_id = $1 AND queue = 'messaging.template_send'",
    [accountId],
  )
const sendIdOfJob = (job: { payload: Json | string }) =>
  (typeof job.payload === 'string' ? JSON.parse(job.payload) : job.payload).send_id as string

async function drain() {
  await harness.jobs!.start()
  await harness.jobs!.drain()
  await harness.jobs!.stop()
}

describe('template sends accepted together', () => {
  test('a burst of concurrent sends: each committed once with its job, each sent once after the worker drains', async () => {
    const { account, templateId } = await readyAccount()
    const contacts = await Promise.all(Array.from({ length: 40 }, () => contactWith(account, 'confirmed')))

    const responses = await Promise.all(
      contacts.map((id, i) => sendTemplate(account, id, templateId, { code: `C-${i}` })),
    )

    for (const response of responses) assert.equal(response.statusCode, 202, response.body)
    const ids = responses.map((r) => json<{ send_id: string }>(r).send_id)
    assert.equal(new Set(ids).size, 40)
    const stored = await sendsOf(account.accountId)
    assert.deepEqual(stored.map((s) => s.id).sort(), [...ids].sort())
    const jobs = await sendJobsOf(account.accountId)
    assert.deepEqual(jobs.map(sendIdOfJob).sort(), [...ids].sort())

    await drain()
    for (const id of ids) {
      const record = await account.request({ method: 'GET', url: `/v1/sends/${id}` })
      assert.equal(record.statusCode, 200, record.body)
      assert.equal(record.json().status, 'sent')
    }
    const outbox = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.deepEqual(outbox.map((m) => m.payload.send_id).sort(), [...ids].sort())
    // each contact got its own values, once
    for (const [i, id] of ids.entries()) {
      const sent = outbox.find((m) => m.payload.send_id === id)
      assert.match(String(sent?.payload.text), new RegExp(`dein Code ist C-${i}\\. Bis bald!$`))
    }
  })

  test('refusals in a burst answer only their own request: the others are 202 and committed', async () => {
    const { account, templateId } = await readyAccount()
    const confirmed = await Promise.all(Array.from({ length: 20 }, () => contactWith(account, 'confirmed')))
    const optedOut = await contactWith(account, 'opted_out')
    const unconfirmed = await contactWith(account, null)
    const missing = randomUUID()

    const [outResponse, noOptinResponse, missingResponse, noValueResponse, ...accepted] = await Promise.all([
      sendTemplate(account, optedOut, templateId, { code: 'X' }),
      sendTemplate(account, unconfirmed, templateId, { code: 'X' }),
      sendTemplate(account, missing, templateId, { code: 'X' }),
      sendTemplate(account, confirmed[0], templateId, {}),
      ...confirmed.map((id, i) => sendTemplate(account, id, templateId, { code: `R-${i}` })),
    ])

    assert.equal(outResponse.statusCode, 409, outResponse.body)
    assert.equal(outResponse.json().error.code, 'contact_opted_out')
    assert.equal(noOptinResponse.statusCode, 409, noOptinResponse.body)
    assert.equal(noOptinResponse.json().error.code, 'contact_not_optin')
    assert.equal(missingResponse.statusCode, 404, missingResponse.body)
    assert.equal(noValueResponse.statusCode, 422, noValueResponse.body)
    assert.equal(noValueResponse.json().error.code, 'invalid_variables')
    for (const response of accepted) assert.equal(response.statusCode, 202, response.body)
    const stored = await sendsOf(account.accountId)
    assert.deepEqual(stored.map((s) => s.id).sort(), accepted.map((r) => json<{ send_id: string }>(r).send_id).sort())
    assert.equal((await sendJobsOf(account.accountId)).length, 20)
    assert.ok(!stored.some((s) => [optedOut, unconfirmed, missing].includes(s.contact_id)))
  })

  test('a group whose commit fails: its requests get an error, never a 202, and nothing of them is stored', async () => {
    const { account, templateId } = await readyAccount()
    const contacts = await Promise.all(Array.from({ length: 12 }, () => contactWith(account, 'confirmed')))
    // a check PostgreSQL runs at COMMIT (a deferred constraint trigger): it refuses this account's sends marked FAIL
    const name = `herold_test_refuse_${process.pid}_${++counter}`
    await harness.database.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.account_id = '${account.accountId}'::uuid AND NEW.variables->>'code' LIKE 'FAIL%' THEN
          RAISE EXCEPTION 'refused at commit';
        END IF;
        RETURN NULL;
      END $$`)
    await harness.database.query(`CREATE CONSTRAINT TRIGGER ${name} AFTER INSERT ON template_sends
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${name}()`)
    try {
      // one refused send among accepted ones: only it fails
      const mixed = await Promise.all(
        contacts
          .slice(0, 6)
          .map((id, i) => sendTemplate(account, id, templateId, { code: i === 2 ? 'FAIL-1' : `M-${i}` })),
      )
      assert.equal(mixed[2].statusCode, 500, mixed[2].body)
      assert.equal(mixed[2].json().error.code, 'internal_error')
      const accepted = mixed.filter((_, i) => i !== 2)
      for (const response of accepted) assert.equal(response.statusCode, 202, response.body)

      // every send of a burst refused: every request gets the error
      const refused = await Promise.all(
        contacts.slice(6).map((id, i) => sendTemplate(account, id, templateId, { code: `FAIL-${i}` })),
      )
      for (const response of refused) {
        assert.equal(response.statusCode, 500, response.body)
        assert.equal(response.json().error.code, 'internal_error')
      }

      const stored = await sendsOf(account.accountId)
      const acceptedIds = accepted.map((r) => json<{ send_id: string }>(r).send_id).sort()
      assert.deepEqual(stored.map((s) => s.id).sort(), acceptedIds)
      assert.deepEqual((await sendJobsOf(account.accountId)).map(sendIdOfJob).sort(), acceptedIds)
    } finally {
      await harness.database.query(`DROP TRIGGER ${name} ON template_sends`)
      await harness.database.query(`DROP FUNCTION ${name}()`)
    }
  })

  test('one Idempotency-Key sent by concurrent requests queues one send', async () => {
    const { account, templateId } = await readyAccount()
    const contactId = await contactWith(account, 'confirmed')
    const key = `burst-${randomUUID()}`

    const responses = await Promise.all(
      Array.from({ length: 8 }, () =>
        sendTemplate(account, contactId, templateId, { code: 'K-1' }, { 'idempotency-key': key }),
      ),
    )

    const accepted = responses.filter((r) => r.statusCode === 202)
    assert.ok(accepted.length >= 1)
    assert.equal(new Set(accepted.map((r) => r.json().send_id)).size, 1)
    for (const response of responses.filter((r) => r.statusCode !== 202)) {
      assert.equal(response.statusCode, 409, response.body)
      assert.equal(response.json().error.code, 'idempotency_in_progress')
    }
    const stored = await sendsOf(account.accountId)
    assert.deepEqual(
      stored.map((s) => s.id),
      [accepted[0].json().send_id],
    )
    assert.equal((await sendJobsOf(account.accountId)).length, 1)
  })

  test("a burst over the key's rate limit: the requests within it are accepted, the rest get 429 and store nothing", async () => {
    const { account, templateId } = await readyAccount({ requestsPerMinute: 20 })
    const contacts = await Promise.all(Array.from({ length: 12 }, () => contactWith(account, 'confirmed')))
    // the setup above used some of the minute's requests: what remains of the 20
    const probe = await account.request({ method: 'GET', url: '/v1/me' })
    const remaining = Number(/remaining=(\d+)/.exec(String(probe.headers.ratelimit))?.[1])
    assert.ok(remaining < contacts.length, `${remaining} requests left`)

    const responses = await Promise.all(
      contacts.map((id, i) => sendTemplate(account, id, templateId, { code: `L-${i}` })),
    )

    const accepted = responses.filter((r) => r.statusCode === 202)
    assert.equal(accepted.length, remaining)
    for (const response of responses.filter((r) => r.statusCode !== 202)) {
      assert.equal(response.statusCode, 429, response.body)
    }
    assert.equal((await sendsOf(account.accountId)).length, remaining)
  })

  test('a change to the template or the chat number shows in the next send at once, whoever wrote it', async () => {
    const { account, templateId } = await readyAccount()
    const contactId = await contactWith(account, 'confirmed')
    assert.equal((await sendTemplate(account, contactId, templateId, { code: 'V-1' })).statusCode, 202)

    // an operator's SQL: the template no longer approved
    await harness.database.query("UPDATE templates SET provider_status = 'paused' WHERE account_id = $1 AND id = $2", [
      account.accountId,
      templateId,
    ])
    const paused = await sendTemplate(account, contactId, templateId, { code: 'V-2' })
    assert.equal(paused.statusCode, 422, paused.body)
    assert.equal(paused.json().error.code, 'template_not_approved')

    await harness.database.query(
      "UPDATE templates SET provider_status = 'approved' WHERE account_id = $1 AND id = $2",
      [account.accountId, templateId],
    )
    assert.equal((await sendTemplate(account, contactId, templateId, { code: 'V-3' })).statusCode, 202)
    await harness.services.channels.disconnect(account.accountId, 'chat')
    const disconnected = await sendTemplate(account, contactId, templateId, { code: 'V-4' })
    assert.equal(disconnected.statusCode, 409, disconnected.body)
    assert.equal(disconnected.json().error.code, 'chat_not_connected')
    assert.equal((await sendsOf(account.accountId)).length, 2)
  })
})
