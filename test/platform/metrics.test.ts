import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { lowerPace } from '../../src/platform/jobs/adaptive-pace.ts'
import { startMetricsServer } from '../../src/platform/metrics/endpoint.ts'
import { configureMetrics } from '../../src/platform/metrics/metrics.ts'
import { phoneSequence, sandboxAccount, setOptin } from '../helpers/fixtures.ts'
import { createHarness, type Harness, type TestAccount } from '../helpers/harness.ts'

let harness: Harness
const nextPhone = phoneSequence('+4915')
const TOKEN = 'metrics-token-0123456789abcdef'

before(async () => {
  harness = await createHarness({ workers: true })
  // jobs run only inside drain() or when a test starts the runner
  await harness.jobs!.stop()
})
after(() => harness.close())

/** One sample line of the exposition format: name, labels, value. */
interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

function parse(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>()
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line)
    if (type) types.set(type[1], type[2])
    if (line === '' || line.startsWith('#')) continue
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    assert.ok(match, `a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]] = pair[2]
    samples.push({ name: match[1], labels, value: Number(match[3]) })
  }
  return { types, samples }
}

async function scrape(): Promise<{ text: string; types: Map<string, string>; samples: Sample[] }> {
  const response = await harness.app.inject({ method: 'GET', url: '/metrics' })
  assert.equal(response.statusCode, 200, response.body)
  assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/)
  return { text: response.body, ...parse(response.body) }
}

const value = (samples: Sample[], name: string, labels: Record<string, string>) =>
  samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)

/** A sandbox account, an approved template, and `n` confirmed contacts with phone and e-mail. */
async function readyToSend(n: number, name = 'Bäckerei Schulz') {
  const account = await sandboxAccount(harness, { messagesPerMonth: 10_000 }, name)
  const template = await account.request({
    method: 'POST',
    url: '/v1/templates',
    payload: {
      name: `Code ${process.pid} ${Math.random()}`,
      content: 'Hallo {{name}}, Code {{code}}. Bis bald!',
      language: 'de',
    },
  })
  assert.equal(template.statusCode, 201, template.body)
  const id = template.json().template.id as string
  const submitted = await account.request({ method: 'POST', url: `/v1/templates/${id}/submit` })
  assert.equal(submitted.statusCode, 200, submitted.body)
  const contacts: Array<{ id: string; phone: string; email: string }> = []
  for (let i = 0; i < n; i++) {
    const phone = nextPhone()
    const email = `erika.${phone.slice(1)}@example.org`
    const created = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name: 'Erika Mustermann', phone, email },
    })
    assert.equal(created.statusCode, 201, created.body)
    const contactId = created.json().contact.id as string
    await setOptin(harness, account.accountId, contactId)
    contacts.push({ id: contactId, phone, email })
  }
  return { account, templateId: id, contacts }
}

async function queueSends(account: TestAccount, templateId: string, contacts: Array<{ id: string }>) {
  for (const contact of contacts) {
    const response = await account.request({
      method: 'POST',
      url: '/v1/messages',
      payload: { contact_id: contact.id, template: { id: templateId, variables: { code: 'A-17' } } },
    })
    assert.equal(response.statusCode, 202, response.body)
  }
}

describe('GET /metrics', () => {
  test('names, types and labels: requests by route pattern, sends by channel, origin and outcome, queue gauges, process metrics', async () => {
    const { account, templateId, contacts } = await readyToSend(2)
    const before = await scrape()
    const sentBefore = value(before.samples, 'herold_sends_total', {
      channel: 'chat',
      origin: 'transactional',
      outcome: 'sent',
    })
    await queueSends(account, templateId, contacts)
    const queued = await scrape()
    assert.ok(
      value(queued.samples, 'herold_job_queue_jobs', { queue: 'messaging.template_send', state: 'queued' }) >= 2,
      'the queued sends are in the queue gauge',
    )
    assert.equal(value(queued.samples, 'herold_job_queue_count_cap', {}), 10_000)
    const contact = await account.request({ method: 'GET', url: `/v1/contacts/${contacts[0].id}` })
    assert.equal(contact.statusCode, 200)
    await harness.jobs!.start()
    await harness.jobs!.drain()
    await harness.jobs!.stop()
    const { types, samples, text } = await scrape()

    const expected = {
      herold_http_request_duration_seconds: 'histogram',
      herold_sends_total: 'counter',
      herold_webhook_deliveries_total: 'counter',
      herold_webhook_first_attempt_lag_seconds: 'histogram',
      herold_inbound_messages_total: 'counter',
      herold_provider_errors_total: 'counter',
      herold_job_runs_total: 'counter',
      herold_job_queue_jobs: 'gauge',
      herold_job_queue_oldest_due_seconds: 'gauge',
      herold_database_pool_connections: 'gauge',
      process_cpu_seconds_total: 'counter',
      nodejs_eventloop_lag_seconds: 'gauge',
    }
    for (const [name, type] of Object.entries(expected)) assert.equal(types.get(name), type, name)

    assert.equal(
      value(samples, 'herold_sends_total', { channel: 'chat', origin: 'transactional', outcome: 'sent' }) - sentBefore,
      2,
    )
    const routes = samples.filter((s) => s.name === 'herold_http_request_duration_seconds_count')
    assert.ok(
      routes.some(
        (s) => s.labels.route === '/v1/contacts/:id' && s.labels.method === 'GET' && s.labels.status_class === '2xx',
      ),
      `the route pattern, method and status class: ${routes.map((s) => JSON.stringify(s.labels)).join(' ')}`,
    )
    assert.ok(!text.includes(contacts[0].id), 'never the raw URL')
    assert.equal(value(samples, 'herold_database_pool_connections', { state: 'max' }) >= 1, true)
    assert.ok(value(samples, 'herold_job_runs_total', { queue: 'messaging.template_send', outcome: 'completed' }) >= 2)
  })

  test('no personal data in any label after sends to contacts with phone and e-mail: no phone, address, name, key or account id', async () => {
    const name = `Metzgerei Huber ${process.pid}`
    const { account, templateId, contacts } = await readyToSend(3, name)
    await queueSends(account, templateId, contacts)
    await harness.jobs!.start()
    await harness.jobs!.drain()
    await harness.jobs!.stop()
    const { samples, text } = await scrape()
    const labelValues = samples.flatMap((s) => Object.values(s.labels))
    const forbidden = [
      name,
      account.accountId,
      account.key,
      account.key.slice(0, 12),
      ...contacts.flatMap((c) => [c.phone, c.phone.slice(1), c.email, c.id]),
    ]
    for (const personal of forbidden) {
      assert.ok(!labelValues.some((v) => v.includes(personal)), `no label holds ${personal}`)
      assert.ok(!text.includes(personal), `the text holds no ${personal}`)
    }
    assert.ok(!labelValues.some((v) => v.includes('@')), 'no e-mail address')
    assert.ok(!samples.some((s) => 'account_id' in s.labels), 'account ids only when asked for')
  })

  test('a scrape during a send burst answers every time, and the counts add up afterwards', async () => {
    const { account, templateId, contacts } = await readyToSend(30)
    const before = value((await scrape()).samples, 'herold_sends_total', { origin: 'transactional', outcome: 'sent' })
    await queueSends(account, templateId, contacts)
    await harness.jobs!.start()
    const draining = harness.jobs!.drain()
    const during = await Promise.all(Array.from({ length: 5 }, () => scrape()))
    await draining
    await harness.jobs!.stop()
    for (const scraped of during) assert.ok(scraped.types.get('herold_sends_total'))
    const afterwards = value((await scrape()).samples, 'herold_sends_total', {
      origin: 'transactional',
      outcome: 'sent',
    })
    assert.equal(afterwards - before, 30)
  })

  test('HEROLD_METRICS_PER_ACCOUNT=true: the per-account counters carry account_id', async () => {
    configureMetrics({ perAccount: true })
    try {
      const { account, templateId, contacts } = await readyToSend(1)
      await queueSends(account, templateId, contacts)
      await harness.jobs!.start()
      await harness.jobs!.drain()
      await harness.jobs!.stop()
      const { samples } = await scrape()
      assert.equal(value(samples, 'herold_sends_total', { account_id: account.accountId, outcome: 'sent' }), 1)
    } finally {
      configureMetrics({ perAccount: false })
    }
  })

  test('a number below its pace after a throughput refusal: counted by lane and reason, per account its current and full pace', async () => {
    const { account } = await readyToSend(0)
    const lowered = (samples: Sample[]) =>
      value(samples, 'herold_paces_lowered', { lane: 'chat', reason: 'throughput_refused' })
    const before = lowered((await scrape()).samples)
    await harness.database.orm.transaction((tx) =>
      lowerPace(tx, {
        accountId: account.accountId,
        lane: 'chat',
        reason: 'throughput_refused',
        now: harness.clock.now(),
      }),
    )
    configureMetrics({ perAccount: true })
    try {
      const { samples, types } = await scrape()
      assert.equal(types.get('herold_paces_lowered'), 'gauge')
      assert.equal(lowered(samples) - before, 1)
      const pace = (kind: string) =>
        value(samples, 'herold_pace_messages_per_second', { account_id: account.accountId, pace: kind })
      assert.deepEqual([pace('current'), pace('full')], [40, 80])
    } finally {
      configureMetrics({ perAccount: false })
    }
    const { samples } = await scrape()
    assert.ok(!samples.some((s) => s.labels.account_id === account.accountId), 'per account only when asked for')
  })

  test('without HEROLD_METRICS_TOKEN only loopback reads it: another address gets the 404 of a missing route', async () => {
    const remote = await harness.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '203.0.113.9' })
    assert.equal(remote.statusCode, 404)
    assert.equal(remote.json().error.code, 'not_found')
    const local = await harness.app.inject({ method: 'GET', url: '/metrics', remoteAddress: '::1' })
    assert.equal(local.statusCode, 200)
  })
})

describe('GET /metrics with HEROLD_METRICS_TOKEN', () => {
  let tokened: Harness
  before(async () => {
    tokened = await createHarness({ config: { metricsToken: TOKEN } })
  })
  after(() => tokened.close())

  test('the bearer token is needed from anywhere, loopback included: 401 in the error envelope without it', async () => {
    for (const remoteAddress of ['127.0.0.1', '203.0.113.9']) {
      const missing = await tokened.app.inject({ method: 'GET', url: '/metrics', remoteAddress })
      assert.equal(missing.statusCode, 401)
      assert.equal(missing.json().error.code, 'unauthorized')
      const wrong = await tokened.app.inject({
        method: 'GET',
        url: '/metrics',
        remoteAddress,
        headers: { authorization: `Bearer ${TOKEN.replace('0', '1')}` },
      })
      assert.equal(wrong.statusCode, 401)
      const right = await tokened.app.inject({
        method: 'GET',
        url: '/metrics',
        remoteAddress,
        headers: { authorization: `Bearer ${TOKEN}` },
      })
      assert.equal(right.statusCode, 200)
      assert.match(right.body, /# TYPE herold_sends_total counter/)
    }
  })
})

describe('HEROLD_METRICS_PORT', () => {
  test('a port of its own answers GET /metrics (with the token when one is set) and nothing else', async () => {
    const open = await startMetricsServer({ host: '127.0.0.1', port: 0 })
    const guarded = await startMetricsServer({ host: '127.0.0.1', port: 0, token: TOKEN })
    try {
      const scraped = await fetch(`${open.url}/metrics`)
      assert.equal(scraped.status, 200)
      assert.match(await scraped.text(), /# TYPE herold_http_request_duration_seconds histogram/)
      const other = await fetch(`${open.url}/v1/me`)
      assert.equal(other.status, 404)
      assert.equal(((await other.json()) as { error: { code: string } }).error.code, 'not_found')
      const refused = await fetch(`${guarded.url}/metrics`)
      assert.equal(refused.status, 401)
      assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'unauthorized')
      const allowed = await fetch(`${guarded.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
      assert.equal(allowed.status, 200)
    } finally {
      await open.close()
      await guarded.close()
    }
  })
})
