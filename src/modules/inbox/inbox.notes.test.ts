import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import {
  type Json,
  listenOnLoopback,
  sandboxAccount,
  setOptin,
  signedInMember,
  unique,
} from '../../../test/helpers/fixtures.ts'
import { createHarness, type Harness, type TestAccount } from '../../../test/helpers/harness.ts'
import { connectMcp, toolFails, toolOk } from '../../../test/helpers/mcp-client.ts'
import { resolveMentions } from './inbox.notes.ts'

// Internal notes and @mentions: a note is stored with its resolved mentions, shown in the /app thread in its place,
// never in /v1's message lists and never sent (the sandbox's outbox stays empty); the mentioned member's mentions
// list and read flag; the 400/403/404 answers; the live `note` change; the tools. On PGlite and on PostgreSQL
// (HEROLD_TEST_DATABASE_URL).

let harness: Harness
let base: string
before(async () => {
  harness = await createHarness()
  base = await listenOnLoopback(harness)
})
after(async () => {
  await harness.close()
})

async function member(account: TestAccount, name: string, role: 'owner' | 'member' | 'viewer' = 'member') {
  const email = `${name.toLowerCase().replace(/\s+/g, '.')}-${unique()}@example.org`
  const signed = await signedInMember(harness, {
    accountId: account.accountId,
    email,
    password: 'notes password 12',
    role,
    name,
  })
  return { ...signed, email, local: email.split('@')[0] }
}

/** A customer's message through the sandbox: the conversation it lands in. */
async function conversationOf(account: TestAccount, from: string, text: string): Promise<string> {
  const answer = await account.request({ method: 'POST', url: '/v1/sandbox/inbound', payload: { from, text } })
  assert.equal(answer.statusCode, 200, answer.body)
  harness.clock.advance(1000)
  const [row] = await harness.database.query<{ conversation_id: string }>(
    "SELECT conversation_id FROM messages WHERE account_id = $1 AND direction = 'inbound' AND text = $2",
    [account.accountId, text],
  )
  return row.conversation_id
}

type Headers = Record<string, string>
/** An /app call; the test clock moves on a second after each, so what it wrote comes before what follows. */
async function call(method: 'GET' | 'POST', url: string, headers: Headers, payload?: object) {
  const response = await harness.app.inject(
    payload === undefined ? { method, url, headers } : { method, url, headers, payload },
  )
  harness.clock.advance(1000)
  return response
}

describe('resolveMentions', () => {
  const members = [
    { id: 'a', name: 'Anna Schmidt', email: 'anna@example.org' },
    { id: 'b', name: 'Ben', email: 'b.krause@example.org' },
    { id: 'c', name: '', email: 'carla@example.org' },
  ]
  test('display names and e-mail local parts, case-insensitively, at a word boundary', () => {
    assert.deepEqual(resolveMentions('@anna schmidt, bitte mit @BEN klären.', members), ['a', 'b'])
    assert.deepEqual(resolveMentions('Frag @b.krause. Und @carla!', members), ['b', 'c'])
    assert.deepEqual(resolveMentions('@Anna', members), ['a'], 'the local part anna')
  })
  test('an unknown @word, an e-mail address and a longer word are no mention', () => {
    assert.deepEqual(resolveMentions('@nobody und mail an x@anna und @Benedikt', members), [])
    assert.deepEqual(resolveMentions('@Ben @Ben @ben', members), ['b'], 'each member once')
  })
})

describe('internal notes', () => {
  test('a note is stored with its mentions, shown in the thread in its place, never in /v1 nor sent', async () => {
    const account = await sandboxAccount(harness)
    const anna = await member(account, 'Anna Schmidt', 'owner')
    const ben = await member(account, 'Ben Krause')
    const conversation = await conversationOf(account, '+4915122220001', 'Wo bleibt meine Bestellung?')
    const outboxBefore = await harness.database.query('SELECT 1 FROM sandbox_outbox WHERE account_id = $1', [
      account.accountId,
    ])

    const written = await call('POST', `/app/conversations/${conversation}/notes`, anna.headers, {
      body: `  @Ben Krause kannst du das prüfen? @${anna.local} weiß Bescheid, @niemand nicht.  `,
    })
    assert.equal(written.statusCode, 201, written.body)
    const note = written.json().note as Json
    assert.equal(note.kind, 'note')
    assert.equal(note.body, `@Ben Krause kannst du das prüfen? @${anna.local} weiß Bescheid, @niemand nicht.`)
    assert.deepEqual(note.author, { id: anna.id, name: 'Anna Schmidt' })
    assert.deepEqual(note.mentions, [
      { id: ben.id, name: 'Ben Krause' },
      { id: anna.id, name: 'Anna Schmidt' },
    ])
    const [stored] = await harness.database.query<{ author_id: string; mentions: string[] }>(
      'SELECT author_id, mentions FROM conversation_notes WHERE account_id = $1 AND id = $2',
      [account.accountId, note.id],
    )
    assert.equal(stored.author_id, anna.id)
    assert.deepEqual([...stored.mentions].sort(), [anna.id, ben.id].sort())

    // a message after the note: the thread shows message, note, message by time
    await setOptin(harness, account.accountId, await contactOf(account, conversation))
    const reply = await account.request({
      method: 'POST',
      url: '/v1/messages',
      payload: { contact_id: await contactOf(account, conversation), text: 'Wir sehen nach.' },
    })
    assert.ok(reply.statusCode < 300, reply.body)
    const thread = await call('GET', `/app/conversations/${conversation}/messages`, ben.headers)
    assert.equal(thread.statusCode, 200, thread.body)
    const items = thread.json().items as Json[]
    assert.deepEqual(
      items.map((i) => [i.kind, i.kind === 'note' ? i.body.slice(0, 11) : i.text]),
      [
        ['message', 'Wo bleibt meine Bestellung?'],
        ['note', '@Ben Krause'],
        ['message', 'Wir sehen nach.'],
      ],
    )
    assert.deepEqual(items[1].author, { id: anna.id, name: 'Anna Schmidt' })
    // paging from the newest end: the newest two, then the oldest
    const newest = (await call('GET', `/app/conversations/${conversation}/messages?limit=2`, ben.headers)).json()
    assert.deepEqual(
      newest.items.map((i: Json) => i.kind),
      ['note', 'message'],
    )
    assert.equal(newest.has_more, true)
    const older = (
      await call('GET', `/app/conversations/${conversation}/messages?limit=2&offset=2`, ben.headers)
    ).json()
    assert.deepEqual(
      older.items.map((i: Json) => i.text),
      ['Wo bleibt meine Bestellung?'],
    )

    // the public API knows no notes
    const v1 = await account.request({ method: 'GET', url: `/v1/inbox/conversations/${conversation}/messages` })
    assert.equal(v1.statusCode, 200)
    assert.equal(v1.json().messages.length, 2)
    assert.ok(v1.json().messages.every((m: Json) => !String(m.text).includes('@Ben')))
    for (const direction of ['inbound', 'outbound']) {
      const list = await account.request({ method: 'GET', url: `/v1/messages?direction=${direction}` })
      assert.ok(list.json().messages.every((m: Json) => !String(m.text).includes('prüfen')))
    }
    // and nothing was sent for it: the sandbox's outbox holds the reply alone
    const outbox = await harness.database.query<{ payload: unknown }>(
      'SELECT payload FROM sandbox_outbox WHERE account_id = $1',
      [account.accountId],
    )
    assert.equal(outbox.length, outboxBefore.length + 1)
    assert.ok(outbox.every((row) => !JSON.stringify(row).includes('prüfen')))
  })

  test('a note follows the messages it was written after, even when their times run ahead of the clock', async () => {
    const account = await sandboxAccount(harness)
    const writer = await member(account, 'Uwe Uhr', 'owner')
    const conversation = await conversationOf(account, '+4915122220006', 'Schnell hintereinander')
    // the account's message clock is a minute ahead of the clock (messages in the same millisecond move it on)
    harness.clock.advance(-60_000)
    const written = await harness.app.inject({
      method: 'POST',
      url: `/app/conversations/${conversation}/notes`,
      headers: writer.headers,
      payload: { body: 'Danach geschrieben' },
    })
    assert.equal(written.statusCode, 201, written.body)
    harness.clock.advance(120_000)
    const items = (await call('GET', `/app/conversations/${conversation}/messages`, writer.headers)).json().items
    assert.deepEqual(
      items.map((i: Json) => i.kind),
      ['message', 'note'],
    )
  })

  test('the mentioned member’s mentions, newest first, with the read flag and unread count', async () => {
    const account = await sandboxAccount(harness)
    const anna = await member(account, 'Anna Berger', 'owner')
    const ben = await member(account, 'Ben Vogel')
    const conversation = await conversationOf(account, '+4915122220002', 'Hallo')
    for (const text of ['@Ben Vogel erste Notiz', 'ohne Erwähnung', `@${ben.local} zweite Notiz`]) {
      const response = await call('POST', `/app/conversations/${conversation}/notes`, anna.headers, { body: text })
      assert.equal(response.statusCode, 201, response.body)
    }
    const page = await call('GET', '/app/mentions', ben.headers)
    assert.equal(page.statusCode, 200, page.body)
    const { mentions, unread_count } = page.json()
    assert.equal(unread_count, 2)
    assert.deepEqual(
      mentions.map((m: Json) => m.excerpt),
      [`@${ben.local} zweite Notiz`, '@Ben Vogel erste Notiz'],
    )
    assert.equal(mentions[0].conversation_id, conversation)
    assert.equal(mentions[0].contact.name, '')
    assert.deepEqual(mentions[0].author, { id: anna.id, name: 'Anna Berger' })
    assert.equal(mentions[0].read, false)
    // Anna is mentioned nowhere
    assert.deepEqual((await call('GET', '/app/mentions', anna.headers)).json().mentions, [])

    const paged = (await call('GET', '/app/mentions?limit=1', ben.headers)).json()
    assert.equal(paged.mentions.length, 1)
    assert.equal(paged.has_more, true)
    assert.equal(paged.next_offset, 1)

    // marking one read, then all; another member marking changes nothing of Ben's
    const one = await call('POST', '/app/mentions/read', ben.headers, { note_ids: [mentions[1].note_id] })
    assert.equal(one.statusCode, 200, one.body)
    assert.deepEqual(one.json(), { marked: 1, unread_count: 1 })
    const byAnna = await call('POST', '/app/mentions/read', anna.headers, {})
    assert.deepEqual(byAnna.json(), { marked: 0, unread_count: 0 })
    const after = (await call('GET', '/app/mentions', ben.headers)).json()
    assert.deepEqual(
      after.mentions.map((m: Json) => m.read),
      [false, true],
    )
    assert.deepEqual((await call('POST', '/app/mentions/read', ben.headers, {})).json(), { marked: 1, unread_count: 0 })
  })

  test('400 for bad input naming unknown fields, 404 for another account’s conversation, 403 for a viewer', async () => {
    const account = await sandboxAccount(harness)
    const other = await sandboxAccount(harness)
    const owner = await member(account, 'Olga Owner', 'owner')
    const viewer = await member(account, 'Viktor Viewer', 'viewer')
    const stranger = await member(other, 'Stefan Fremd', 'owner')
    const conversation = await conversationOf(account, '+4915122220003', 'Guten Tag')
    const url = `/app/conversations/${conversation}/notes`

    const unknown = await call('POST', url, owner.headers, { body: 'x', zz_extra: 1 })
    assert.equal(unknown.statusCode, 400, unknown.body)
    assert.deepEqual(unknown.json().error.unknown_fields, ['zz_extra'])
    for (const payload of [{}, { body: '' }, { body: 'x'.repeat(4001) }, { body: null }]) {
      const bad = await call('POST', url, owner.headers, payload)
      assert.equal(bad.statusCode, 400, bad.body)
      assert.equal(typeof bad.json().error.code, 'string')
    }
    const blank = await call('POST', url, owner.headers, { body: '   \n ' })
    assert.equal(blank.statusCode, 400)
    assert.equal(blank.json().error.key, 'note_empty')
    const unknownQuery = await call('GET', '/app/mentions?zz_page=2', owner.headers)
    assert.equal(unknownQuery.statusCode, 400)
    assert.deepEqual(unknownQuery.json().error.unknown_fields, ['zz_page'])
    const unknownRead = await call('POST', '/app/mentions/read', owner.headers, { all: true })
    assert.equal(unknownRead.statusCode, 400)
    assert.deepEqual(unknownRead.json().error.unknown_fields, ['all'])

    // another account's member: the conversation does not exist for them, nor its thread
    const foreign = await call('POST', url, stranger.headers, { body: 'Hallo?' })
    assert.equal(foreign.statusCode, 404, foreign.body)
    assert.equal(foreign.json().error.code, 'not_found')
    assert.equal((await call('GET', `/app/conversations/${conversation}/messages`, stranger.headers)).statusCode, 404)
    assert.equal(
      (await call('POST', '/app/conversations/not-a-uuid/notes', owner.headers, { body: 'x' })).statusCode,
      404,
    )

    // a viewer reads the thread but writes no note
    const refused = await call('POST', url, viewer.headers, { body: 'Ich darf das nicht' })
    assert.equal(refused.statusCode, 403, refused.body)
    assert.equal(typeof refused.json().error.code, 'string')
    assert.equal((await call('GET', `/app/conversations/${conversation}/messages`, viewer.headers)).statusCode, 200)
    const rows = await harness.database.query('SELECT 1 FROM conversation_notes WHERE account_id IN ($1, $2)', [
      account.accountId,
      other.accountId,
    ])
    assert.equal(rows.length, 0)
  })

  test('a note is heard live by the account’s consoles, not by another account’s', async () => {
    const account = await sandboxAccount(harness)
    const other = await sandboxAccount(harness)
    const writer = await member(account, 'Wera Write', 'owner')
    const reader = await member(account, 'Rolf Read')
    const stranger = await member(other, 'Sina Else', 'owner')
    const conversation = await conversationOf(account, '+4915122220004', 'Live?')
    const mine = await stream(reader.cookie)
    const theirs = await stream(stranger.cookie)
    const response = await call('POST', `/app/conversations/${conversation}/notes`, writer.headers, {
      body: '@Rolf Read schau mal',
    })
    assert.equal(response.statusCode, 201, response.body)
    assert.deepEqual(await mine.next(), {
      changes: [{ type: 'note', conversation_id: conversation, actor_id: writer.id }],
    })
    await assert.rejects(theirs.next(400), /no event/)
    mine.close()
    theirs.close()
  })

  test('the tools: add_conversation_note writes a note; list_mentions of a key is empty; notes go with the contact', async () => {
    const account = await sandboxAccount(harness)
    await member(account, 'Tom Tool')
    const conversation = await conversationOf(account, '+4915122220005', 'Per Werkzeug')
    const client = await connectMcp(base, account.key)
    try {
      const { note } = await toolOk(client, 'add_conversation_note', {
        conversation_id: conversation,
        body: '@Tom Tool bitte zurückrufen',
      })
      assert.equal(note.author, null, 'a key acts for no member')
      assert.equal(note.mentions[0].name, 'Tom Tool')
      const none = await toolOk(client, 'list_mentions', {})
      assert.deepEqual([none.mentions, none.unread_count], [[], 0], 'a key is mentioned by nobody')
      const marked = await account.request({ method: 'POST', url: '/app/mentions/read', payload: {} })
      assert.equal(marked.statusCode, 401, 'the /app routes take a session, not a key')
      await toolFails(
        client,
        'add_conversation_note',
        { conversation_id: '00000000-0000-4000-8000-000000000000', body: 'x' },
        'not_found',
      )
    } finally {
      await client.close()
    }
    // the notes go with their conversation when the contact is deleted
    const deleted = await account.request({
      method: 'DELETE',
      url: `/v1/contacts/${await contactOf(account, conversation)}`,
    })
    assert.equal(deleted.statusCode, 200, deleted.body)
    const left = await harness.database.query('SELECT 1 FROM conversation_notes WHERE account_id = $1', [
      account.accountId,
    ])
    assert.equal(left.length, 0)
  })
})

async function contactOf(account: TestAccount, conversation: string) {
  const [row] = await harness.database.query<{ contact_id: string }>(
    'SELECT contact_id FROM conversations WHERE account_id = $1 AND id = $2',
    [account.accountId, conversation],
  )
  return row.contact_id
}

/** GET /app/events of a member: the data of its next `inbox` event. */
async function stream(cookie: string) {
  const controller = new AbortController()
  const response = await fetch(`${base}/app/events`, { headers: { cookie }, signal: controller.signal })
  assert.equal(response.status, 200)
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  let text = ''
  const nextBlock = async (): Promise<string> => {
    for (;;) {
      const end = text.indexOf('\n\n')
      if (end >= 0) {
        const block = text.slice(0, end)
        text = text.slice(end + 2)
        return block
      }
      const { value, done } = await reader.read()
      if (done) throw new Error('the stream ended')
      text += decoder.decode(value, { stream: true })
    }
  }
  // the stream is open once it says ready
  while (!(await nextBlock()).includes('event: ready')) {}
  return {
    async next(ms = 5000): Promise<Json> {
      let timer: ReturnType<typeof setTimeout> | undefined
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no event within ${ms} ms`)), ms)
      })
      try {
        for (;;) {
          const block = await Promise.race([nextBlock(), timeout])
          if (!block.includes('event: inbox')) continue
          const data = block.split('\n').find((line) => line.startsWith('data: '))
          return JSON.parse(data?.slice(6) ?? '{}') as Json
        }
      } finally {
        clearTimeout(timer)
      }
    },
    close: () => controller.abort(),
  }
}
