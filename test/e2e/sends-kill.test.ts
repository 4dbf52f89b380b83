import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { approvedTemplate, confirmedContact, needsSharedDatabase, recordingScene } from '../helpers/kill.ts'

const CONCURRENCY = 4
const SENDS = 30
const PHONE_NUMBER_ID = '777000111'

describe('a worker killed mid-way through template sends', needsSharedDatabase, () => {
  /** every template message counted by our send id on arrival, answered 300 ms later */
  const { scene, received } = recordingScene({
    channel: { phoneNumberId: PHONE_NUMBER_ID },
    delayMs: 300,
    recorded: 'biz_opaque_callback_data',
    concurrency: CONCURRENCY,
  })

  test('no send reaches the provider twice; every send not in flight at the kill is sent exactly once', async () => {
    const { harness } = scene
    const account = await scene.whatsAppAccount(1000, { phoneNumberId: PHONE_NUMBER_ID, wabaId: '888' })
    const templateId = await approvedTemplate(harness, account, {
      name: 'Kill test',
      content: 'Hallo {{name}}, dein Code {{code}} ist da.',
      language: 'de',
    })
    const sendIds: string[] = []
    for (let i = 0; i < SENDS; i++) {
      const contactId = await confirmedContact(harness, account, `Kunde ${i}`, `+49170${String(5550000 + i)}`)
      const queued = await account.request({
        method: 'POST',
        url: '/v1/messages',
        payload: { contact_id: contactId, template: { id: templateId, variables: { code: `C${i}` } } },
      })
      assert.equal(queued.statusCode, 202, queued.body)
      sendIds.push(queued.json().send_id)
    }

    const first = await scene.worker()
    await scene.killWhen(
      first,
      () => received.length >= 10,
      30_000,
      () => 'the first worker did not start sending',
    )
    const receivedAtKill = received.length

    const second = await scene.worker()
    const statuses = async () =>
      harness.database.query<{ id: string; status: string; reason: string | null }>(
        'SELECT id, status, reason FROM template_sends WHERE account_id = $1',
        [account.accountId],
      )
    const jobsLeft = () =>
      harness.database.query('SELECT queue, state, last_error FROM jobs WHERE account_id = $1', [account.accountId])
    // done when every send is final and its job is finished (the runner deletes a job right after its handler)
    await scene.waitWhile(
      async () =>
        (await statuses()).some((s) => s.status === 'queued' || s.status === 'sending') ||
        (await jobsLeft()).length > 0,
      {
        withinMs: 60_000,
        everyMs: 100,
        message: async () => `not all sends finished: ${JSON.stringify(await statuses())}`,
      },
    )
    await scene.stop(second)

    const rows = await statuses()
    const count = (id: string) => received.filter((r) => r === id).length
    assert.equal(rows.length, SENDS)
    for (const id of sendIds) assert.ok(count(id) <= 1, `send ${id} reached the provider ${count(id)} times`)
    const interrupted = rows.filter((r) => r.status === 'failed' && r.reason === 'interrupted')
    const sent = rows.filter((r) => r.status === 'sent')
    assert.equal(sent.length + interrupted.length, SENDS, JSON.stringify(rows))
    for (const row of sent) assert.equal(count(row.id), 1, `sent ${row.id} reached the provider exactly once`)
    assert.ok(interrupted.length <= CONCURRENCY, `at most the sends in flight at the kill: ${interrupted.length}`)
    assert.ok(receivedAtKill < SENDS, 'the kill landed mid-way')
    console.log(
      `# kill test: ${receivedAtKill} of ${SENDS} at the provider when killed; ${sent.length} sent, ${interrupted.length} interrupted (${interrupted.filter((r) => count(r.id) === 1).length} of them had reached the provider), none twice`,
    )
  })
})
