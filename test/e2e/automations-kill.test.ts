import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { channelsServiceFor } from '../../src/modules/channels/index.ts'
import { recordOptinChange } from '../../src/modules/contacts/index.ts'
import { templatesServiceFor } from '../../src/modules/templates/index.ts'
import { createHarness, createTestAccount, type Harness } from '../helpers/harness.ts'
import { startWorker } from '../helpers/worker.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL
const RUNS = 24
const PHONE_NUMBER_ID = '777000222'

/** A slow receiver for both the fake Graph API (template messages) and the automation's webhook step. */
function startSlowPeer() {
  const sends: string[] = []
  const hooks: string[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
      if (req.url?.endsWith(`/${PHONE_NUMBER_ID}/messages`)) {
        sends.push(String(body.biz_opaque_callback_data))
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ messages: [{ id: `wamid.AUTO${sends.length}` }] }))
        }, 200)
        return
      }
      if (req.url === '/crm') {
        hooks.push(String(req.headers['x-service-delivery']))
        setTimeout(() => res.writeHead(200).end('ok'), 300)
        return
      }
      res.writeHead(404).end('{}')
    })
  })
  return new Promise<{ server: http.Server; base: string; sends: string[]; hooks: string[] }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sends, hooks }),
    ),
  )
}

/** A worker process talking to the fake Graph API. */
function startWorkerFor(harness: Harness, graphUrl: string): Promise<ChildProcess> {
  return startWorker(harness, {
    HEROLD_WHATSAPP_GRAPH_URL: graphUrl,
    HEROLD_JOB_LEASE_SECONDS: '2',
    HEROLD_WORKER_CONCURRENCY: '4',
  })
}

describe('a worker killed in the middle of automation runs', {
  skip: databaseUrl ? false : 'needs HEROLD_TEST_DATABASE_URL (a PostgreSQL shared by processes)',
}, () => {
  let harness: Harness
  let peer: Awaited<ReturnType<typeof startSlowPeer>>
  const children: ChildProcess[] = []

  before(async () => {
    peer = await startSlowPeer()
    harness = await createHarness({
      config: { allowPrivateTargets: true, whatsappGraphUrl: `${peer.base}/v21.0` },
      workers: true,
    })
    await harness.jobs!.stop()
  })
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    peer?.server.closeAllConnections()
    await new Promise((r) => peer?.server.close(r))
    await harness.close()
  })

  test('every run resumes where it stopped: each template send reaches the provider once, every webhook step is delivered', async () => {
    const deps = { config: harness.config, database: harness.database, clock: harness.clock }
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 1000 } })
    await channelsServiceFor(deps).connect(account.accountId, {
      channel: 'chat',
      provider: 'whatsapp-cloud',
      address: '+4930999998',
      phoneNumberId: PHONE_NUMBER_ID,
      wabaId: '889',
      accessToken: 'EAAG-auto-token',
      appSecret: 'auto-secret',
      verifyToken: 'auto-verify',
    })
    const created = await account.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: 'Auto kill', content: 'Hallo {{name}}, danke für deinen Einkauf heute.', language: 'de' },
    })
    const templateId = created.json().template.id as string
    await templatesServiceFor(deps).applyProviderStatus(account.accountId, templateId, { status: 'APPROVED' })
    const automation = await account.request({
      method: 'POST',
      url: '/v1/automations',
      payload: {
        name: 'Nach dem Kauf',
        trigger: { type: 'manual' },
        steps: [
          { type: 'add_tag', tag: 'kauf-begleitet' },
          { type: 'send_template', template_id: templateId },
          { type: 'webhook', url: `${peer.base}/crm` },
          { type: 'add_tag', tag: 'crm-gemeldet' },
        ],
      },
    })
    const id = automation.json().id as string
    await account.request({ method: 'POST', url: `/v1/automations/${id}/activate` })
    for (let i = 0; i < RUNS; i++) {
      const contact = await account.request({
        method: 'POST',
        url: '/v1/contacts',
        payload: { name: `Kunde ${i}`, phone: `+49171${String(6660000 + i)}` },
      })
      const contactId = contact.json().contact.id as string
      await harness.database.orm.transaction((tx) =>
        recordOptinChange(tx, harness.clock, {
          accountId: account.accountId,
          contactId,
          channel: 'chat',
          to: 'confirmed',
          source: 'test',
        }),
      )
      const started = await account.request({
        method: 'POST',
        url: `/v1/automations/${id}/trigger`,
        payload: { contact_id: contactId },
      })
      assert.equal(started.statusCode, 202, started.body)
    }

    const first = await startWorkerFor(harness, `${peer.base}/v21.0`)
    children.push(first)
    const killAt = Date.now() + 30_000
    while (peer.hooks.length < 6) {
      assert.ok(Date.now() < killAt, 'the first worker did not get going')
      await new Promise((r) => setTimeout(r, 20))
    }
    first.kill('SIGKILL')
    await once(first, 'exit')
    const hooksAtKill = peer.hooks.length

    const second = await startWorkerFor(harness, `${peer.base}/v21.0`)
    children.push(second)
    const runs = () =>
      harness.database.query<{ id: string; state: string; reason: string | null }>(
        'SELECT id, state, reason FROM automation_runs WHERE account_id = $1',
        [account.accountId],
      )
    const jobsLeft = () => harness.database.query('SELECT 1 FROM jobs WHERE account_id = $1', [account.accountId])
    const deadline = Date.now() + 90_000
    while ((await runs()).some((r) => r.state === 'running') || (await jobsLeft()).length > 0) {
      assert.ok(Date.now() < deadline, `not all runs finished: ${JSON.stringify(await runs())}`)
      await new Promise((r) => setTimeout(r, 100))
    }
    second.kill('SIGTERM')
    await once(second, 'exit')

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
      const reached = peer.sends.filter((s) => s === send.id).length
      assert.ok(reached <= 1, `send ${send.id} reached the provider ${reached} times`)
      if (send.status === 'sent') assert.equal(reached, 1)
      else assert.equal(send.status, 'failed')
    }
    // webhook steps are at least once (receivers deduplicate by X-Service-Delivery): each run's is delivered
    assert.equal(new Set(peer.hooks).size, RUNS)
    const tagged = await harness.database.query(
      "SELECT 1 FROM contact_tags WHERE account_id = $1 AND name IN ('kauf-begleitet', 'crm-gemeldet')",
      [account.accountId],
    )
    assert.equal(tagged.length, 2 * RUNS)
    console.log(
      `# automations kill test: ${hooksAtKill} of ${RUNS} webhook steps delivered at the kill; ${peer.hooks.length - new Set(peer.hooks).size} delivered again after it; sends ${peer.sends.length}, none twice`,
    )
  })
})
