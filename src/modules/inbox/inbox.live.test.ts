import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { listenOnLoopback, sandboxAccount, signedInMember } from '../../../test/helpers/fixtures.ts'
import { createHarness, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'

// GET /app/events on a real server on loopback (Server-Sent Events read as a browser's EventSource reads them): each
// account's streams hear only their own account's inbox changes, Last-Event-ID replays what a stream missed, an
// unknown id asks for a resync, and streams close at sign-out and shutdown. On PGlite and on PostgreSQL
// (HEROLD_TEST_DATABASE_URL).

let harness: Harness
let base: string
before(async () => {
  harness = await createHarness()
  base = await listenOnLoopback(harness)
})
let closed = false
after(async () => {
  // the last test closes it
  if (!closed) await harness.close()
})

// biome-ignore lint/suspicious/noExplicitAny: event data are read loosely in tests
type Json = Record<string, any>
interface Event {
  id?: string
  event: string
  data: Json
}

let counter = 0
const unique = () => `${process.pid}-${Date.now()}-${++counter}`

/** An open stream: its status, and its events as they arrive. */
interface Stream {
  status: number
  body: Json | null
  /** the next event (skipping those `skip` names), or fails after `ms` */
  next(options?: { skip?: string[]; ms?: number }): Promise<Event>
  /** nothing but `skip`'s events for `ms` */
  nothingFor(ms: number, skip?: string[]): Promise<void>
  /** whether the server ended the stream */
  ended(): boolean
  close(): void
}

async function open(cookie: string | null, lastEventId?: string): Promise<Stream> {
  const controller = new AbortController()
  const headers: Record<string, string> = { accept: 'text/event-stream' }
  if (cookie) headers.cookie = cookie
  if (lastEventId) headers['last-event-id'] = lastEventId
  const response = await fetch(`${base}/app/events`, { headers, signal: controller.signal })
  if (response.status !== 200) {
    return {
      status: response.status,
      body: (await response.json()) as Json,
      next: () => Promise.reject(new Error('not open')),
      nothingFor: () => Promise.resolve(),
      ended: () => true,
      close: () => {},
    }
  }
  assert.match(response.headers.get('content-type') ?? '', /^text\/event-stream/)
  const queue: Event[] = []
  const waiter: { wake: (() => void) | null } = { wake: null }
  let done = false
  void (async () => {
    const decoder = new TextDecoder()
    let text = ''
    try {
      for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true })
        let end = text.indexOf('\n\n')
        while (end >= 0) {
          const block = text.slice(0, end)
          text = text.slice(end + 2)
          const event: Event = { event: 'message', data: {} }
          let data: string | null = null
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) event.id = line.slice(4)
            else if (line.startsWith('event: ')) event.event = line.slice(7)
            else if (line.startsWith('data: ')) data = line.slice(6)
          }
          if (data !== null) {
            event.data = JSON.parse(data)
            queue.push(event)
          }
          end = text.indexOf('\n\n')
        }
        waiter.wake?.()
      }
    } catch {
      // aborted
    }
    done = true
    waiter.wake?.()
  })()
  const next = async ({ skip = ['ready'], ms = 5000 }: { skip?: string[]; ms?: number } = {}): Promise<Event> => {
    const until = Date.now() + ms
    for (;;) {
      while (queue.length > 0) {
        const event = queue.shift()!
        if (!skip.includes(event.event)) return event
      }
      if (done) throw new Error('the stream ended')
      const left = until - Date.now()
      if (left <= 0) throw new Error(`no event within ${ms} ms`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        waiter.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      waiter.wake = null
    }
  }
  return {
    status: 200,
    body: null,
    next,
    async nothingFor(ms, skip = ['ready']) {
      await assert.rejects(next({ skip, ms }), /no event within|the stream ended/)
    },
    ended: () => done,
    close: () => controller.abort(),
  }
}

async function member(account: TestAccount, role: 'owner' | 'viewer' = 'owner') {
  return signedInMember(harness, {
    accountId: account.accountId,
    email: `live-${unique()}@example.org`,
    password: 'live password 12',
    role,
  })
}

/** A customer's message through the sandbox; the stored message's id and conversation. */
async function inbound(account: TestAccount, from: string, text: string) {
  const answer = await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from, text } })
  assert.equal(answer.statusCode, 200, answer.body)
  const [row] = await harness.database.query<{ id: string; conversation_id: string }>(
    "SELECT id, conversation_id FROM messages WHERE account_id = $1 AND direction = 'inbound' AND text = $2",
    [account.accountId, text],
  )
  return { message_id: row.id, conversation_id: row.conversation_id }
}

describe('GET /app/events', () => {
  test('without a session it is 401 in the envelope; an API key is no session', async () => {
    const anonymous = await open(null)
    assert.equal(anonymous.status, 401)
    assert.equal(anonymous.body?.error.code, 'unauthorized')
    const account = await sandboxAccount(harness)
    const response = await fetch(`${base}/app/events`, { headers: { authorization: `Bearer ${account.key}` } })
    assert.equal(response.status, 401)
    assert.equal(((await response.json()) as Json).error.code, 'unauthorized')
    // strict input: an unknown query parameter is refused by name, before any stream opens
    const { headers } = await member(account)
    const unknown = await harness.app.inject({ method: 'GET', url: '/app/events?zz_unknown=1', headers })
    assert.equal(unknown.statusCode, 400, unknown.body)
    assert.deepEqual(unknown.json().error.unknown_fields, ['zz_unknown'])
  })

  test('each account’s streams hear their own account’s inbox changes and nothing of another’s', async () => {
    const a = await sandboxAccount(harness)
    const b = await sandboxAccount(harness)
    const [memberA, viewerA, memberB] = [await member(a), await member(a, 'viewer'), await member(b)]
    const streamA = await open(memberA.cookie)
    const viewerStream = await open(viewerA.cookie)
    const streamB = await open(memberB.cookie)
    assert.deepEqual((await streamA.next({ skip: [] })).data, { resumed: false })

    const fromA = await inbound(a, '+4915111110001', 'Hallo A')
    const conversationA = fromA.conversation_id
    for (const stream of [streamA, viewerStream]) {
      const event = await stream.next()
      assert.equal(event.event, 'inbox')
      assert.ok(event.id && event.id.length >= 8, 'an event carries an id')
      assert.deepEqual(event.data, {
        changes: [{ type: 'message', conversation_id: conversationA, message_id: fromA.message_id }],
      })
    }
    // B's stream hears B's message first and nothing of A's
    const fromB = await inbound(b, '+4915111110002', 'Hallo B')
    const eventB = await streamB.next()
    assert.equal(eventB.data.changes[0].message_id, fromB.message_id)
    await streamB.nothingFor(300)
    await streamA.nothingFor(300)

    // a member's assignment, status change and reading, with who did it
    const put = await fetch(`${base}/app/conversations/${conversationA}/assignee`, {
      method: 'PUT',
      headers: { ...memberA.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ member_id: memberA.id }),
    })
    assert.equal(put.status, 200)
    for (const path of ['close', 'read']) {
      const response = await fetch(`${base}/app/conversations/${conversationA}/${path}`, {
        method: 'POST',
        headers: memberA.headers,
      })
      assert.equal(response.status, 200, await response.text())
    }
    const seen = [await viewerStream.next(), await viewerStream.next(), await viewerStream.next()]
    assert.deepEqual(
      seen.map((e) => e.data.changes),
      [
        [{ type: 'assignment', conversation_id: conversationA, actor_id: memberA.id }],
        [{ type: 'status', conversation_id: conversationA, actor_id: memberA.id }],
        [{ type: 'read', conversation_id: conversationA, actor_id: memberA.id }],
      ],
    )
    // reading a read conversation changes nothing and is not heard
    await fetch(`${base}/app/conversations/${conversationA}/read`, { method: 'POST', headers: memberA.headers })
    await viewerStream.nothingFor(300)
    await streamB.nothingFor(100)
    for (const stream of [streamA, viewerStream, streamB]) stream.close()
  })

  test('provider statuses of a batch are one event; an outbound message is heard', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account)
    const stream = await open(owner.cookie)
    await stream.next({ skip: [] })
    const first = await inbound(account, '+4915111110003', 'Moin')
    const conversation = first.conversation_id
    await stream.next()
    const [contact] = await harness.database.query<{ contact_id: string }>(
      'SELECT contact_id FROM conversations WHERE account_id = $1 AND id = $2',
      [account.accountId, conversation],
    )
    const sent = []
    for (const provider of ['live-p1', 'live-p2']) {
      const message = await harness.services.inbox.recordOutbound(account.accountId, {
        channel: 'chat',
        contactId: contact.contact_id,
        type: 'text',
        text: 'Danke!',
        providerMessageId: `${provider}-${unique()}`,
      })
      assert.ok(message)
      sent.push(message)
      const event = await stream.next()
      assert.deepEqual(event.data.changes, [{ type: 'message', conversation_id: conversation, message_id: message.id }])
    }
    const [rows] = [
      await harness.database.query<{ id: string; provider_message_id: string }>(
        'SELECT id, provider_message_id FROM messages WHERE account_id = $1 AND direction = $2 ORDER BY id',
        [account.accountId, 'outbound'],
      ),
    ]
    const changed = await harness.services.inbox.applyStatuses(
      account.accountId,
      rows.flatMap((r) => [
        {
          channel: 'chat' as const,
          providerMessageId: r.provider_message_id,
          status: 'delivered' as const,
          errorCode: null,
          optedOut: false,
        },
        {
          channel: 'chat' as const,
          providerMessageId: r.provider_message_id,
          status: 'read' as const,
          errorCode: null,
          optedOut: false,
        },
      ]),
    )
    assert.equal(changed, 4)
    const event = await stream.next()
    assert.deepEqual(
      event.data.changes.map((c: Json) => c.message_id).sort(),
      sent.map((m) => m.id).sort(),
      'the batch is one event naming each message once',
    )
    assert.ok(event.data.changes.every((c: Json) => c.type === 'message_status' && c.conversation_id === conversation))
    await stream.nothingFor(300)
    // a status that does not move the message is not heard
    await harness.services.inbox.applyStatuses(account.accountId, [
      {
        channel: 'chat',
        providerMessageId: rows[0].provider_message_id,
        status: 'delivered',
        errorCode: null,
        optedOut: false,
      },
    ])
    await stream.nothingFor(300)
    stream.close()
  })

  test('Last-Event-ID replays the account’s missed events in order; an unknown or another account’s id gets resync', async () => {
    const a = await sandboxAccount(harness)
    const b = await sandboxAccount(harness)
    const [memberA, memberB] = [await member(a), await member(b)]
    const first = await open(memberA.cookie)
    const streamB = await open(memberB.cookie)
    await inbound(a, '+4915111110004', 'eins')
    const seen = await first.next()
    first.close()
    const missed = [await inbound(a, '+4915111110004', 'zwei')]
    const ofB = await inbound(b, '+4915111110005', 'B')
    missed.push(await inbound(a, '+4915111110006', 'drei'))
    const eventB = await streamB.next()
    assert.equal(eventB.data.changes[0].message_id, ofB.message_id)

    const again = await open(memberA.cookie, seen.id)
    const replayed = [await again.next(), await again.next()]
    assert.deepEqual(
      replayed.map((e) => e.data.changes[0].message_id),
      missed.map((m) => m.message_id),
    )
    assert.deepEqual((await again.next({ skip: [] })).data, { resumed: true })
    // and it goes on live
    const live = await inbound(a, '+4915111110004', 'vier')
    assert.equal((await again.next()).data.changes[0].message_id, live.message_id)
    again.close()

    const unknown = await open(memberA.cookie, 'not-an-event-we-know')
    assert.equal((await unknown.next({ skip: [] })).event, 'resync')
    assert.deepEqual((await unknown.next({ skip: [] })).data, { resumed: false })
    unknown.close()
    // B's event id does not open A's replay (nor show B's events)
    const foreign = await open(memberA.cookie, eventB.id)
    assert.equal((await foreign.next({ skip: [] })).event, 'resync')
    foreign.close()
    streamB.close()
  })

  test('a burst heard together reaches each stream once per event, in order, with its own id; also a stream resuming meanwhile', async () => {
    const a = await sandboxAccount(harness)
    const [one, two] = [await member(a), await member(a)]
    const streams = [await open(one.cookie), await open(two.cookie)]
    const first = await inbound(a, '+4915111110020', 'vorher')
    const seen = await streams[0].next()
    assert.equal(seen.data.changes[0].message_id, first.message_id)
    await streams[1].next()

    const texts = Array.from({ length: 12 }, (_, n) => `Schwall ${n}`)
    const posting = Promise.all(texts.map((text, n) => inbound(a, `+49151111100${30 + (n % 4)}`, text)))
    // opened while the burst is heard: what it missed comes as replay, the rest live, nothing twice
    const resuming = await open(two.cookie, seen.id)
    const sent = await posting

    const messageIds = (events: Event[]) =>
      events.flatMap((e) => e.data.changes.filter((c: Json) => c.type === 'message').map((c: Json) => c.message_id))
    const wanted = new Set(sent.map((m) => m.message_id))
    const orders: string[][] = []
    for (const stream of [...streams, resuming]) {
      const events: Event[] = []
      const heard = new Set<string>()
      while (heard.size < wanted.size) {
        const event = await stream.next({ skip: ['ready'] })
        events.push(event)
        for (const id of messageIds([event])) {
          assert.ok(wanted.has(id), `an event of a message not in the burst: ${id}`)
          assert.ok(!heard.has(id), `message ${id} heard twice`)
          heard.add(id)
        }
      }
      assert.equal(new Set(events.map((e) => e.id)).size, events.length, 'each event has its own id')
      orders.push(messageIds(events))
      await stream.nothingFor(200)
      stream.close()
    }
    // every stream of the account hears the burst in the same (commit) order
    assert.deepEqual(orders[1], orders[0])
    assert.deepEqual(orders[2], orders[0])
  })

  test('signing out ends the session’s streams; a member’s streams are limited', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account)
    const streams = []
    for (let i = 0; i < 10; i++) streams.push(await open(owner.cookie))
    const eleventh = await open(owner.cookie)
    assert.equal(eleventh.status, 429)
    assert.equal(eleventh.body?.error.code, 'too_many_streams')
    const signOut = await fetch(`${base}/app/sign-out`, { method: 'POST', headers: owner.headers })
    assert.ok(signOut.status < 300, await signOut.text())
    for (const stream of streams) {
      const event = await stream.next()
      assert.equal(event.event, 'end')
      assert.deepEqual(event.data, { reason: 'signed_out' })
    }
    for (const stream of streams) {
      while (!stream.ended()) await new Promise((resolve) => setTimeout(resolve, 10))
    }
    assert.equal((await open(owner.cookie)).status, 401)
  })

  test('shutdown ends every open stream', async () => {
    const account = await sandboxAccount(harness)
    const stream = await open((await member(account)).cookie)
    await stream.next({ skip: [] })
    closed = true
    await harness.close()
    const event = await stream.next()
    assert.equal(event.event, 'end')
    assert.deepEqual(event.data, { reason: 'shutdown' })
  })
})
