import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { approvedTemplate, confirmedContact, killScene, needsSharedDatabase, whatsappAnswers } from '../helpers/kill.ts'

const RUNS = 24
const PHONE_NUMBER_ID = '777000222'

describe('a worker killed in the middle of automation runs', needsSharedDatabase, () => {
  /** a slow receiver for both the fake Graph API (template messages) and the automation's webhook step */
  const sends: string[] = []
  const hooks: string[] = []
  const scene = killScene({
    graph: whatsappAnswers({
      phoneNumberId: PHONE_NUMBER_ID,
      delayMs: 200,
      idPrefix: 'wamid.AUTO',
      record: (body) => sends.push(String(body.biz_opaque_callback_data)),
      orElse({ req, url, send }) {
        if (url.pathname !== '/crm') return false
        hooks.push(String(req.headers['x-service-delivery']))
        setTimeout(() => send(200, Buffer.from('ok'), 'text/plain'), 300)
        return true
      },
    }),
    leaseSeconds: 2,
    concurrency: 4,
  })

  test('every run resumes where it stopped: each template send reaches the provider once, every webhook step is delivered', async () => {
    const { harness, graph } = scene
    const account = await scene.whatsAppAccount(1000, { phoneNumberId: PHONE_NUMBER_ID, wabaId: '889' })
    const templateId = await approvedTemplate(harness, account, {
      name: 'Auto kill',
      content: 'Hallo {{name}}, danke für deinen Einkauf heute.',
      language: 'de',
    })
    const automation = await account.request({
      method: 'POST',
      url: '/v1/automations',
      payload: {
        name: 'Nach dem Kauf',
        trigger: { type: 'manual' },
        steps: [
          { type: 'add_tag', tag: 'kauf-begleitet' },
          { type: 'send_template', template_id: templateId },
          { type: 'webhook', url: `${graph.origin}/crm` },
          { type: 'add_tag', tag: 'crm-gemeldet' },
        ],
      },
    })
    const id = automation.json().id as string
    await account.request({ method: 'POST', url: `/v1/automations/${id}/activate` })
    for (let i = 0; i < RUNS; i++) {
      const contactId = await confirmedContact(harness, account, `Kunde ${i}`, `+49171${String(6660000 + i)}`)
      const started = await account.request({
        method: 'POST',
        url: `/v1/automations/${id}/trigger`,
        payload: { contact_id: contactId },
      })
      assert.equal(started.statusCode, 202, started.body)
    }

    const first = await scene.worker()
    await scene.killWhen(
      first,
      () => hooks.length >= 6,
      30_000,
      () => 'the first worker did not get going',
    )
    const hooksAtKill = hooks.length

    const second = await scene.worker()
    const runs = () =>
      harness.database.query<{ id: string; state: string; reason: string | null }>(
        'SELECT id, state, reason FROM automation_runs WHERE account_id = $1',
        [account.accountId],
      )
    const jobsLeft = () => harness.database.query('SELECT 1 FROM jobs WHERE account_id = $1', [account.accountId])
    await scene.waitWhile(
      async () => (await runs()).some((r) => r.state === 'running') || (await jobsLeft()).length > 0,
      { withinMs: 90_000, everyMs: 100, message: async () => `not all runs finished: ${JSON.stringify(await runs())}` },
    )
    await scene.stop(second)

    const rows = await runs()
    assert.equal(rows.length, RUNS)
    for (const row of rows) assert.equal(row.state, 'completed', JSON.stringify(row))
    const sendRows = await harness.database.query<{ id: string; origin_id: string; status: string }>(
      "SELECT id, origin_id, status FROM template_sends WHERE account_id = $1 AND origin = 'automation'",
      [account.accountId],
    )
    assert.equal(sendRows.length, RUNS, 'one send record per run')
    assert.equal(new Set(sendRows.map((s) => s.origin_id)).size, RUNS)
    for (const send of sendRows) {
      const reached = sends.filter((s) => s === send.id).length
      assert.ok(reached <= 1, `send ${send.id} reached the provider ${reached} times`)
      if (send.status === 'sent') assert.equal(reached, 1)
      else assert.equal(send.status, 'failed')
    }
    // webhook steps are at least once (receivers deduplicate by X-Service-Delivery): each run's is delivered
    assert.equal(new Set(hooks).size, RUNS)
    const tagged = await harness.database.query(
      "SELECT 1 FROM contact_tags WHERE account_id = $1 AND name IN ('kauf-begleitet', 'crm-gemeldet')",
      [account.accountId],
    )
    assert.equal(tagged.length, 2 * RUNS)
    console.log(
      `# automations kill test: ${hooksAtKill} of ${RUNS} webhook steps delivered at the kill; ${hooks.length - new Set(hooks).size} delivered again after it; sends ${sends.length}, none twice`,
    )
  })
})
