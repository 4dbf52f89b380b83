import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { after, before } from 'node:test'
import { type FakeGraph, type GraphCall, startFakeGraph } from './fake-graph.ts'
import { setOptin } from './fixtures.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from './harness.ts'
import { startWorker } from './worker.ts'

// The kill tests: worker processes against one PostgreSQL database, one SIGKILLed mid-way, another finishing the work.

export const sharedDatabaseUrl = process.env.HEROLD_TEST_DATABASE_URL

/** `describe`'s options for a test of worker processes: only PostgreSQL is a database several processes share. */
export const needsSharedDatabase = {
  skip: sharedDatabaseUrl ? false : 'needs HEROLD_TEST_DATABASE_URL (a PostgreSQL shared by processes)',
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The fake Graph API's answers in the kill tests: templates submitted to `wabaId` are approved at once; a template
 * message to a phone number id (`phoneNumberId`, or any) is handed to `record` on arrival and answered `delayMs`
 * later with a message id `${idPrefix}${n}`; `orElse` may answer anything else; the rest is a 404.
 */
export function whatsappAnswers(options: {
  delayMs: number
  idPrefix: string
  phoneNumberId?: string
  wabaId?: string
  /** the message's body and its phone number id; returns how many messages have arrived */
  record(body: Record<string, unknown>, phoneNumberId: string): number
  orElse?(call: GraphCall): boolean
}): (call: GraphCall) => void {
  return (call) => {
    const { method, url, body, send } = call
    if (options.wabaId && method === 'POST' && url.pathname.endsWith(`/${options.wabaId}/message_templates`)) {
      send(200, { id: `tpl${Date.now()}${Math.random()}`, status: 'APPROVED', category: 'MARKETING' })
      return
    }
    const number = /\/(\d+)\/messages$/.exec(url.pathname)?.[1]
    if (method === 'POST' && number && (options.phoneNumberId === undefined || number === options.phoneNumberId)) {
      const n = options.record(body ?? {}, number)
      setTimeout(() => send(200, { messages: [{ id: `${options.idPrefix}${n}` }] }), options.delayMs)
      return
    }
    if (options.orElse?.(call)) return
    send(404, {})
  }
}

export interface KillScene {
  harness: Harness
  /** unset when the scene has no fake Graph API */
  graph: FakeGraph
  /** a worker process with the scene's settings, stopped (SIGKILL) after the tests if still running */
  worker(): Promise<ChildProcess>
  /** SIGKILL, and its exit */
  kill(child: ChildProcess): Promise<void>
  /** waits until `reached()` (failing with `message()` after `withinMs`), then SIGKILLs the worker */
  killWhen(child: ChildProcess, reached: () => boolean, withinMs: number, message: () => string): Promise<void>
  /** polls `pending()` every `everyMs` until it is false, failing with `message()` after `withinMs` */
  waitWhile(
    pending: () => Promise<boolean>,
    options: { withinMs: number; everyMs: number; message: () => Promise<string> },
  ): Promise<void>
  /** SIGTERM, and its exit */
  stop(child: ChildProcess): Promise<void>
  /** connects the account's chat channel to the fake Graph API as `phoneNumberId` of the business account `wabaId` */
  connectWhatsApp(
    accountId: string,
    channel: { phoneNumberId: string; wabaId: string; messagesPerSecond?: number },
  ): Promise<unknown>
  /** a fresh account with this monthly message limit, its chat channel connected as `connectWhatsApp` does */
  whatsAppAccount(
    messagesPerMonth: number,
    channel: { phoneNumberId: string; wabaId: string; messagesPerSecond?: number },
  ): Promise<TestAccount>
  /** polls the newsletter's status until it is sent (at most 240 s) */
  newsletterSent(account: TestAccount, id: string): Promise<void>
}

/**
 * Sets the scene inside a `describe`: the fake Graph API answering with `graph` (when given), a harness on a database
 * of its own whose in-process runner is stopped (`ownDatabase: false`: the shared one, no runner), and the workers'
 * settings. Read the scene's fields inside the tests.
 */
export function killScene(options: {
  graph?: (call: GraphCall) => void
  leaseSeconds: number
  concurrency?: number
  /** more of the workers' environment */
  settings?: Record<string, string>
  ownDatabase?: boolean
}): KillScene {
  const settings = () => ({
    ...(scene.graph ? { HEROLD_WHATSAPP_GRAPH_URL: scene.graph.url } : {}),
    HEROLD_JOB_LEASE_SECONDS: String(options.leaseSeconds),
    ...(options.concurrency ? { HEROLD_WORKER_CONCURRENCY: String(options.concurrency) } : {}),
    ...options.settings,
  })
  const children: ChildProcess[] = []
  const scene: KillScene = {
    harness: undefined as unknown as Harness,
    graph: undefined as unknown as FakeGraph,
    async worker() {
      const child = await startWorker(scene.harness, settings())
      children.push(child)
      return child
    },
    async killWhen(child, reached, withinMs, message) {
      const by = Date.now() + withinMs
      while (!reached()) {
        assert.ok(Date.now() < by, message())
        await pause(20)
      }
      await scene.kill(child)
    },
    async kill(child) {
      child.kill('SIGKILL')
      await once(child, 'exit')
    },
    async waitWhile(pending, { withinMs, everyMs, message }) {
      const deadline = Date.now() + withinMs
      while (await pending()) {
        if (Date.now() >= deadline) assert.fail(await message())
        await pause(everyMs)
      }
    },
    async stop(child) {
      child.kill('SIGTERM')
      await once(child, 'exit')
    },
    connectWhatsApp(accountId, { phoneNumberId, wabaId, messagesPerSecond }) {
      return scene.harness.services.channels.connect(accountId, {
        channel: 'chat',
        provider: 'whatsapp-cloud',
        address: `+49309${phoneNumberId}`,
        phoneNumberId,
        wabaId,
        accessToken: `EAAG-${phoneNumberId}`,
        appSecret: 'kill-secret',
        verifyToken: 'kill-verify',
        ...(messagesPerSecond ? { messagesPerSecond } : {}),
      })
    },
    async whatsAppAccount(messagesPerMonth, channel) {
      const account = await createTestAccount(scene.harness, { plan: { messagesPerMonth } })
      await scene.connectWhatsApp(account.accountId, channel)
      return account
    },
    async newsletterSent(account, id) {
      await scene.waitWhile(async () => (await newsletterStatus(account, id)).status !== 'sent', {
        withinMs: 240_000,
        everyMs: 250,
        message: async () => `not finished: ${JSON.stringify(await newsletterStatus(account, id))}`,
      })
    },
  }
  before(async () => {
    if (options.graph) scene.graph = await startFakeGraph(options.graph)
    const ownDatabase = options.ownDatabase ?? true
    const whatsappGraphUrl = scene.graph ? { whatsappGraphUrl: scene.graph.url } : {}
    scene.harness = await createHarness({
      config: { allowPrivateTargets: true, ...whatsappGraphUrl },
      // a database of its own; the in-process runner is stopped, the children work
      workers: ownDatabase,
    })
    if (ownDatabase) await scene.harness.jobs!.stop()
  })
  after(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await scene.graph?.close()
    await scene.harness?.close()
  })
  return scene
}

/**
 * A kill scene (leases of 2 s) whose fake Graph API approves the templates of the channel's `wabaId` and answers
 * every template message to its `phoneNumberId` `delayMs` (5) later; `received` holds each message's `recorded` field
 * (its recipient, `to`) in arrival order.
 */
export function recordingScene(options: {
  channel: { phoneNumberId: string; wabaId?: string }
  concurrency: number
  delayMs?: number
  recorded?: 'to' | 'biz_opaque_callback_data'
}): { scene: KillScene; received: string[] } {
  const { channel, concurrency, delayMs = 5, recorded = 'to' } = options
  const received: string[] = []
  const graph = whatsappAnswers({
    ...channel,
    delayMs,
    idPrefix: `wamid.${channel.phoneNumberId}.`,
    record: (body) => received.push(String(body[recorded])),
  })
  return { scene: killScene({ graph, leaseSeconds: 2, concurrency }), received }
}

/** Confirmed contacts straight into the table (how they came is not what these tests are about). */
export async function insertConfirmedContacts(
  harness: Harness,
  accountId: string,
  count: number,
  options: { phonePrefix: string; createdAt?: string },
): Promise<void> {
  await harness.database.query(
    `INSERT INTO contacts (account_id, id, name, phone, optin_chat, source, created_at)
     SELECT $1::uuid, gen_random_uuid(), 'Kunde ' || i, $3 || lpad(i::text, 7, '0'), 'confirmed', 'api',
       ${options.createdAt ?? 'now()'}
     FROM generate_series(1, $2::int) AS i`,
    [accountId, count, options.phonePrefix],
  )
  await harness.database.query('ANALYZE contacts')
}

export interface NewsletterStatus {
  status: string
  recipients: number
  counts: Record<string, number>
  skip_reasons: Record<string, number>
}

export async function newsletterStatus(account: TestAccount, id: string): Promise<NewsletterStatus> {
  return (await account.request({ method: 'GET', url: `/v1/newsletters/${id}/status` })).json() as NewsletterStatus
}

/** How often each value occurs, and those more than once. */
export function countEach(values: string[]): { counts: Map<string, number>; twice: Array<[string, number]> } {
  const counts = new Map<string, number>()
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1)
  return { counts, twice: [...counts].filter(([, n]) => n > 1) }
}

/** A newsletter to every confirmed contact, scheduled `inMs` from now: its id and the scheduled newsletter. */
export async function scheduleNewsletter(account: TestAccount, inMs: number) {
  const created = await account.request({
    method: 'POST',
    url: '/v1/newsletters',
    payload: { subject: 'Sommerfest', content: 'Hallo {{name}}, wir feiern am Samstag.' },
  })
  const id = created.json().newsletter.id as string
  const scheduled = await account.request({
    method: 'POST',
    url: `/v1/newsletters/${id}/schedule`,
    payload: { scheduled_at: new Date(Date.now() + inMs).toISOString() },
  })
  assert.equal(scheduled.statusCode, 200, scheduled.body)
  return { id, newsletter: scheduled.json().newsletter as { template_status: string } }
}

/** A contact made through the API whose chat opt-in is confirmed; its id. */
export async function confirmedContact(harness: Harness, account: TestAccount, name: string, phone: string) {
  const contact = await account.request({ method: 'POST', url: '/v1/contacts', payload: { name, phone } })
  const contactId = contact.json().contact.id as string
  await setOptin(harness, account.accountId, contactId)
  return contactId
}

/** A template made through the API and marked approved as the provider's status update marks it; its id. */
export async function approvedTemplate(harness: Harness, account: TestAccount, payload: Record<string, unknown>) {
  const created = await account.request({ method: 'POST', url: '/v1/templates', payload })
  const templateId = created.json().template.id as string
  await harness.services.templates.applyProviderStatus(account.accountId, templateId, { status: 'APPROVED' })
  return templateId
}
