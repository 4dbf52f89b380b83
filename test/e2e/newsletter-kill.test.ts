import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { channelsServiceFor } from '../../src/modules/channels/index.ts'
import { createHarness, createTestAccount, type Harness } from '../helpers/harness.ts'
import { startWorker } from '../helpers/worker.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL
const LEASE_SECONDS = 2
const CONCURRENCY = 8
const RECIPIENTS = 5_000
const PHONE_NUMBER_ID = '777000222'
const WABA = '888222'

/**
 * A fake Graph API: templates are approved on submission; every template message is counted by its recipient on
 * arrival and answered a few milliseconds later.
 */
function startGraph() {
  const received: string[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
      res.setHeader('content-type', 'application/json')
      if (req.method === 'POST' && req.url?.includes(`/${WABA}/message_templates`)) {
        res.end(JSON.stringify({ id: `tpl${Date.now()}`, status: 'APPROVED', category: 'MARKETING' }))
        return
      }
      if (req.method !== 'POST' || !req.url?.endsWith(`/${PHONE_NUMBER_ID}/messages`)) {
        res.writeHead(404).end('{}')
        return
      }
      received.push(String(body.to))
      setTimeout(() => res.end(JSON.stringify({ messages: [{ id: `wamid.NL${received.length}` }] })), 5)
    })
  })
  return new Promise<{ server: http.Server; url: string; received: string[] }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v21.0`, received }),
    ),
  )
}

/** A worker process talking to the fake Graph API. */
function startWorkerFor(harness: Harness, graphUrl: string): Promise<ChildProcess> {
  return startWorker(harness, {
    HEROLD_WHATSAPP_GRAPH_URL: graphUrl,
    HEROLD_JOB_LEASE_SECONDS: String(LEASE_SECONDS),
    HEROLD_WORKER_CONCURRENCY: String(CONCURRENCY),
  })
}

describe('a worker killed in the middle of a 5,000-recipient newsletter', {
  skip: databaseUrl ? false : 'needs HEROLD_TEST_DATABASE_URL (a PostgreSQL shared by processes)',
}, () => {
  let harness: Harness
  let graph: Awaited<ReturnType<typeof startGraph>>
  const children: ChildProcess[] = []

  before(async () => {
    graph = await startGraph()
    harness = await createHarness({ config: { allowPrivateTargets: true, whatsappGraphUrl: graph.url }, workers: true })
    await harness.jobs!.stop()
  })
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    graph?.server.closeAllConnections()
    await new Promise((r) => graph?.server.close(r))
    await harness.close()
  })

  test('restarted, every recipient not in flight at the kill receives it exactly once; nobody twice', async () => {
    const deps = { config: harness.config, database: harness.database, clock: harness.clock }
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 100_000 } })
    await channelsServiceFor(deps).connect(account.accountId, {
      channel: 'chat',
      provider: 'whatsapp-cloud',
      address: '+4930999222',
      phoneNumberId: PHONE_NUMBER_ID,
      wabaId: WABA,
      accessToken: 'EAAG-newsletter-kill',
      appSecret: 'kill-secret',
      verifyToken: 'kill-verify',
    })
    // confirmed contacts straight into the table (how they came is not what this test is about)
    await harness.database.query(
      `INSERT INTO contacts (account_id, id, name, phone, optin_chat, source, created_at)
       SELECT $1::uuid, gen_random_uuid(), 'Kunde ' || i, '+49171' || lpad(i::text, 7, '0'), 'confirmed', 'api', now()
       FROM generate_series(1, $2::int) AS i`,
      [account.accountId, RECIPIENTS],
    )
    await harness.database.query('ANALYZE contacts')
    const created = await account.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'Sommerfest', content: 'Hallo {{name}}, wir feiern am Samstag.' },
    })
    const id = created.json().newsletter.id as string
    const scheduled = await account.request({
      method: 'POST',
      url: `/v1/newsletters/${id}/schedule`,
      payload: { scheduled_at: new Date(Date.now() + 1500).toISOString() },
    })
    assert.equal(scheduled.statusCode, 200, scheduled.body)
    assert.equal(scheduled.json().newsletter.template_status, 'APPROVED'.toLowerCase())

    const first = await startWorkerFor(harness, graph.url)
    children.push(first)
    const killBy = Date.now() + 60_000
    while (graph.received.length < 800) {
      assert.ok(Date.now() < killBy, `the first worker did not get far: ${graph.received.length}`)
      await new Promise((r) => setTimeout(r, 20))
    }
    first.kill('SIGKILL')
    await once(first, 'exit')
    const receivedAtKill = graph.received.length

    const second = await startWorkerFor(harness, graph.url)
    children.push(second)
    const status = async () =>
      (await account.request({ method: 'GET', url: `/v1/newsletters/${id}/status` })).json() as {
        status: string
        recipients: number
        counts: Record<string, number>
        skip_reasons: Record<string, number>
      }
    const deadline = Date.now() + 240_000
    while ((await status()).status !== 'sent') {
      assert.ok(Date.now() < deadline, `not finished: ${JSON.stringify(await status())}`)
      await new Promise((r) => setTimeout(r, 250))
    }
    second.kill('SIGTERM')
    await once(second, 'exit')

    const final = await status()
    assert.equal(final.recipients, RECIPIENTS, 'one send record per recipient')
    const perPhone = new Map<string, number>()
    for (const to of graph.received) perPhone.set(to, (perPhone.get(to) ?? 0) + 1)
    const twice = [...perPhone].filter(([, n]) => n > 1)
    assert.deepEqual(twice, [], 'nobody received it twice')
    const interrupted = final.skip_reasons.interrupted ?? 0
    assert.ok(interrupted <= CONCURRENCY, `at most the sends in flight at the kill ended interrupted: ${interrupted}`)
    assert.equal(final.counts.sent, RECIPIENTS - interrupted, JSON.stringify(final))
    assert.ok(perPhone.size >= RECIPIENTS - interrupted)
    assert.ok(receivedAtKill < RECIPIENTS, 'the kill landed mid-way')
    console.log(
      `# newsletter kill test: ${receivedAtKill} of ${RECIPIENTS} at the provider when killed; ${final.counts.sent} sent, ${interrupted} interrupted, none twice`,
    )
  })
})
