import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { drainJobs, nextPhone, sandboxAccount, setOptin } from '../../../test/helpers/fixtures.ts'
import type { Harness, TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { paceOf } from '../../platform/jobs/adaptive-pace.ts'
import { PACE_GUARD, PACE_LEAD_MS, PACE_WINDOW_MS } from '../../platform/jobs/jobs.ts'
import { CHAT_LANE, sandboxOutboxOf } from '../channels/index.ts'

let harness: Harness
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

/** the sends one claim of the job runner takes of an idle number at 40 a second: its slots within PACE_WINDOW_MS */
const ONE_CLAIM = Math.floor(((PACE_WINDOW_MS - PACE_LEAD_MS) * 40) / (1000 * PACE_GUARD))

/** An account on the sandbox at 40 a second, refusing above `refuseAbove` a second, with `n` confirmed contacts. */
async function refusingSandbox(refuseAbove: number, n: number) {
  const account = await sandboxAccount(harness)
  await harness.services.channels.connect(account.accountId, {
    channel: 'chat',
    provider: 'sandbox',
    messagesPerSecond: 40,
    sandboxRefuseAbove: refuseAbove,
  })
  const contactIds: string[] = []
  for (let i = 0; i < n; i++) {
    const created = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name: `Kunde ${i}`, phone: nextPhone() },
    })
    contactIds.push(created.json().contact.id as string)
    await setOptin(harness, account.accountId, contactIds[i])
  }
  const template = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: { name: 'Abholung', content: 'Hallo {{name}}, deine Bestellung liegt bereit.' },
  })
  const templateId = template.json().template.id as string
  const submitted = await account.request({ method: 'POST', url: `/v1/templates/${templateId}/submit` })
  assert.equal(submitted.json().template.provider_status, 'approved', submitted.body)
  return { account, contactIds, templateId }
}

async function queueAll(account: TestAccount, contactIds: string[], templateId: string) {
  const sendIds: string[] = []
  for (const contactId of contactIds) {
    const response = await account.request({
      method: 'POST',
      url: '/v1/messages',
      payload: { contact_id: contactId, template: { id: templateId, variables: {} } },
    })
    assert.equal(response.statusCode, 202, response.body)
    sendIds.push(response.json().send_id as string)
  }
  return sendIds
}

/** sent, and delivered or read since (the sandbox reports them a second and two later) */
const wentOut = (status: string) => ['sent', 'delivered', 'read'].includes(status)

const statuses = (account: TestAccount, sendIds: string[]) =>
  harness.database.query<{ id: string; status: string; error_code: string | null }>(
    'SELECT id, status, error_code FROM template_sends WHERE account_id = $1 AND id = ANY($2::uuid[])',
    [account.accountId, sendIds],
  )

describe('the sandbox refusing for throughput, and the adaptive pace', () => {
  test('beyond its rate in one second the sandbox answers 130429; the pace halves and every send goes out once', async () => {
    // as many as one claim books slots for at 40 a second, so all go in the same second
    const { account, contactIds, templateId } = await refusingSandbox(3, ONE_CLAIM)
    const sendIds = await queueAll(account, contactIds, templateId)
    await drainJobs(harness)
    const first = await statuses(account, sendIds)
    assert.equal(first.filter((s) => s.status === 'sent').length, 3, 'three in the second, the rest refused')
    assert.deepEqual(
      first.filter((s) => s.status === 'queued').map((s) => s.error_code),
      Array(ONE_CLAIM - 3).fill('130429'),
    )
    const pace = await paceOf(harness.database.orm, { accountId: account.accountId, lane: CHAT_LANE })
    assert.equal(pace?.perSecond, 20)
    assert.equal(pace?.reducedReason, 'throughput_refused')

    // second by second the refused ones come back until none is left
    for (let second = 0; second < 20; second++) {
      if ((await statuses(account, sendIds)).every((s) => wentOut(s.status))) break
      harness.clock.advance(1_500)
      await drainJobs(harness)
    }
    const final = await statuses(account, sendIds)
    assert.deepEqual(
      final.map((s) => wentOut(s.status)),
      Array(ONE_CLAIM).fill(true),
    )
    const outbox = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.deepEqual(outbox.map((row) => String(row.payload.send_id)).sort(), [...sendIds].sort(), 'each once')
  })

  test('a sandbox refusal rate is a whole number of messages a second, and only for the chat sandbox', async () => {
    const account = await sandboxAccount(harness)
    const connect = (input: Record<string, unknown>) =>
      harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox', ...input }).then(
        () => 'ok',
        (error: { code?: string }) => error.code,
      )
    assert.equal(await connect({ sandboxRefuseAbove: 0 }), 'bad_request')
    assert.equal(await connect({ sandboxRefuseAbove: 2.5 }), 'bad_request')
    assert.equal(await connect({ channel: 'email', address: 'news@example.org', sandboxRefuseAbove: 5 }), 'bad_request')
    assert.equal(await connect({ sandboxRefuseAbove: 30 }), 'ok')
  })
})
