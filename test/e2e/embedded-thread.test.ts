import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { after, before, test } from 'node:test'
import { childEnv, freePort, listeningAt, type ServerProcess, startProcess, tempDataDir } from '../helpers/process.ts'
import { startReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.ts'

// `herold serve` embedded with its database on a thread of its own (HEROLD_EMBEDDED_THREAD=1), driven as a client
// would: a contact written and read over HTTP with the printed key, and its contact.created event delivered by a job.

let server: ServerProcess
let key: string
let receiver: WebhookReceiver

before(async () => {
  const env = childEnv({
    HEROLD_DATA_DIR: tempDataDir(),
    PORT: String(await freePort()),
    HEROLD_ALLOW_PRIVATE_TARGETS: 'true',
    HEROLD_EMBEDDED_THREAD: '1',
  })
  server = await startProcess(process.execPath, ['src/cli/main.ts', 'serve'], env, listeningAt)
  const printed = /HEROLD_API_KEY=(hk_[A-Za-z0-9_-]+)/.exec(server.output())?.[1]
  assert.ok(printed, `a key is printed:\n${server.output()}`)
  key = printed
  receiver = await startReceiver()
})

after(async () => {
  await receiver?.close()
  if (server) assert.equal(await server.stop(), 0, server.output())
})

const call = async (method: string, url: string, body?: unknown) => {
  const response = await fetch(`${server.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely in tests
  return { status: response.status, body: (await response.json()) as any }
}

test('the database runs on its own thread of the server process', { skip: !existsSync('/proc/self/task') }, () => {
  const pid = server.child.pid!
  const threads = readdirSync(`/proc/${pid}/task`).map((t) =>
    readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim(),
  )
  assert.ok(threads.includes('herold-db'), `the threads of the server: ${threads.join(', ')}`)
})

test('a contact written and read back over HTTP; its contact.created event delivered to a subscriber', async () => {
  const subscribed = await call('POST', '/v1/webhook-subscriptions', {
    url: receiver.url,
    events: ['contact.created'],
  })
  assert.equal(subscribed.status, 201, JSON.stringify(subscribed.body))
  receiver.secret = subscribed.body.secret

  const created = await call('POST', '/v1/contacts', { name: 'Thea Thread', phone: '+4915200000777' })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const id = created.body.contact.id
  const read = await call('GET', `/v1/contacts/${id}`)
  assert.equal(read.status, 200, JSON.stringify(read.body))
  assert.equal(read.body.contact.name, 'Thea Thread')
  assert.equal(read.body.contact.phone, '+4915200000777')

  const [delivery] = await receiver.waitFor(1, 30_000)
  assert.equal(delivery.verified, true, delivery.reason ?? '')
  assert.equal(delivery.event, 'contact.created')
  assert.equal(delivery.body.data.id, id)
})
