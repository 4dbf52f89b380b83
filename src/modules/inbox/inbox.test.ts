import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import fc from 'fast-check'
import { sandboxInbound } from '../../../test/helpers/fixtures.ts'
import {
  createHarness,
  createTestAccount,
  type Harness,
  json,
  type TestAccount,
} from '../../../test/helpers/harness.ts'
import { previewOf, statusAdvances } from './inbox.service.ts'

let harness: Harness
let dataDir: string

before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'herold-inbox-'))
  harness = await createHarness({ config: { allowPrivateTargets: true, dataDir }, workers: true })
})
after(async () => {
  await harness.close()
  rmSync(dataDir, { recursive: true, force: true })
})

const channels = () => harness.services.channels

async function sandboxAccount(): Promise<TestAccount> {
  const account = await createTestAccount(harness)
  await channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
  return account
}

const inbound = sandboxInbound

interface Msg {
  id: string
  conversation_id: string
  contact_id: string
  text: string
  type: string
  direction: string
  created_at: string
  media_url: string
  media_mime: string
  automated: boolean
  ai: boolean
}

describe('inbound messages', () => {
  test('an inbound text creates the contact (opt-in none, source inbound), the conversation and the message', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: '+49 151 2345678', name: 'Erika', text: 'Hallo' })
    const list = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages' }))
    assert.equal(list.messages.length, 1)
    const [message] = list.messages
    assert.equal(message.text, 'Hallo')
    assert.equal(message.type, 'text')
    assert.equal(message.direction, 'inbound')
    const contact = json<{ contact: Record<string, unknown> }>(
      await account.request({ method: 'GET', url: `/v1/contacts/${message.contact_id}` }),
    ).contact
    assert.equal(contact.phone, '+491512345678')
    assert.equal(contact.name, 'Erika')
    assert.equal(contact.optin_chat, 'none')
    assert.equal(contact.optin_email, 'none')
    assert.equal(contact.source, 'inbound')
  })

  test('a second message of the same customer joins the same conversation and contact', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: '+491511111111', text: 'one' })
    await inbound(account, { from: '+491511111111', text: 'two' })
    const list = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages' }))
    assert.equal(list.messages.length, 2)
    assert.equal(list.messages[0].conversation_id, list.messages[1].conversation_id)
    assert.equal(list.messages[0].contact_id, list.messages[1].contact_id)
    const conversations = json<{ conversations: unknown[] }>(
      await account.request({ method: 'GET', url: '/v1/inbox/conversations' }),
    )
    assert.equal(conversations.conversations.length, 1)
  })

  test('button, location and image messages are stored with their type; media is served from our storage', async () => {
    const account = await sandboxAccount()
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')
    await inbound(account, { from: '+491512222222', button: 'Ja, gerne' })
    await inbound(account, { from: '+491512222222', location: { latitude: 52.52, longitude: 13.405, name: 'Berlin' } })
    await inbound(account, {
      from: '+491512222222',
      text: 'Foto',
      media: { data_base64: png.toString('base64'), mime: 'image/png', filename: 'a.png' },
    })
    await inbound(account, {
      from: '+491512222222',
      media: { data_base64: Buffer.from('%PDF-1.4').toString('base64'), mime: 'application/pdf' },
    })
    const list = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages' }))
    assert.deepEqual(
      list.messages.map((m) => m.type),
      ['document', 'image', 'location', 'button'],
    )
    assert.equal(list.messages[3].text, 'Ja, gerne')
    assert.match(list.messages[2].text, /Berlin \(52\.52, 13\.405\)/)
    const image = list.messages[1]
    assert.equal(image.media_mime, 'image/png')
    assert.ok(image.media_url.startsWith('http://herold.test/public/media/'), image.media_url)
    const served = await harness.app.inject({ method: 'GET', url: new URL(image.media_url).pathname })
    assert.equal(served.statusCode, 200)
    assert.equal(served.headers['content-type'], 'image/png')
    assert.deepEqual(served.rawPayload, png)
  })

  test('the sandbox endpoint exists only while the sandbox is the chat provider', async () => {
    const account = await createTestAccount(harness)
    const before = await account.request({
      method: 'POST',
      url: '/v1/sandbox/inbound',
      payload: { from: '+491514444444', text: 'x' },
    })
    assert.equal(before.statusCode, 404)
    assert.equal(json<{ error: { code: string } }>(before).error.code, 'not_found')
    await channels().connect(account.accountId, { channel: 'chat', provider: 'sandbox' })
    await inbound(account, { from: '+491514444444', text: 'x' })
    await channels().disconnect(account.accountId, 'chat')
    const afterDisconnect = await account.request({
      method: 'POST',
      url: '/v1/sandbox/inbound',
      payload: { from: '+491514444444', text: 'x' },
    })
    assert.equal(afterDisconnect.statusCode, 404)
  })
})

describe('GET /inbox/conversations', () => {
  test('sort=last_message_at: newest activity first, with contact, preview, automated_only and unread count; channel filter', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: '+491515000001', name: 'A', text: 'first' })
    harness.clock.advance(1000)
    await inbound(account, { from: '+491515000002', name: 'B', text: 'second' })
    harness.clock.advance(1000)
    await inbound(account, { from: '+491515000001', name: 'A', text: 'third' })
    const page = json<{
      conversations: Array<{
        contact: { name: string }
        channel: string
        last_message: { preview: string }
        automated_only: boolean
        unread_count: number
      }>
      has_more: boolean
      next_offset: number | null
    }>(await account.request({ method: 'GET', url: '/v1/inbox/conversations?limit=1&sort=last_message_at' }))
    assert.equal(page.conversations.length, 1)
    assert.equal(page.has_more, true)
    assert.equal(page.next_offset, 1)
    const [top] = page.conversations
    assert.equal(top.contact.name, 'A')
    assert.equal(top.channel, 'chat')
    assert.equal(top.last_message.preview, 'third')
    assert.equal(top.automated_only, false)
    assert.equal(top.unread_count, 2)
    const email = json<{ conversations: unknown[] }>(
      await account.request({ method: 'GET', url: '/v1/inbox/conversations?channel=email' }),
    )
    assert.equal(email.conversations.length, 0)
  })

  test('limit above 100 is refused with 400', async () => {
    const account = await createTestAccount(harness)
    const response = await account.request({ method: 'GET', url: '/v1/inbox/conversations?limit=101' })
    assert.equal(response.statusCode, 400)
    assert.equal(json<{ error: { code: string } }>(response).error.code, 'bad_request')
  })

  /** Three conversations created A, B, C a second apart; then A's customer writes again (the latest activity). */
  async function threeConversations(account: TestAccount) {
    for (const [from, name] of [
      ['+491515100001', 'A'],
      ['+491515100002', 'B'],
      ['+491515100003', 'C'],
    ]) {
      await inbound(account, { from, name, text: `hallo von ${name}` })
      harness.clock.advance(1000)
    }
    await inbound(account, { from: '+491515100001', name: 'A', text: 'noch was' })
  }

  type ConversationList = {
    conversations: Array<{ id: string; contact: { name: string }; created_at: string; last_message_at: string }>
    offset: number
    has_more: boolean
    next_offset: number | null
  }

  /** Every page of the list with `limit`, following next_offset: the names in order. */
  async function walk(account: TestAccount, query: string, limit: number): Promise<string[]> {
    const names: string[] = []
    let offset: number | null = 0
    while (offset !== null) {
      const page: ConversationList = json<ConversationList>(
        await account.request({
          method: 'GET',
          url: `/v1/inbox/conversations?limit=${limit}&offset=${offset}${query}`,
        }),
      )
      names.push(...page.conversations.map((c) => c.contact.name))
      offset = page.next_offset
    }
    return names
  }

  test('the default order is the spec’s: newest created first (created_at descending, then id), paged by offset', async () => {
    const account = await sandboxAccount()
    await threeConversations(account)
    const page = json<ConversationList>(await account.request({ method: 'GET', url: '/v1/inbox/conversations' }))
    assert.deepEqual(
      page.conversations.map((c) => c.contact.name),
      ['C', 'B', 'A'],
      'not by activity: A wrote last',
    )
    const created = page.conversations.map((c) => c.created_at)
    assert.deepEqual(created, [...created].sort().reverse())
    const explicit = json<ConversationList>(
      await account.request({ method: 'GET', url: '/v1/inbox/conversations?sort=created_at' }),
    )
    assert.deepEqual(explicit.conversations, page.conversations)
    assert.deepEqual(await walk(account, '', 1), ['C', 'B', 'A'])
    assert.deepEqual(await walk(account, '', 2), ['C', 'B', 'A'])
  })

  test('sort=last_message_at orders by the latest activity, then id, and pages the same way', async () => {
    const account = await sandboxAccount()
    await threeConversations(account)
    assert.deepEqual(await walk(account, '&sort=last_message_at', 1), ['A', 'C', 'B'])
    assert.deepEqual(await walk(account, '&sort=last_message_at', 2), ['A', 'C', 'B'])
    const bad = await account.request({ method: 'GET', url: '/v1/inbox/conversations?sort=name' })
    assert.equal(bad.statusCode, 400, bad.body)
    assert.equal(json<{ error: { code: string } }>(bad).error.code, 'bad_request')
  })

  test('ties on the time are ordered by id, descending', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: '+491515200001', name: 'X', text: 'eins' })
    await inbound(account, { from: '+491515200002', name: 'Y', text: 'zwei' })
    await harness.database.query(
      'UPDATE conversations SET created_at = $2, last_message_at = $2 WHERE account_id = $1',
      [account.accountId, harness.clock.now().toISOString()],
    )
    for (const sort of ['created_at', 'last_message_at']) {
      const page = json<ConversationList>(
        await account.request({ method: 'GET', url: `/v1/inbox/conversations?sort=${sort}` }),
      )
      const ids = page.conversations.map((c) => c.id)
      assert.equal(ids.length, 2)
      assert.deepEqual(ids, [...ids].sort().reverse(), sort)
    }
  })

  test('an offset beyond 100,000 (the spec gives only a minimum) is a valid empty page, for both lists', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: '+491515300001', text: 'hallo' })
    const [message] = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages' })).messages
    for (const offset of ['100001', '5000000000', '9007199254740993', '1e21']) {
      for (const url of [
        `/v1/inbox/conversations?offset=${offset}`,
        `/v1/inbox/conversations?offset=${offset}&sort=last_message_at`,
        `/v1/inbox/conversations/${message.conversation_id}/messages?offset=${offset}`,
      ]) {
        const response = await account.request({ method: 'GET', url })
        assert.equal(response.statusCode, 200, `${url}: ${response.body}`)
        const page = response.json() as { conversations?: unknown[]; messages?: unknown[]; has_more: boolean }
        assert.deepEqual(page.conversations ?? page.messages, [], url)
        assert.equal(page.has_more, false, url)
      }
    }
    const negative = await account.request({ method: 'GET', url: '/v1/inbox/conversations?offset=-1' })
    assert.equal(negative.statusCode, 400, negative.body)
  })
})

describe('GET /inbox/conversations/{id}/messages', () => {
  test('the newest limit messages, oldest first within the page; offset pages backwards', async () => {
    const account = await sandboxAccount()
    for (let i = 1; i <= 5; i++) {
      await inbound(account, { from: '+491516000000', text: `m${i}` })
      harness.clock.advance(10)
    }
    const [any] = json<{ messages: Msg[] }>(
      await account.request({ method: 'GET', url: '/v1/messages?limit=1' }),
    ).messages
    const url = `/v1/inbox/conversations/${any.conversation_id}/messages`
    const first = json<{ messages: Msg[]; has_more: boolean; next_offset: number }>(
      await account.request({ method: 'GET', url: `${url}?limit=2` }),
    )
    assert.deepEqual(
      first.messages.map((m) => m.text),
      ['m4', 'm5'],
    )
    assert.equal(first.messages[0].automated, false)
    assert.equal(first.messages[0].ai, false)
    assert.equal(first.has_more, true)
    const second = json<{ messages: Msg[] }>(
      await account.request({ method: 'GET', url: `${url}?limit=2&offset=${first.next_offset}` }),
    )
    assert.deepEqual(
      second.messages.map((m) => m.text),
      ['m2', 'm3'],
    )
    const last = json<{ messages: Msg[]; has_more: boolean; next_offset: null }>(
      await account.request({ method: 'GET', url: `${url}?limit=2&offset=4` }),
    )
    assert.deepEqual(
      last.messages.map((m) => m.text),
      ['m1'],
    )
    assert.equal(last.has_more, false)
    assert.equal(last.next_offset, null)
  })

  test("another account's conversation gives 404", async () => {
    const owner = await sandboxAccount()
    await inbound(owner, { from: '+491517000000', text: 'private' })
    const [message] = json<{ messages: Msg[] }>(await owner.request({ method: 'GET', url: '/v1/messages' })).messages
    const stranger = await createTestAccount(harness)
    const response = await stranger.request({
      method: 'GET',
      url: `/v1/inbox/conversations/${message.conversation_id}/messages`,
    })
    assert.equal(response.statusCode, 404)
    assert.equal(json<{ error: { code: string } }>(response).error.code, 'not_found')
    const foreignFilter = json<{ messages: Msg[] }>(
      await stranger.request({ method: 'GET', url: `/v1/messages?conversation_id=${message.conversation_id}` }),
    )
    assert.equal(foreignFilter.messages.length, 0)
  })

  test('inbox:read is required', async () => {
    const account = await createTestAccount(harness, { scopes: ['contacts:read'] })
    for (const url of [
      '/v1/inbox/conversations',
      `/v1/inbox/conversations/${crypto.randomUUID()}/messages`,
      '/v1/messages',
    ]) {
      const response = await account.request({ method: 'GET', url })
      assert.equal(response.statusCode, 403, url)
      assert.equal(json<{ error: { key: string } }>(response).error.key, 'apikey_scope_fehlt')
    }
  })
})

describe('GET /messages', () => {
  test('direction defaults to inbound; in and out are aliases', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: '+491518000000', text: 'hi' })
    const [message] = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages' })).messages
    const sent = await channels().sendText(account.accountId, {
      contactId: message.contact_id,
      to: '+491518000000',
      text: 'answer',
    })
    assert.equal(sent.ok, true)
    const inList = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages?direction=in' }))
    const outList = json<{ messages: Msg[] }>(
      await account.request({ method: 'GET', url: '/v1/messages?direction=out' }),
    )
    const outbound = json<{ messages: Msg[] }>(
      await account.request({ method: 'GET', url: '/v1/messages?direction=outbound' }),
    )
    assert.deepEqual(
      inList.messages.map((m) => m.text),
      ['hi'],
    )
    assert.deepEqual(
      outList.messages.map((m) => m.text),
      ['answer'],
    )
    assert.deepEqual(outbound.messages, outList.messages)
    const bad = await account.request({ method: 'GET', url: '/v1/messages?direction=sideways' })
    assert.equal(bad.statusCode, 400)
  })

  test('created_after is strictly after; newest first by created_at then id', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: '+491519000000', text: 'a' })
    await inbound(account, { from: '+491519000000', text: 'b' })
    const all = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages' })).messages
    assert.deepEqual(
      all.map((m) => m.text),
      ['b', 'a'],
    )
    const after = json<{ messages: Msg[] }>(
      await account.request({
        method: 'GET',
        url: `/v1/messages?created_after=${encodeURIComponent(all[1].created_at)}`,
      }),
    ).messages
    assert.deepEqual(
      after.map((m) => m.text),
      ['b'],
    )
  })

  test('a poller using created_after = newest seen time never misses a message written in the same millisecond', async () => {
    const account = await sandboxAccount()
    // the clock stands still: every message is written "in the same millisecond"
    const seen = new Set<string>()
    let cursor: string | null = null
    const writes: Promise<unknown>[] = []
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 5; i++)
        writes.push(inbound(account, { from: `+4915200000${round}${i}`, text: `${round}.${i}` }))
      const query: string = cursor ? `&created_after=${encodeURIComponent(cursor)}` : ''
      const page: Msg[] = json<{ messages: Msg[] }>(
        await account.request({ method: 'GET', url: `/v1/messages?limit=100${query}` }),
      ).messages
      for (const m of page) seen.add(m.id)
      if (page.length > 0) cursor = page[0].created_at
    }
    await Promise.all(writes)
    const rest = json<{ messages: Msg[] }>(
      await account.request({
        method: 'GET',
        url: `/v1/messages?limit=100${cursor ? `&created_after=${encodeURIComponent(cursor)}` : ''}`,
      }),
    ).messages
    for (const m of rest) seen.add(m.id)
    const everything = json<{ messages: Msg[] }>(
      await account.request({ method: 'GET', url: '/v1/messages?limit=100' }),
    ).messages
    assert.equal(everything.length, 20)
    assert.equal(seen.size, 20)
    assert.equal(new Set(everything.map((m) => m.created_at)).size, 20, 'created_at values are distinct')
  })

  test('messages arriving together are stored once each, in arrival order per sender, with their events', async () => {
    const account = await sandboxAccount()
    const inbox = harness.services.inbox
    // 8 new senders, 3 messages each, all at once (one transaction runs while the rest wait and go together), and
    // 4 copies of messages already sent (a provider's retry)
    const sends = Array.from({ length: 24 }, (_, i) => ({
      id: `wamid.batch.${i}`,
      sender: i % 8,
      n: Math.floor(i / 8),
    }))
    const copies = [0, 5, 13, 22].map((i) => sends[i])
    const results = await Promise.all(
      [...sends, ...copies].map((s) =>
        inbox.receive(account.accountId, 'en', {
          channel: 'chat',
          providerMessageId: s.id,
          from: `+49152300000${s.sender}`,
          name: `Sender ${s.sender}`,
          type: 'text',
          text: `${s.sender}.${s.n}`,
          media: null,
        }),
      ),
    )
    assert.equal(results.filter((r) => r !== null).length, 24, 'every copy is a duplicate')
    assert.deepEqual(results.slice(24), [null, null, null, null])
    const rows = await harness.database.query<{ id: string; text: string; contact_id: string; created_at: Date }>(
      'SELECT id, text, contact_id, created_at FROM messages WHERE account_id = $1 ORDER BY created_at',
      [account.accountId],
    )
    assert.equal(rows.length, 24)
    assert.equal(new Set(rows.map((r) => new Date(r.created_at).getTime())).size, 24, 'created_at values are distinct')
    for (let sender = 0; sender < 8; sender++) {
      const own = rows.filter((r) => r.text.startsWith(`${sender}.`)).map((r) => r.text)
      assert.deepEqual(own, [`${sender}.0`, `${sender}.1`, `${sender}.2`], "a sender's messages keep their order")
      assert.equal(new Set(rows.filter((r) => r.text.startsWith(`${sender}.`)).map((r) => r.contact_id)).size, 1)
    }
    const events = await harness.database.query<{ name: string; data: Record<string, unknown> | string }>(
      'SELECT name, data FROM events WHERE account_id = $1',
      [account.accountId],
    )
    const count = (name: string) => events.filter((e) => e.name === name).length
    assert.equal(count('contact.created'), 8)
    assert.equal(count('conversation.created'), 8)
    assert.equal(count('message.received'), 24)
    const byId = new Map(rows.map((r) => [r.id, r]))
    for (const event of events.filter((e) => e.name === 'message.received')) {
      const data = (typeof event.data === 'string' ? JSON.parse(event.data) : event.data) as Record<string, string>
      const row = byId.get(data.id)
      assert.ok(row, 'the event names a stored message')
      assert.equal(data.created_at, new Date(row.created_at).toISOString())
      assert.equal(data.text, row.text)
    }
    const conversations = await harness.database.query<{ unread_count: number; last_message_preview: string }>(
      'SELECT unread_count, last_message_preview FROM conversations WHERE account_id = $1',
      [account.accountId],
    )
    assert.equal(conversations.length, 8)
    for (const c of conversations) {
      assert.equal(c.unread_count, 3)
      assert.match(c.last_message_preview, /^\d\.2$/)
    }
  })

  test('waves arriving while a batch runs (on PostgreSQL the next batch overlaps its commit) keep every rule', async () => {
    const account = await sandboxAccount()
    const inbox = harness.services.inbox
    const receive = (id: string, sender: number, text: string) =>
      inbox.receive(account.accountId, 'en', {
        channel: 'chat',
        providerMessageId: id,
        from: `+49152310000${sender}`,
        name: `Sender ${sender}`,
        type: 'text',
        text,
        media: null,
      })
    // 6 waves of 10 messages from 5 senders, a few ms apart; each wave also carries a copy of a message of the wave
    // before it (which may still be committing in the batch ahead)
    const pending: Array<{ id: string; result: Promise<unknown> }> = []
    for (let wave = 0; wave < 6; wave++) {
      for (let i = 0; i < 10; i++) {
        const id = `wamid.wave.${wave}.${i}`
        pending.push({ id, result: receive(id, i % 5, `${i % 5}.${wave}.${Math.floor(i / 5)}`) })
      }
      if (wave > 0) {
        const id = `wamid.wave.${wave - 1}.${wave}`
        pending.push({ id, result: receive(id, wave % 5, `${wave % 5}.${wave - 1}.${Math.floor(wave / 5)}`) })
      }
      await new Promise((resolve) => setTimeout(resolve, 3))
    }
    const results = await Promise.all(pending.map((p) => p.result))
    const storedPerId = new Map<string, number>()
    for (const [at, p] of pending.entries()) storedPerId.set(p.id, (storedPerId.get(p.id) ?? 0) + (results[at] ? 1 : 0))
    assert.equal(storedPerId.size, 60)
    for (const [id, n] of storedPerId) assert.equal(n, 1, `${id} is stored once, its copy answers null`)
    const rows = await harness.database.query<{ id: string; text: string; created_at: Date }>(
      'SELECT id, text, created_at FROM messages WHERE account_id = $1 ORDER BY created_at',
      [account.accountId],
    )
    assert.equal(rows.length, 60)
    assert.equal(new Set(rows.map((r) => new Date(r.created_at).getTime())).size, 60, 'created_at values are distinct')
    for (let sender = 0; sender < 5; sender++) {
      const own = rows.filter((r) => r.text.startsWith(`${sender}.`)).map((r) => r.text)
      const arrival = Array.from({ length: 6 }, (_, wave) => [`${sender}.${wave}.0`, `${sender}.${wave}.1`]).flat()
      assert.deepEqual(own, arrival, "a sender's messages keep their order across waves")
    }
    const [events] = await harness.database.query<{ n: string }>(
      "SELECT count(*) AS n FROM events WHERE account_id = $1 AND name = 'message.received'",
      [account.accountId],
    )
    assert.equal(Number(events.n), 60)
  })

  test('offset above 100000 is refused', async () => {
    const account = await createTestAccount(harness)
    const response = await account.request({ method: 'GET', url: '/v1/messages?offset=100001' })
    assert.equal(response.statusCode, 400)
  })
})

describe('contact deletion', () => {
  test('DELETE /contacts/{id} removes conversations and messages and counts them in removed', async () => {
    const account = await sandboxAccount()
    await inbound(account, { from: '+491520000000', text: 'x' })
    await inbound(account, {
      from: '+491520000000',
      media: { data_base64: Buffer.from('GIF89a').toString('base64'), mime: 'image/gif' },
    })
    const [message] = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages' })).messages
    const mediaPath = new URL(message.media_url).pathname
    assert.equal((await harness.app.inject({ method: 'GET', url: mediaPath })).statusCode, 200)
    const response = await account.request({ method: 'DELETE', url: `/v1/contacts/${message.contact_id}` })
    assert.equal(response.statusCode, 200, response.body)
    const removed = json<{ removed: Record<string, number> }>(response).removed
    assert.equal(removed.messages, 2)
    assert.equal(removed.conversations, 1)
    const list = json<{ messages: Msg[] }>(await account.request({ method: 'GET', url: '/v1/messages' }))
    assert.equal(list.messages.length, 0)
    // On a shared PostgreSQL test database another test process's worker (with another data directory) may
    // claim the deletion job; in production every worker shares one storage. PGlite is private to this harness.
    if (!process.env.HEROLD_TEST_DATABASE_URL) {
      await harness.jobs?.drain()
      const gone = await harness.app.inject({ method: 'GET', url: mediaPath })
      assert.equal(gone.statusCode, 404, 'the media file is gone')
    }
  })
})

describe('rules', () => {
  test('a status never moves backwards, whatever order updates arrive in', () => {
    type Status = 'sent' | 'delivered' | 'read' | 'failed'
    const rank: Record<Status, number> = { sent: 1, delivered: 2, read: 3, failed: 3 }
    const statuses: Status[] = ['sent', 'delivered', 'read', 'failed']
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...statuses)), (updates) => {
        let status: Status | null = null
        for (const next of updates) {
          const previous: Status | null = status
          if (statusAdvances(status, next)) status = next
          if (previous === 'read' || previous === 'failed') assert.equal(status, previous)
          if (previous !== null && status !== null) assert.ok(rank[status] >= rank[previous])
        }
      }),
    )
  })

  test('the preview is the text cut to 120 characters, or the type in brackets', () => {
    assert.equal(previewOf('image', ''), '[image]')
    assert.equal(previewOf('text', 'a  b\nc'), 'a b c')
    assert.equal(previewOf('text', 'x'.repeat(200)).length, 120)
  })
})
