import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import { channelsServiceFor } from '../../src/modules/channels/index.ts'
import { recordOptinChange } from '../../src/modules/contacts/index.ts'
import { createHarness, createTestAccount, type Harness } from '../helpers/harness.ts'
import { startWorker } from '../helpers/worker.ts'

const databaseUrl = process.env.HEROLD_TEST_DATABASE_URL
const LEASE_SECONDS = 2
const CONCURRENCY = 16
const RECIPIENTS = 2_000
const BIG_PACE = 200
const SMALL_SENDS = 10
const BIG_NUMBER = '777000331'
const SMALL_NUMBER = '777000332'
const WABA = '888331'

/** A fake Graph API: templates approved on submission; every message recorded in arrival order with its number. */
function startGraph() {
  const received: Array<{ number: string; to: string; sendId: string }> = []
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
      res.setHeader('content-type', 'application/json')
      if (req.method === 'POST' && req.url?.includes(`/${WABA}/message_templates`)) {
        res.end(JSON.stringify({ id: `tpl${Date.now()}${Math.random()}`, status: 'APPROVED', category: 'MARKETING' }))
        return
      }
      const number = /\/(\d+)\/messages$/.exec(req.url ?? '')?.[1]
      if (req.method !== 'POST' || !number) {
        res.writeHead(404).end('{}')
        return
      }
      received.push({ number, to: String(body.to), sendId: String(body.biz_opaque_callback_data ?? '') })
      setTimeout(() => res.end(JSON.stringify({ messages: [{ id: `wamid.F${received.length}` }] })), 5)
    })
  })
  return new Promise<{ server: http.Server; url: string; received: typeof received }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v21.0`, received }),
    ),
  )
}

describe('two worker processes, one killed while one account fans out a newsletter and another sends one by one', {
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

  const connect = (accountId: string, phoneNumberId: string, messagesPerSecond: number) =>
    channelsServiceFor({ config: harness.config, database: harness.database, clock: harness.clock }).connect(
      accountId,
      {
        channel: 'chat',
        provider: 'whatsapp-cloud',
        address: `+49309${phoneNumberId}`,
        phoneNumberId,
        wabaId: WABA,
        accessToken: `EAAG-${phoneNumberId}`,
        appSecret: 'fair-secret',
        verifyToken: 'fair-verify',
        messagesPerSecond,
      },
    )

  test("the small account's messages go out among the newsletter's, each exactly once, nobody's twice", async () => {
    const big = await createTestAccount(harness, { plan: { messagesPerMonth: 100_000 } })
    const small = await createTestAccount(harness)
    await connect(big.accountId, BIG_NUMBER, BIG_PACE)
    await connect(small.accountId, SMALL_NUMBER, 80)
    await harness.database.query(
      `INSERT INTO contacts (account_id, id, name, phone, optin_chat, source, created_at)
       SELECT $1::uuid, gen_random_uuid(), 'Kunde ' || i, '+49171' || lpad(i::text, 7, '0'), 'confirmed', 'api', now()
       FROM generate_series(1, $2::int) AS i`,
      [big.accountId, RECIPIENTS],
    )
    await harness.database.query('ANALYZE contacts')
    const contact = await small.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name: 'Erika Klein', phone: '+4915112345678' },
    })
    const contactId = contact.json().contact.id as string
    await harness.database.orm.transaction((tx) =>
      recordOptinChange(tx, harness.clock, {
        accountId: small.accountId,
        contactId,
        channel: 'chat',
        to: 'confirmed',
        source: 'test',
      }),
    )
    const template = await small.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: 'Abholung', content: 'Hallo {{name}}, deine Bestellung {{nummer}} liegt bereit.' },
    })
    const templateId = template.json().template.id as string
    const submitted = await small.request({ method: 'POST', url: `/v1/templates/${templateId}/submit` })
    assert.equal(submitted.json().template.provider_status, 'approved', submitted.body)

    const created = await big.request({
      method: 'POST',
      url: '/v1/newsletters',
      payload: { subject: 'Sommerfest', content: 'Hallo {{name}}, wir feiern am Samstag.' },
    })
    const newsletterId = created.json().newsletter.id as string
    const scheduled = await big.request({
      method: 'POST',
      url: `/v1/newsletters/${newsletterId}/schedule`,
      payload: { scheduled_at: new Date(Date.now() + 1000).toISOString() },
    })
    assert.equal(scheduled.statusCode, 200, scheduled.body)

    const settings = {
      HEROLD_WHATSAPP_GRAPH_URL: graph.url,
      HEROLD_JOB_LEASE_SECONDS: String(LEASE_SECONDS),
      HEROLD_WORKER_CONCURRENCY: String(CONCURRENCY),
    }
    const workers = [await startWorker(harness, settings), await startWorker(harness, settings)]
    children.push(...workers)
    const bigReceived = () => graph.received.filter((r) => r.number === BIG_NUMBER).length
    const startBy = Date.now() + 60_000
    while (bigReceived() < 200) {
      assert.ok(Date.now() < startBy, `the newsletter did not start: ${bigReceived()}`)
      await new Promise((r) => setTimeout(r, 20))
    }

    // the small account sends one message every 200 ms; one worker is killed half-way
    const sendIds: string[] = []
    for (let i = 1; i <= SMALL_SENDS; i++) {
      const response = await small.request({
        method: 'POST',
        url: '/v1/messages',
        payload: { contact_id: contactId, template: { id: templateId, variables: { nummer: `A-${i}` } } },
      })
      assert.equal(response.statusCode, 202, response.body)
      sendIds.push(response.json().send_id as string)
      if (i === SMALL_SENDS / 2) {
        workers[0].kill('SIGKILL')
        await once(workers[0], 'exit')
      }
      await new Promise((r) => setTimeout(r, 200))
    }
    const bigAtLastSmallSend = bigReceived()

    const status = async () =>
      (await big.request({ method: 'GET', url: `/v1/newsletters/${newsletterId}/status` })).json() as {
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
    workers[1].kill('SIGTERM')
    await once(workers[1], 'exit')

    // the newsletter: exactly once, or ended interrupted
    const final = await status()
    assert.equal(final.recipients, RECIPIENTS)
    const perPhone = new Map<string, number>()
    for (const r of graph.received.filter((x) => x.number === BIG_NUMBER))
      perPhone.set(r.to, (perPhone.get(r.to) ?? 0) + 1)
    assert.deepEqual(
      [...perPhone].filter(([, n]) => n > 1),
      [],
      'no recipient of the newsletter twice',
    )
    const interrupted = final.skip_reasons.interrupted ?? 0
    assert.ok(interrupted <= CONCURRENCY, `at most the sends in flight at the kill ended interrupted: ${interrupted}`)
    assert.equal(final.counts.sent, RECIPIENTS - interrupted, JSON.stringify(final))

    // the small account's messages: each at the provider at most once, sent unless it was in flight at the kill
    const smallArrivals = graph.received.flatMap((r, at) => (r.number === SMALL_NUMBER ? [{ ...r, at }] : []))
    for (const id of sendIds) {
      const arrivals = smallArrivals.filter((r) => r.sendId === id).length
      const send = (await small.request({ method: 'GET', url: `/v1/sends/${id}` })).json()
      assert.ok(arrivals <= 1, `send ${id} reached the provider ${arrivals} times`)
      if (send.status === 'failed') assert.equal(send.reason, 'interrupted', JSON.stringify(send))
      else assert.equal(send.status, 'sent', JSON.stringify(send))
    }
    // fairness: the small account did not wait behind the newsletter's queue. Its last message reached the provider
    // while most of what was left of the newsletter when it was queued was still to go (a FIFO claim sent it after
    // every queued newsletter send: none after it). No timing: the order at the provider says it.
    const lastSmall = Math.max(...smallArrivals.map((r) => r.at))
    const bigAfterLastSmall = graph.received.slice(lastSmall + 1).filter((r) => r.number === BIG_NUMBER).length
    assert.ok(
      bigAfterLastSmall >= (RECIPIENTS - bigAtLastSmallSend - interrupted) / 2,
      `the small account's last message arrived with ${bigAfterLastSmall} newsletter messages still to go (${bigAtLastSmallSend} had gone when it was queued)`,
    )
    console.log(
      `# fairness kill test: ${bigAtLastSmallSend} of ${RECIPIENTS} newsletter messages out when the small account's last was queued, ${bigAfterLastSmall} after it arrived; ${interrupted} interrupted`,
    )
  })
})
