import assert from 'node:assert/strict'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { statusCommand } from '../../src/cli/status.command.ts'
import { pauseSending } from '../../src/platform/auth/accounts.service.ts'
import { TestClock } from '../../src/platform/clock.ts'
import { lowerPace } from '../../src/platform/jobs/adaptive-pace.ts'
import { registerProcess } from '../../src/platform/processes/processes.ts'
import { phoneSequence, setOptin } from '../helpers/fixtures.ts'
import { createHarness, createTestAccount, type Harness } from '../helpers/harness.ts'
import { childEnv, freePort, ROOT, runCli, startProcess, tempDataDir } from '../helpers/process.ts'

// biome-ignore lint/suspicious/noExplicitAny: the command's result is read loosely here
type Json = Record<string, any>
const nextPhone = phoneSequence('+4914')

describe('herold status on the database (both databases)', () => {
  let harness: Harness
  before(async () => {
    // a database of its own on PostgreSQL: the lists and queues are this test's alone
    harness = await createHarness({ workers: true })
    await harness.jobs!.stop()
  })
  after(() => harness.close())

  test('processes and roles, queues, the last hour by reason, disabled subscriptions, numbers at their limit, paused accounts', async () => {
    const account = await createTestAccount(harness, { plan: { messagesPerMonth: 100 } })
    await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox', dailyLimit: 1 })
    const template = await account.request({
      method: 'POST',
      url: '/v1/templates',
      payload: { name: `Status ${process.pid}`, content: 'Hallo {{name}}, bis bald!', language: 'de' },
    })
    const templateId = template.json().template.id
    assert.equal((await account.request({ method: 'POST', url: `/v1/templates/${templateId}/submit` })).statusCode, 200)
    const send = async () => {
      const created = await account.request({
        method: 'POST',
        url: '/v1/contacts',
        payload: { name: 'Erika Mustermann', phone: nextPhone() },
      })
      const contactId = created.json().contact.id
      await setOptin(harness, account.accountId, contactId)
      const sent = await account.request({
        method: 'POST',
        url: '/v1/messages',
        payload: { contact_id: contactId, template: { id: templateId } },
      })
      assert.equal(sent.statusCode, 202, sent.body)
    }
    // one conversation a day: the first is sent, the second skipped at the limit
    await send()
    await send()
    await harness.jobs!.start()
    await harness.jobs!.drain()
    await harness.jobs!.stop()
    await send()

    const subscription = await account.request({
      method: 'POST',
      url: '/v1/webhook-subscriptions',
      payload: { url: 'https://hooks.example.org/herold', events: ['contact.created'] },
    })
    const subscriptionId = subscription.json().id
    await account.request({ method: 'POST', url: `/v1/webhook-subscriptions/${subscriptionId}/disable` })
    const paused = await createTestAccount(harness, { name: `Paused ${process.pid}` })
    await pauseSending(harness.database.orm, paused.accountId)

    // two throughput refusals in a row lower the number's pace once (80 a second, now half)
    await harness.database.orm.transaction(async (tx) => {
      const refusal = {
        accountId: account.accountId,
        lane: 'chat',
        reason: 'throughput_refused',
        now: harness.clock.now(),
      } as const
      await lowerPace(tx, refusal)
      await lowerPace(tx, refusal)
    })

    const stopLive = await registerProcess(harness.database, new TestClock(), { role: 'worker', url: null })
    const longAgo = new TestClock()
    longAgo.advance(-5 * 60_000)
    const stopDead = await registerProcess(harness.database, longAgo, { role: 'api', url: 'http://10.0.0.7:3000' })
    try {
      const result = (await statusCommand.run(harness.database, {}, [])) as Json
      assert.equal(result.database, harness.database.kind === 'pglite' ? 'embedded' : 'postgres')
      const roles = result.processes.map((p: Json) => [p.role, p.alive])
      assert.deepEqual(roles.sort(), [
        ['api', false],
        ['worker', true],
      ])
      assert.equal(typeof result.processes[0].pid, 'number')

      const sends = result.queues.find((q: Json) => q.queue === 'messaging.template_send')
      assert.equal(sends.queued, 1)
      assert.equal(sends.running, 0)
      assert.equal(typeof sends.oldest_due_seconds, 'number')

      assert.equal(result.sends_last_hour.sent, 1)
      assert.equal(result.sends_last_hour.skipped, 1)
      assert.deepEqual(result.sends_last_hour.by_reason, [{ reason: 'skipped: daily_limit_reached', n: 1 }])

      assert.deepEqual(
        result.disabled_webhook_subscriptions.items.map((d: Json) => [d.id, d.reason]),
        [[subscriptionId, 'manual']],
      )
      assert.deepEqual(result.numbers_at_daily_limit.items, [{ account_id: account.accountId, limit: 1, used: 1 }])
      assert.deepEqual(
        result.sending_paused_accounts.items.map((a: Json) => a.id),
        [paused.accountId],
      )

      const at = harness.clock.now().toISOString()
      assert.deepEqual(result.paces_lowered.items, [
        {
          account_id: account.accountId,
          lane: 'chat',
          per_second: 40,
          full_per_second: 80,
          reason: 'throughput_refused',
          since: at,
          last_refusal_at: at,
        },
      ])

      const text = statusCommand.human(result)
      assert.match(text, /^Herold status at /)
      assert.match(text, /^ {2}worker .*no HTTP {2}up \d+ s, seen \d+ s ago$/m)
      assert.match(text, /^ {2}api .*http:\/\/10\.0\.0\.7:3000 .*NOT SEEN \(died\?\)$/m)
      assert.match(text, /^ {2}messaging\.template_send +1 +0 {2}\d+ s$/m)
      assert.match(text, /^Sends in the last hour: 1 sent, 0 failed, 1 skipped$/m)
      assert.match(text, /^ +1 {2}skipped: daily_limit_reached$/m)
      assert.match(text, new RegExp(`^ {2}${subscriptionId} \\(account ${account.accountId}\\): manual since `, 'm'))
      assert.match(text, new RegExp(`^ {2}account ${account.accountId}: 1 of 1 new conversations in 24 hours$`, 'm'))
      assert.match(text, new RegExp(`^ {2}${paused.accountId} {2}Paused ${process.pid}$`, 'm'))
      assert.match(
        text,
        new RegExp(
          `^ {2}account ${account.accountId}: 40 of 80 messages a second, throughput_refused since ${at}`,
          'm',
        ),
      )
    } finally {
      await stopLive()
      await stopDead()
    }
    const gone = (await statusCommand.run(harness.database, {}, [])) as Json
    assert.deepEqual(gone.processes, [], 'a stopped process removes its row')
  })
})

describe('herold status and the metrics port of a running embedded server', () => {
  test('the server lists itself with its role through the admin endpoint, as text and as one JSON object', async () => {
    const dataDir = tempDataDir()
    const metricsPort = await freePort()
    const env = childEnv({
      HEROLD_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      HEROLD_METRICS_PORT: String(metricsPort),
    })
    const server = await startProcess(
      process.execPath,
      [path.join(ROOT, 'src/cli/main.ts'), 'serve', '--json'],
      env,
      (output) => /"url":"(http[^"]+)"/.exec(output)?.[1] ?? null,
    )
    try {
      const json = await runCli(['status', '--json'], env)
      assert.equal(json.code, 0, json.stderr)
      assert.equal(json.stdout.trim().split('\n').length, 1)
      const result = JSON.parse(json.stdout) as Json
      assert.equal(result.database, 'embedded')
      assert.deepEqual(
        result.processes.map((p: Json) => [p.role, p.url, p.alive, p.pid]),
        [['all', server.url, true, server.child.pid]],
      )
      const text = await runCli(['status'], env)
      assert.equal(text.code, 0, text.stderr)
      assert.match(text.stdout, new RegExp(`^ {2}all +\\S+:${server.child.pid} {2}${server.url} {2}up `, 'm'))
      assert.match(text.stdout, /^Sends in the last hour: 0 sent, 0 failed, 0 skipped$/m)
      // the same server's metrics on the main port (loopback) and on HEROLD_METRICS_PORT
      for (const url of [`${server.url}/metrics`, `http://127.0.0.1:${metricsPort}/metrics`]) {
        const scraped = await fetch(url)
        assert.equal(scraped.status, 200, url)
        assert.match(await scraped.text(), /^# TYPE herold_job_queue_jobs gauge$/m)
      }
    } finally {
      await server.stop()
    }
  })
})
