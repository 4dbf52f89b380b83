import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { nextPhone, setOptin, signedInMember } from '../../../test/helpers/fixtures.ts'
import { createHarness, createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import {
  aiAccount,
  conversation,
  drain,
  type FakeAi,
  inbound,
  type Json,
  RETURNS,
  replies,
  withAiHarness,
} from '../../../test/helpers/knowledge-ai.ts'
import { getAccount } from '../../platform/auth/accounts.service.ts'
import { sandboxOutboxOf } from '../channels/index.ts'
import { consentSubject } from '../contacts/index.ts'
import { createAiService } from './index.ts'
import { parseReplyDecision, parseTagSuggestion } from './knowledge.ai.rules.ts'
import { AI_REPLY_QUEUE, AI_TAGS_QUEUE, aiService } from './knowledge.ai.ts'

type AiServicePorts = Parameters<typeof aiService>[0]

describe('the built-in AI against an OpenAI-compatible endpoint', () => {
  let harness: Harness
  let ai: FakeAi

  /** The reply job of a customer's question, claimed for its first attempt. */
  const replyJob = (accountId: string, contactId: string, conversationId: string) => ({
    accountId,
    id: randomUUID(),
    queue: AI_REPLY_QUEUE,
    payload: {
      message_id: randomUUID(),
      contact_id: contactId,
      conversation_id: conversationId,
      text: 'Wie lange kann ich zurückschicken?',
      received_at: harness.clock.now().toISOString(),
    },
    concurrencyKey: contactId,
    attempts: 1,
    runAt: harness.clock.now(),
    createdAt: harness.clock.now(),
    leaseToken: randomUUID(),
  })
  const deps = () => ({ config: harness.config, database: harness.database, clock: harness.clock })
  /**
   * The AI service against the fake endpoint with the real service's HTTP client and no quota, person marks, logging
   * or tags, but for what `overrides` gives.
   */
  const serviceWith = (
    real: ReturnType<typeof createAiService>,
    overrides: Pick<AiServicePorts, 'sendText'> & Partial<AiServicePorts>,
  ) =>
    aiService({
      db: harness.database.orm,
      clock: harness.clock,
      endpoint: { url: ai.url, key: 'sk-test-key', model: 'herold-test-model' },
      http: real.http,
      account: (id) => getAccount(harness.database.orm, id),
      contact: (db, id, contact) => consentSubject(db, id, contact),
      quota: { reserve: async () => '2026-01', release: async () => {} },
      markForPerson: async () => {},
      logFailure: () => {},
      tagNames: async () => [],
      addTag: async () => false,
      ...overrides,
    })
  /** A new contact of the account named `name`; its id. */
  async function newContact(account: TestAccount, name: string): Promise<string> {
    const created = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name, phone: nextPhone() },
    })
    assert.equal(created.statusCode, 201, created.body)
    return created.json().contact.id as string
  }

  withAiHarness((made, fake) => {
    harness = made
    ai = fake
  })

  test('answered: the reply is written from the passages, sent with ai: true, and the passages are kept with it', async () => {
    const account = await aiAccount()
    const before = ai.requests.length
    ai.answer = (question, passages) =>
      /zurückschicken/.test(question) && /30 Tagen/.test(passages)
        ? { answer: 'Sie können Ihre Bestellung innerhalb von 30 Tagen kostenlos zurückschicken.', passages: [1] }
        : { answer: null, reason: 'not covered' }
    const phone = nextPhone()
    await inbound(account, phone, 'Wie lange kann ich meine Bestellung zurückschicken?')
    // accepted and stored before any model was asked
    assert.equal(ai.requests.length, before)
    assert.equal((await conversation(account)).messages.length, 1)

    await drain()
    assert.equal(ai.requests.length, before + 1)
    const request = ai.requests.at(-1)!
    assert.equal(request.authorization, 'Bearer sk-test-key')
    assert.equal(request.body.model, 'herold-test-model')
    assert.equal(request.body.temperature, 0)
    assert.equal(request.body.messages[0].role, 'system')
    assert.match(request.body.messages[0].content, /ONLY the numbered knowledge passages/)
    assert.match(
      request.body.messages[1].content,
      /\[1\] \(service › Rücksendungen\)\nSie können jede Bestellung innerhalb von 30 Tagen/,
    )
    assert.match(
      request.body.messages[1].content,
      /Customer message:\nWie lange kann ich meine Bestellung zurückschicken\?$/,
    )

    const { conversation: item, messages } = await conversation(account)
    assert.equal(messages.length, 2)
    const reply = messages[1]
    assert.equal(reply.direction, 'outbound')
    assert.equal(reply.ai, true)
    assert.equal(reply.automated, false)
    assert.equal(reply.text, 'Sie können Ihre Bestellung innerhalb von 30 Tagen kostenlos zurückschicken.')
    assert.equal(item.needs_person, false)
    const outbox = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.ok(outbox.some((m: Json) => JSON.stringify(m).includes('innerhalb von 30 Tagen kostenlos zurückschicken')))

    const [record] = await replies(account)
    assert.equal(record.state, 'sent')
    assert.equal(record.message_id, reply.id)
    assert.equal(record.inbound_message_id, messages[0].id)
    assert.equal(record.model, 'herold-test-model')
    assert.equal(record.passages[0].heading, 'Rücksendungen')
    assert.equal(record.passages[0].used, true)
    assert.ok(record.passages.slice(1).every((p: Json) => p.used === false))
    assert.match(record.passages[0].text, /30 Tagen kostenlos/)
    const filtered = await account.request({ method: 'GET', url: `/v1/knowledge/ai-replies?message_id=${reply.id}` })
    assert.equal(filtered.json().ai_replies[0].id, record.id)

    // deleting the contact removes what the AI recorded about them
    const removed = await account.request({ method: 'DELETE', url: `/v1/contacts/${item.contact_id}` })
    assert.equal(removed.statusCode, 200, removed.body)
    assert.equal(removed.json().removed.ai_replies, 1)
    assert.deepEqual(await replies(account), [])
  })

  test("declined: no reply is sent, the conversation is marked for a person, and a person's reply clears the mark", async () => {
    const account = await aiAccount()
    ai.answer = () => ({ answer: null, reason: 'the passages say nothing about Bitcoin' })
    await inbound(account, nextPhone(), 'Kann ich meine Bestellung mit Bitcoin bezahlen?')
    const before = ai.requests.length
    await drain()
    assert.equal(ai.requests.length, before + 1)
    const { conversation: item, messages } = await conversation(account)
    assert.equal(messages.length, 1)
    assert.equal(item.needs_person, true)
    assert.equal(item.needs_person_reason, 'not_answered')
    const [record] = await replies(account)
    assert.equal(record.state, 'declined')
    assert.match(record.reason, /^not_answered: the passages say nothing about Bitcoin/)
    assert.ok(record.passages.length >= 1)
    assert.equal(record.message_id, null)
    const queue = await account.request({ method: 'GET', url: '/v1/inbox/conversations?needs_person=true' })
    assert.deepEqual(
      (queue.json().conversations as Json[]).map((c) => c.id),
      [item.id],
    )

    // a person answers through POST /messages: the mark goes
    await setOptin(harness, account.accountId, item.contact_id)
    const sent = await account.request({
      method: 'POST',
      url: '/v1/messages',
      payload: { contact_id: item.contact_id, text: 'Leider nein, nur Rechnung, Kreditkarte und PayPal.' },
    })
    assert.equal(sent.statusCode, 201, sent.body)
    const after = await conversation(account)
    assert.equal(after.conversation.needs_person, false)
    assert.equal(after.conversation.needs_person_reason, null)
    const emptied = await account.request({ method: 'GET', url: '/v1/inbox/conversations?needs_person=true' })
    assert.deepEqual(emptied.json().conversations, [])
  })

  for (const [mode, reason] of [
    ['error500', /^ai_call_failed: the AI endpoint answered 500$/],
    ['hang', /^ai_call_failed: the AI endpoint did not answer in time$/],
    ['garbage', /^ai_call_failed: the AI endpoint did not answer with JSON$/],
  ] as const) {
    test(`a failed model call (${mode}) loses nothing: the message waits for a person, the failure is shown`, async (t) => {
      const account = await aiAccount({ replies_enabled: true, tags_enabled: true })
      // a tag exists, so the tag job asks the endpoint too
      const other = await account.request({
        method: 'POST',
        url: '/v1/contacts',
        payload: { name: 'Max', phone: nextPhone() },
      })
      const tagged = await account.request({
        method: 'POST',
        url: `/v1/contacts/${other.json().contact.id}/tags`,
        payload: { tag: 'retoure' },
      })
      assert.ok(tagged.statusCode < 300, tagged.body)
      ai.mode = mode
      t.after(() => {
        ai.mode = 'ok'
      })
      const before = ai.requests.length
      await inbound(account, nextPhone(), 'Kann ich meine Bestellung zurückschicken?')
      await drain()
      assert.ok(ai.requests.length > before, 'the endpoint was asked')
      const { conversation: item, messages } = await conversation(account)
      assert.equal(messages.length, 1, 'the customer message is kept, nothing was sent')
      assert.equal(messages[0].direction, 'inbound')
      assert.equal(item.needs_person, true)
      assert.equal(item.needs_person_reason, 'ai_call_failed')
      const [record] = await replies(account)
      assert.equal(record.state, 'failed')
      assert.match(record.reason, reason)
      assert.ok(record.passages.length >= 1, 'the passages of the prompt are kept for review')
      assert.equal(record.message_id, null)
      const outbox = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
      assert.deepEqual(outbox, [])
      const settings = await account.request({ method: 'GET', url: '/v1/settings/ai' })
      const body = settings.json() as Json
      assert.equal(body.active, true)
      assert.match(body.last_failure.reason, new RegExp(reason.source.replace('^ai_call_failed: ', '^')))
      assert.match(body.last_failure.at, /Z$/)
      assert.ok(!settings.body.includes('sk-test-key'))
      // no job is left behind to retry it later
      const open = await harness.database.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobs WHERE account_id = $1 AND queue IN ($2, $3)`,
        [account.accountId, AI_REPLY_QUEUE, AI_TAGS_QUEUE],
      )
      assert.equal(Number(open[0].n), 0)
    })
  }

  test('a question no passage touches asks no model and waits for a person', async () => {
    const account = await aiAccount()
    const before = ai.requests.length
    await inbound(account, nextPhone(), 'Xylophon Quarkstrudel?')
    await drain()
    assert.equal(ai.requests.length, before)
    const { conversation: item, messages } = await conversation(account)
    assert.equal(messages.length, 1)
    assert.equal(item.needs_person, true)
    assert.equal(item.needs_person_reason, 'no_passages')
    assert.equal((await replies(account))[0].state, 'declined')
  })

  test('consent keywords are never answered, and an opted-out contact gets no reply', async () => {
    const account = await aiAccount()
    ai.answer = () => ({ answer: 'Innerhalb von 30 Tagen.', passages: [1] })
    const phone = nextPhone()
    const before = ai.requests.length
    await inbound(account, phone, 'STOP')
    await inbound(account, phone, 'start')
    await drain()
    assert.equal(ai.requests.length, before)
    assert.deepEqual(await replies(account), [])

    // STOP opted the contact out (start cannot undo it without the double opt-in); a question now gets nothing
    await inbound(account, phone, 'STOP')
    await drain()
    const { conversation: item } = await conversation(account)
    const contact = await account.request({ method: 'GET', url: `/v1/contacts/${item.contact_id}` })
    assert.equal(contact.json().contact.optin_chat, 'opted_out')
    const sentBefore = (await conversation(account)).messages.filter((m) => m.ai).length
    await inbound(account, phone, 'Wie lange kann ich zurückschicken?')
    await drain()
    assert.equal(ai.requests.length, before)
    const record = (await replies(account))[0]
    assert.equal(record.state, 'skipped')
    assert.equal(record.reason, 'opted_out')
    assert.equal((await conversation(account)).messages.filter((m) => m.ai).length, sentBefore)
  })

  test('replies are rate-limited per contact', async () => {
    const account = await aiAccount({ replies_enabled: true, replies_per_contact_per_hour: 1 })
    ai.answer = () => ({ answer: 'Innerhalb von 30 Tagen.', passages: [1] })
    const phone = nextPhone()
    const before = ai.requests.length
    await inbound(account, phone, 'Wie lange kann ich zurückschicken?')
    await drain()
    await inbound(account, phone, 'Und wie schicke ich zurück?')
    await drain()
    assert.equal(ai.requests.length, before + 1)
    // both at the same test-clock time: told apart by their questions
    const recorded = await replies(account)
    const first = recorded.find((r) => r.question === 'Wie lange kann ich zurückschicken?')
    const second = recorded.find((r) => r.question === 'Und wie schicke ich zurück?')
    assert.equal(first?.state, 'sent')
    assert.equal(second?.state, 'skipped')
    assert.equal(second?.reason, 'rate_limited')
    assert.equal((await conversation(account)).conversation.needs_person, true)
    // an hour later the contact can be answered again
    harness.clock.advance(3600_000)
    await inbound(account, phone, 'Wo finde ich den Rücksendeschein?')
    await drain()
    const [later] = await replies(account)
    assert.equal(later.state, 'sent', later.reason)
  })

  test("AI tags: chosen from the account's existing tags only, stored with origin ki", async () => {
    const account = await aiAccount({ replies_enabled: false, tags_enabled: true })
    const tagged = await account.request({
      method: 'POST',
      url: '/v1/contacts',
      payload: { name: 'A', phone: nextPhone() },
    })
    await account.request({
      method: 'POST',
      url: `/v1/contacts/${tagged.json().contact.id}/tags`,
      payload: { tags: ['retoure', 'versand'] },
    })
    let offered: string[] = []
    ai.tags = (message, tags) => {
      offered = tags
      return /zurückschicken/.test(message) ? ['retoure', 'erfunden'] : []
    }
    const before = ai.requests.length
    await inbound(account, nextPhone(), 'Ich möchte meine Bestellung zurückschicken')
    await drain()
    assert.equal(ai.requests.length, before + 1)
    assert.deepEqual([...offered].sort(), ['retoure', 'versand'])
    const { conversation: item, messages } = await conversation(account)
    assert.equal(messages.length, 1, 'tags only: no reply')
    const contact = await account.request({ method: 'GET', url: `/v1/contacts/${item.contact_id}` })
    assert.deepEqual(contact.json().contact.tags, ['retoure'])
    const counts = await account.request({ method: 'GET', url: '/v1/contacts/tags' })
    const retoure = (counts.json().tags as Json[]).find((t) => t.name === 'retoure')
    // one contact has it manually, the other from the AI: the stronger origin (ki) is shown
    assert.equal(retoure?.origin, 'ki')
  })

  test('a send cut off by a crash is never repeated: the retried job ends it interrupted', async () => {
    const account = await aiAccount()
    ai.answer = () => ({ answer: 'Innerhalb von 30 Tagen.', passages: [1] })
    const contactId = await newContact(account, 'B')
    const real = createAiService(deps(), harness.services)
    let sends = 0
    // the real service, except that the process "dies" inside the provider call (the reply may have gone out)
    const crashing = serviceWith(real, {
      async sendText() {
        sends++
        throw new Error('worker killed during the provider call')
      },
    })
    const job = replyJob(account.accountId, contactId, randomUUID())
    try {
      await assert.rejects(crashing.reply(job), /worker killed/)
      assert.equal((await replies(account))[0].state, 'sending')
      await crashing.reply({ ...job, attempts: 2 })
      assert.equal(sends, 1)
      const [record] = await replies(account)
      assert.equal(record.state, 'interrupted')
      assert.equal(record.reply, 'Innerhalb von 30 Tagen.')
    } finally {
      await real.http.close()
    }
  })

  test('a failed call is logged with the endpoint host, the model and the reason, never the key or the address', async (t) => {
    const account = await aiAccount()
    const contactId = await newContact(account, 'L')
    const real = createAiService(deps(), harness.services)
    t.after(() => real.http.close())
    ai.mode = 'error500'
    t.after(() => {
      ai.mode = 'ok'
    })
    const logged: Json[] = []
    const marked: string[] = []
    const service = serviceWith(real, {
      sendText: async () => assert.fail('nothing is sent'),
      markForPerson: async (_db, _account, conversation, reason) => {
        marked.push(`${conversation}:${reason}`)
      },
      logFailure: (data) => logged.push(data),
    })
    const conversationId = randomUUID()
    await service.reply(replyJob(account.accountId, contactId, conversationId))
    assert.deepEqual(marked, [`${conversationId}:ai_call_failed`])
    assert.deepEqual(logged, [
      {
        account_id: account.accountId,
        job: 'reply',
        endpoint: new URL(ai.url).host,
        model: 'herold-test-model',
        reason: 'the AI endpoint answered 500',
      },
    ])
    assert.ok(!JSON.stringify(logged).includes('sk-test-key'))
  })

  test('settings: off by default and say why; the endpoint host is shown, never the key', async () => {
    const account = await createTestAccount(harness)
    const settings = await account.request({ method: 'GET', url: '/v1/settings/ai' })
    assert.equal(settings.statusCode, 200)
    const body = settings.json() as Json
    assert.equal(body.replies_enabled, false)
    assert.equal(body.tags_enabled, false)
    assert.equal(body.available, true)
    assert.equal(body.active, false)
    assert.match(body.reason, /switched off/)
    assert.equal(body.model, 'herold-test-model')
    assert.equal(body.endpoint, new URL(ai.url).host)
    assert.ok(!settings.body.includes('sk-test-key'))
    const bad = await account.request({
      method: 'PATCH',
      url: '/v1/settings/ai',
      payload: { replies_per_contact_per_hour: 0 },
    })
    assert.equal(bad.statusCode, 400)
    assert.equal(bad.json().error.code, 'bad_request')
    const readOnly = await createTestAccount(harness, { scopes: ['settings:read'] })
    const refused = await readOnly.request({
      method: 'PATCH',
      url: '/v1/settings/ai',
      payload: { replies_enabled: true },
    })
    assert.equal(refused.statusCode, 403)
  })
})

describe('without an AI endpoint', () => {
  let harness: Harness
  let ai: FakeAi

  withAiHarness(
    (made, fake) => {
      harness = made
      ai = fake
    },
    async () => {
      const made = await createHarness({ workers: true })
      await made.jobs!.stop()
      return made
    },
  )

  test('nothing is called, nothing is replied, and the settings say why', async () => {
    const account = await createTestAccount(harness)
    await harness.services.channels.connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    await account.request({
      method: 'POST',
      url: '/v1/knowledge/documents',
      payload: { data_base64: Buffer.from(RETURNS).toString('base64'), filename: 'service.md' },
    })
    const patched = await account.request({
      method: 'PATCH',
      url: '/v1/settings/ai',
      payload: { replies_enabled: true, tags_enabled: true },
    })
    assert.equal(patched.statusCode, 200)
    assert.equal(patched.json().replies_enabled, true)
    assert.equal(patched.json().available, false)
    assert.equal(patched.json().active, false)
    assert.match(patched.json().reason, /HEROLD_AI_URL is not set/)
    assert.equal(patched.json().endpoint, null)
    await account.request({
      method: 'POST',
      url: '/v1/sandbox/inbound',
      payload: { from: nextPhone(), text: 'Wie lange kann ich zurückschicken?' },
    })
    await harness.jobs!.start()
    await harness.jobs!.drain()
    await harness.jobs!.stop()
    assert.equal(ai.requests.length, 0)
    const messages = await account.request({ method: 'GET', url: '/v1/messages?direction=outbound' })
    assert.deepEqual(messages.json().messages, [])
    const recorded = await account.request({ method: 'GET', url: '/v1/knowledge/ai-replies' })
    assert.deepEqual(recorded.json().ai_replies, [])

    // the web app's test question says why, in the envelope
    const { headers } = await signedInMember(harness, {
      accountId: account.accountId,
      email: `ask-none-${process.pid}@example.org`,
      password: 'ask password 1',
      role: 'owner',
    })
    const asked = await harness.app.inject({
      method: 'POST',
      url: '/app/knowledge/ask',
      headers,
      payload: { question: 'Wie lange kann ich zurückschicken?' },
    })
    assert.equal(asked.statusCode, 409, asked.body)
    assert.equal(asked.json().error.code, 'ai_unavailable')
    assert.equal(asked.json().error.key, 'ai_not_configured')
    assert.match(asked.json().error.message, /HEROLD_AI_URL is not set/)
    assert.equal(ai.requests.length, 0)
  })
})

describe('reading the model', () => {
  test('only a grounded JSON answer is an answer; anything else declines', () => {
    assert.deepEqual(parseReplyDecision('```json\n{"answer": "Ja.", "passages": [2, 2, 9]}\n```', 3), {
      kind: 'answer',
      text: 'Ja.',
      used: [2],
    })
    assert.equal(parseReplyDecision('{"answer": "Ja.", "passages": []}', 3).kind, 'decline')
    assert.equal(parseReplyDecision('{"answer": "Ja.", "passages": [4]}', 3).kind, 'decline')
    assert.equal(parseReplyDecision('Sure! Returns take 30 days.', 3).kind, 'decline')
    assert.deepEqual(parseReplyDecision('{"answer": null, "reason": "unknown"}', 3), {
      kind: 'decline',
      reason: 'not_answered',
      detail: 'unknown',
    })
    assert.equal(parseReplyDecision(JSON.stringify({ answer: 'x'.repeat(4001), passages: [1] }), 1).kind, 'decline')
  })

  test('tag suggestions keep only existing names, at most three', () => {
    assert.deepEqual(parseTagSuggestion('{"tags": ["a", "x", "b", "a", "c", "d"]}', ['a', 'b', 'c', 'd']), [
      'a',
      'b',
      'c',
    ])
    assert.deepEqual(parseTagSuggestion('no json', ['a']), [])
  })
})
