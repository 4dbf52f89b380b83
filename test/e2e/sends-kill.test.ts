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
const LEASE_SECONDS = 2
const CONCURRENCY = 4
const SENDS = 30
const PHONE_NUMBER_ID = '777000111'
const TOKEN = 'EAAG-kill-token'

/** A slow fake Graph API: every template message is counted by our send id on arrival, answered 300 ms later. */
function startSlowGraph() {
  const received: string[] = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
      if (req.method !== 'POST' || !req.url?.endsWith(`/${PHONE_NUMBER_ID}/messages`)) {
        res.writeHead(404).end('{}')
        return
      }
      received.push(String(body.biz_opaque_callback_data))
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ messages: [{ id: `wamid.KILL${received.length}` }] }))
      }, 300)
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

describe('a worker killed mid-way through template sends', {
  skip: databaseUrl ? false : 'needs HEROLD_TEST_DATABASE_URL (a PostgreSQL shared by processes)',
}, () => {
  let harness: Harness
  let graph: Awaited<ReturnType<typeof startSlowGraph>>
  const children: ChildProcess[] = []

  before(async () => {
    graph = await startSlowGraph()
    // workers: true gives this test a database of its own; the in-process runner is stopped, the children work
    harness = await createHarness({ config: { allowPrivateTargets: true, whatsappGraphUrl: graph.url }, workers: true })
    await harness.jobs!.stop()
  })
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    graph?.server.closeAllConnections()
    await new Promise((r) => graph?.server.close(r))
    await harness.close()
  })

  test('no send reaches the provider twice; every send not in flight at the kill is sent exactly once', async () => {
    const deps = { config: harness.config, database: harness.database, clock: harness.clock }
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 1000 } })
    await channelsServiceFor(deps).connect(account.accountId, {
      channel: 'chat',
      provider: 'whatsapp-cloud',
      address: '+4930999999',
      phoneNumberId: PHONE_NUMBER_ID,
      wabaId: '888',
      accessToken: TOKEN,
      appSecret: 'kill-secret',
      verifyToken: 'kill-verify',
    })
    const created = await account.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: 'Kill test', content: 'Hallo {{name}}, dein Code {{code}} ist da.', language: 'de' },
    })
    const templateId = created.json().template.id as string
    await templatesServiceFor(deps).applyProviderStatus(account.accountId, templateId, { status: 'APPROVED' })
    const sendIds: string[] = []
    for (let i = 0; i < SENDS; i++) {
      const contact = await account.request({
        method: 'POST',
        url: '/v1/contacts',
        payload: { name: `Kunde ${i}`, phone: `+49170${String(5550000 + i)}` },
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
      const queued = await account.request({
        method: 'POST',
        url: '/v1/messages',
        payload: { contact_id: contactId, template: { id: templateId, variables: { code: `C${i}` } } },
      })
      assert.equal(queued.statusCode, 202, queued.body)
      sendIds.push(queued.json().send_id)
    }

    const first = await startWorkerFor(harness, graph.url)
    children.push(first)
    const killAt = Date.now() + 30_000
    while (graph.received.length < 10) {
      assert.ok(Date.now() < killAt, 'the first worker did not start sending')
      await new Promise((r) => setTimeout(r, 20))
    }
    first.kill('SIGKILL')
    await once(first, 'exit')
    const receivedAtKill = graph.received.length

    const second = await startWorkerFor(harness, graph.url)
    children.push(second)
    const statuses = async () =>
      harness.database.query<{ id: string; status: string; reason: string | null }>(
        'SELECT id, status, reason FROM template_sends WHERE account_id = $1',
        [account.accountId],
      )
    const deadline = Date.now() + 60_000
    const jobsLeft = () =>
      harness.database.query('SELECT queue, state, last_error FROM jobs WHERE account_id = $1', [account.accountId])
    // done when every send is final and its job is finished (the runner deletes a job right after its handler)
    while (
      (await statuses()).some((s) => s.status === 'queued' || s.status === 'sending') ||
      (await jobsLeft()).length > 0
    ) {
      assert.ok(Date.now() < deadline, `not all sends finished: ${JSON.stringify(await statuses())}`)
      await new Promise((r) => setTimeout(r, 100))
    }
    second.kill('SIGTERM')
    await once(second, 'exit')

    const rows = await statuses()
    const count = (id: string) => graph.received.filter((r) => r === id).length
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
