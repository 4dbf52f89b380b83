import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { channelsServiceFor } from '../../src/modules/channels/index.ts'
import { followupsServiceFor } from '../../src/modules/followups/index.ts'
import { createHarness, createTestAccount, type Harness } from '../helpers/harness.ts'
import { startWorker } from '../helpers/worker.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL
const LEASE_SECONDS = 2
const CONCURRENCY = 8
const CONTACTS = 2_000
const PHONE_NUMBER_ID = '777000333'
const WABA = '888333'

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
      setTimeout(() => res.end(JSON.stringify({ messages: [{ id: `wamid.FU${received.length}` }] })), 5)
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

describe('a worker killed while 2,000 follow-up steps are due', {
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

  test('restarted, every contact not in flight at the kill gets the step exactly once; nobody twice', async () => {
    const deps = { config: harness.config, database: harness.database, clock: harness.clock }
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 100_000 } })
    await channelsServiceFor(deps).connect(account.accountId, {
      channel: 'chat',
      provider: 'whatsapp-cloud',
      address: '+4930999333',
      phoneNumberId: PHONE_NUMBER_ID,
      wabaId: WABA,
      accessToken: 'EAAG-followup-kill',
      appSecret: 'kill-secret',
      verifyToken: 'kill-verify',
    })
    // confirmed contacts straight into the table, confirmed (created) 1 hour minus 3 seconds ago: with a 1-hour
    // delay the step of all 2,000 is due at the same moment, 3 seconds after the activation
    await harness.database.query(
      `INSERT INTO contacts (account_id, id, name, phone, optin_chat, source, created_at)
       SELECT $1::uuid, gen_random_uuid(), 'Kunde ' || i, '+49176' || lpad(i::text, 7, '0'), 'confirmed', 'api',
         now() - interval '1 hour' + interval '3 seconds'
       FROM generate_series(1, $2::int) AS i`,
      [account.accountId, CONTACTS],
    )
    await harness.database.query('ANALYZE contacts')
    const sequence = await followupsServiceFor(deps).create(
      { accountId: account.accountId, account: { language: 'de' } },
      {
        name: 'Nach einer Stunde',
        steps: [{ text: 'Hallo {{name}}, wie gefällt dir deine Bestellung?', delay: { amount: 1, unit: 'hours' } }],
      },
    )
    assert.equal(sequence.steps[0].approval, 'approved')
    harness.clock.set(new Date())
    const activated = await account.request({
      method: 'PATCH',
      url: `/v1/followups/${sequence.id}`,
      payload: { status: 'active' },
    })
    assert.equal(activated.statusCode, 200, activated.body)
    assert.equal(activated.json().followup.steps[0].counts.scheduled, CONTACTS)

    const first = await startWorkerFor(harness, graph.url)
    children.push(first)
    const killBy = Date.now() + 120_000
    while (graph.received.length < 300) {
      assert.ok(Date.now() < killBy, `the first worker did not get far: ${graph.received.length}`)
      await new Promise((r) => setTimeout(r, 20))
    }
    first.kill('SIGKILL')
    await once(first, 'exit')
    const receivedAtKill = graph.received.length

    const second = await startWorkerFor(harness, graph.url)
    children.push(second)
    const counts = async () => {
      return harness.database.query<{ status: string; reason: string | null; n: number }>(
        `SELECT status, reason, count(*)::int AS n FROM template_sends
         WHERE account_id = $1 AND origin = 'followup' GROUP BY status, reason`,
        [account.accountId],
      )
    }
    const open = async () => {
      // read in the database: polling the API this often would meet its rate limit
      const [active] = await harness.database.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM followup_enrollments WHERE account_id = $1 AND status = 'active'`,
        [account.accountId],
      )
      const pending = (await counts()).filter((r) => r.status === 'queued' || r.status === 'sending')
      return Number(active.n) + pending.reduce((sum, r) => sum + Number(r.n), 0)
    }
    const deadline = Date.now() + 240_000
    while ((await open()) > 0) {
      assert.ok(Date.now() < deadline, `not finished: ${JSON.stringify(await counts())}`)
      await new Promise((r) => setTimeout(r, 250))
    }
    second.kill('SIGTERM')
    await once(second, 'exit')

    const rows = await counts()
    const total = rows.reduce((sum, r) => sum + Number(r.n), 0)
    const sent = rows
      .filter((r) => ['sent', 'delivered', 'read'].includes(r.status))
      .reduce((s, r) => s + Number(r.n), 0)
    const interrupted = rows.filter((r) => r.reason === 'interrupted').reduce((s, r) => s + Number(r.n), 0)
    assert.equal(total, CONTACTS, 'one send record per contact and step')
    const perPhone = new Map<string, number>()
    for (const to of graph.received) perPhone.set(to, (perPhone.get(to) ?? 0) + 1)
    const twice = [...perPhone].filter(([, n]) => n > 1)
    assert.deepEqual(twice, [], 'nobody received it twice')
    assert.ok(interrupted <= CONCURRENCY, `at most the sends in flight at the kill ended interrupted: ${interrupted}`)
    assert.equal(sent, CONTACTS - interrupted, JSON.stringify(rows))
    assert.ok(perPhone.size >= CONTACTS - interrupted)
    assert.ok(receivedAtKill < CONTACTS, 'the kill landed mid-way')
    const view = (await account.request({ method: 'GET', url: `/v1/followups/${sequence.id}` })).json().followup
    assert.deepEqual(view.enrollments, { active: 0, completed: CONTACTS, stopped: 0 })
    console.log(
      `# follow-up kill test: ${receivedAtKill} of ${CONTACTS} at the provider when killed; ${sent} sent, ${interrupted} interrupted, none twice`,
    )
  })
})
