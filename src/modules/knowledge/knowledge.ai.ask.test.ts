import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { appMember, nextPhone } from '../../../test/helpers/fixtures.ts'
import { createTestAccount, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import {
  aiAccount,
  drain,
  type FakeAi,
  inbound,
  type Json,
  replies,
  withAiHarness,
} from '../../../test/helpers/knowledge-ai.ts'
import type { Role } from '../../platform/auth/people.tables.ts'
import { sandboxOutboxOf } from '../channels/index.ts'
import { AI_REPLY_QUEUE, AI_TAGS_QUEUE } from './knowledge.ai.ts'

// POST /app/knowledge/ask, the web app's test question, against the fake endpoint.

describe('the built-in AI against an OpenAI-compatible endpoint', () => {
  let harness: Harness
  let ai: FakeAi

  withAiHarness((made, fake) => {
    harness = made
    ai = fake
  })

  /** A signed-in member of the account (session cookie and CSRF token), as the web app calls /app. */
  async function member(account: TestAccount, role: Role) {
    const { call } = await appMember(harness, account, { role })
    return (payload: unknown) => call('POST', '/app/knowledge/ask', payload as Json)
  }

  /** Everything an ask must leave alone: conversations, messages, AI records, the settings' failure, jobs. */
  async function untouched(account: TestAccount) {
    const conversations = await account.request({ method: 'GET', url: '/v1/inbox/conversations' })
    assert.deepEqual(conversations.json().conversations, [])
    const messages = await account.request({ method: 'GET', url: '/v1/messages' })
    assert.deepEqual(messages.json().messages, [])
    assert.deepEqual(await replies(account), [])
    assert.deepEqual(await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat'), [])
    const settings = await account.request({ method: 'GET', url: '/v1/settings/ai' })
    assert.equal(settings.json().last_failure, null)
    const jobs = await harness.database.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM jobs WHERE account_id = $1 AND queue IN ($2, $3)',
      [account.accountId, AI_REPLY_QUEUE, AI_TAGS_QUEUE],
    )
    assert.equal(Number(jobs[0].n), 0)
  }

  test('ask: the prompt is exactly the one an inbound message gets; the answer and its passages come back, nothing is sent', async () => {
    const question = 'Wie lange kann ich meine Bestellung zurückschicken?'
    ai.answer = (q, passages) =>
      /zurückschicken/.test(q) && /30 Tagen/.test(passages)
        ? { answer: 'Innerhalb von 30 Tagen, kostenlos.', passages: [1] }
        : { answer: null, reason: 'not covered' }
    // the same question arriving as a chat message, answered by the reply job
    const replied = await aiAccount()
    await inbound(replied, nextPhone(), question)
    await drain()
    const jobPrompt = ai.requests.at(-1)!.body
    assert.equal((await replies(replied))[0].state, 'sent')

    // an account with the same document and AI replies switched off: the test still asks the model
    const account = await aiAccount({ replies_enabled: false })
    await harness.database.query('UPDATE accounts SET name = (SELECT name FROM accounts WHERE id = $1) WHERE id = $2', [
      replied.accountId,
      account.accountId,
    ])
    const ask = await member(account, 'member')
    const before = ai.requests.length
    const asked = await ask({ question: `  ${question}  ` })
    assert.equal(asked.status, 200, JSON.stringify(asked.body))
    assert.equal(ai.requests.length, before + 1, 'one call to the model')
    assert.deepEqual(ai.requests.at(-1)!.body, jobPrompt, 'the same model, temperature and messages as the reply job')
    assert.equal(asked.body.outcome, 'answer')
    assert.equal(asked.body.answer, 'Innerhalb von 30 Tagen, kostenlos.')
    assert.equal(asked.body.reason, null)
    assert.equal(asked.body.model, 'herold-test-model')
    assert.ok(asked.body.passages.length >= 1)
    assert.equal(asked.body.passages[0].document_title, 'service')
    assert.equal(asked.body.passages[0].heading, 'Rücksendungen')
    assert.match(asked.body.passages[0].text, /innerhalb von 30 Tagen/)
    assert.equal(asked.body.passages[0].used, true)
    assert.ok(asked.body.passages.slice(1).every((p: Json) => p.used === false))
    await untouched(account)
  })

  test('ask: a decline of the model and a question no passage touches (no model asked) are answers, not errors', async () => {
    const account = await aiAccount()
    const ask = await member(account, 'admin')
    ai.answer = () => ({ answer: null, reason: 'the passages say nothing about prices' })
    const declined = await ask({ question: 'Was kostet die Rücksendung per Rechnung?' })
    assert.equal(declined.status, 200, JSON.stringify(declined.body))
    assert.equal(declined.body.outcome, 'declined')
    assert.equal(declined.body.answer, null)
    assert.equal(declined.body.reason, 'not_answered')
    assert.equal(declined.body.detail, 'the passages say nothing about prices')
    assert.ok(declined.body.passages.every((p: Json) => p.used === false))

    const before = ai.requests.length
    const nothing = await ask({ question: 'Xylophon Quarkstrudel?' })
    assert.equal(nothing.status, 200)
    assert.deepEqual(
      [nothing.body.outcome, nothing.body.reason, nothing.body.passages],
      ['declined', 'no_passages', []],
    )
    assert.equal(ai.requests.length, before, 'no model is asked without passages')
    // another account's documents are never the source
    const stranger = await member(await createTestAccount(harness), 'owner')
    const foreign = await stranger({ question: 'Wie lange kann ich meine Bestellung zurückschicken?' })
    assert.equal(foreign.status, 200)
    assert.equal(foreign.body.reason, 'no_passages')
    assert.equal(ai.requests.length, before)
    await untouched(account)
  })

  for (const [mode, key, message] of [
    ['error500', 'ai_status', /the AI endpoint answered 500/],
    ['hang', 'ai_timeout', /did not answer in time/],
    ['garbage', 'ai_not_json', /did not answer with JSON/],
  ] as const) {
    test(`ask: a failed model call (${mode}) is a 502 ai_call_failed with key ${key}, recorded nowhere`, async (t) => {
      const account = await aiAccount({ replies_enabled: true })
      const ask = await member(account, 'member')
      ai.mode = mode
      t.after(() => {
        ai.mode = 'ok'
      })
      const failed = await ask({ question: 'Kann ich meine Bestellung zurückschicken?' })
      assert.equal(failed.status, 502, JSON.stringify(failed.body))
      assert.equal(failed.body.error.code, 'ai_call_failed')
      assert.equal(failed.body.error.key, key)
      assert.match(failed.body.error.message, message)
      assert.ok(!JSON.stringify(failed.body).includes('sk-test-key'))
      await untouched(account)
    })
  }

  test('ask: the viewer may not, bad input is a 400 envelope, no session is a 401', async () => {
    const account = await aiAccount()
    const viewer = await member(account, 'viewer')
    const refused = await viewer({ question: 'Kann ich zurückschicken?' })
    assert.equal(refused.status, 403)
    assert.equal(refused.body.error.code, 'forbidden')
    const ask = await member(account, 'member')
    for (const payload of [{}, { question: '' }, { question: '   ' }, { question: 'x'.repeat(2001) }, { q: 'x' }]) {
      const bad = await ask(payload)
      assert.equal(bad.status, 400, JSON.stringify(payload))
      assert.equal(bad.body.error.code, 'bad_request')
      assert.equal(typeof bad.body.error.message, 'string')
    }
    const anonymous = await harness.app.inject({
      method: 'POST',
      url: '/app/knowledge/ask',
      payload: { question: 'Kann ich zurückschicken?' },
    })
    assert.equal(anonymous.statusCode, 401)
    assert.equal(anonymous.json().error.code, 'unauthorized')
  })
})
