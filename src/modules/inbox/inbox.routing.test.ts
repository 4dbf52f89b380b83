import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import {
  appMember,
  conversationWith,
  drainJobs,
  inboundConversation,
  type Json,
  nextPhone,
  sandboxAccount,
  setOptin,
  succeeded,
  unique,
} from '../../../test/helpers/fixtures.ts'
import type { Harness, TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import type { Role } from '../../platform/auth/people.tables.ts'
import { rows } from '../../platform/db/rows.ts'
import { memoryRateLimiter } from '../../platform/rate-limit/rate-limiter.ts'
import { buildServices, mountedModules } from '../../services.ts'

// Automatic assignment, opening hours and the away message (issue 48): through /app and the sandbox's inbound
// endpoint, on PGlite and (HEROLD_TEST_DATABASE_URL) PostgreSQL; jobs run only inside drainJobs.

let harness: Harness
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

type Member = Awaited<ReturnType<typeof appMember>>
const member = (account: TestAccount, role: Role = 'member', name = 'M') => appMember(harness, account, { role, name })

/** A customer's message through the sandbox; the id of its conversation. */
const inbound = (account: TestAccount, from: string, text?: string) => inboundConversation(harness, account, from, text)

const conversationOf = (account: TestAccount, phone: string) => conversationWith(harness, account, phone)

async function contactOf(account: TestAccount, phone: string): Promise<string> {
  const found = rows<{ id: string }>(
    await harness.database.orm.execute(
      sql`SELECT id FROM contacts WHERE account_id = ${account.accountId} AND phone = ${phone}`,
    ),
  )
  return found[0].id
}

async function assigneeOf(owner: Member, conversationId: string): Promise<string | null> {
  return (await succeeded(owner.call('GET', `/app/conversations/${conversationId}`))).conversation.assignee_id
}

/** An account with round-robin on and members set available in order (the first has waited longest). */
async function team(size: number, limit: number) {
  const account = await sandboxAccount(harness)
  const owner = await member(account, 'owner', 'Owner')
  await succeeded(owner.call('PATCH', '/app/inbox/routing/assignment', { mode: 'round_robin', limit }))
  const members: Member[] = []
  for (let i = 0; i < size; i++) {
    const m = await member(account, 'member', `Member ${i}`)
    await succeeded(m.call('PUT', '/app/inbox/availability', { available: true }))
    harness.clock.advance(1000)
    members.push(m)
  }
  return { account, owner, members }
}

describe('automatic assignment', () => {
  test('round-robin: each new conversation goes to the available member who has waited longest, recorded with its reason', async () => {
    const { account, owner, members } = await team(3, 10)
    const conversations: string[] = []
    for (let i = 0; i < 6; i++) conversations.push(await inbound(account, nextPhone()))
    const assignees = await Promise.all(conversations.map((id) => assigneeOf(owner, id)))
    const [a, b, c] = members.map((m) => m.id)
    assert.deepEqual(assignees, [a, b, c, a, b, c])
    const routing = await succeeded(owner.call('GET', `/app/conversations/${conversations[0]}/routing`))
    assert.deepEqual(
      routing.assignments.map((r: Json) => ({ assignee_id: r.assignee_id, reason: r.reason, actor_id: r.actor_id })),
      [{ assignee_id: a, reason: 'round_robin', actor_id: null }],
    )
    // a customer's next message in an assigned conversation changes nothing
    const phone = (await succeeded(owner.call('GET', `/app/conversations/${conversations[0]}`))).conversation
    assert.equal(phone.assignee_id, a)
  })

  test('the per-member limit: with nobody free a conversation waits, and closing one hands it to the member who got room', async () => {
    const { account, owner, members } = await team(2, 1)
    const [a, b] = members
    const first = await inbound(account, nextPhone())
    const second = await inbound(account, nextPhone())
    const third = await inbound(account, nextPhone())
    assert.equal(await assigneeOf(owner, first), a.id)
    assert.equal(await assigneeOf(owner, second), b.id)
    assert.equal(await assigneeOf(owner, third), null)
    const listed = await succeeded(owner.call('GET', '/app/inbox/availability'))
    assert.deepEqual(
      listed.members.filter((m: Json) => m.member_id !== owner.id).map((m: Json) => m.open_conversations),
      [1, 1],
    )
    await succeeded(b.call('POST', `/app/conversations/${second}/close`, {}))
    assert.equal(await assigneeOf(owner, third), b.id)
    const routing = await succeeded(owner.call('GET', `/app/conversations/${third}/routing`))
    assert.equal(routing.assignments[0].reason, 'queue')
  })

  test('a member going away gets no new conversations; the queue is handed out when they come back', async () => {
    const { account, owner, members } = await team(2, 1)
    const [a, b] = members
    await succeeded(a.call('PUT', '/app/inbox/availability', { available: false }))
    const first = await inbound(account, nextPhone())
    const second = await inbound(account, nextPhone())
    assert.equal(await assigneeOf(owner, first), b.id)
    assert.equal(await assigneeOf(owner, second), null)
    const back = await succeeded(a.call('PUT', '/app/inbox/availability', { available: true }))
    assert.equal(back.member.available, true)
    assert.equal(back.member.open_conversations, 1)
    assert.equal(await assigneeOf(owner, second), a.id)
  })

  test('reassigning by hand frees the previous assignee’s room for the queue', async () => {
    const { account, owner, members } = await team(1, 1)
    const [a] = members
    const first = await inbound(account, nextPhone())
    const second = await inbound(account, nextPhone())
    assert.equal(await assigneeOf(owner, second), null)
    await succeeded(owner.call('PUT', `/app/conversations/${first}/assignee`, { member_id: owner.id }))
    assert.equal(await assigneeOf(owner, second), a.id)
  })

  test('the round-robin survives a restart: a process built anew on the same database continues the order', async () => {
    const { account, owner, members } = await team(3, 10)
    await inbound(account, nextPhone())
    await inbound(account, nextPhone())
    // a new process: every service built again, nothing kept in memory
    const restarted = buildServices(
      { config: harness.config, database: harness.database, clock: harness.clock, rateLimiter: memoryRateLimiter() },
      mountedModules,
    )
    const phone = nextPhone()
    await restarted.inbox.receive(account.accountId, 'de', {
      channel: 'chat',
      providerMessageId: `wamid.${unique()}`,
      from: phone,
      name: '',
      type: 'text',
      text: 'Noch da?',
      media: null,
    })
    assert.equal(await assigneeOf(owner, await conversationOf(account, phone)), members[2].id)
    await restarted.close()
  })

  test('assignments made at the same time never pass a member’s limit', async () => {
    const { account, owner } = await team(3, 2)
    const phones = Array.from({ length: 10 }, () => nextPhone())
    await Promise.all(phones.map((phone) => inbound(account, phone)))
    const listed = await succeeded(owner.call('GET', '/app/inbox/availability'))
    const counts = listed.members.filter((m: Json) => m.member_id !== owner.id).map((m: Json) => m.open_conversations)
    assert.deepEqual(counts, [2, 2, 2])
    let unassigned = 0
    for (const phone of phones)
      if ((await assigneeOf(owner, await conversationOf(account, phone))) === null) unassigned++
    assert.equal(unassigned, 4)
  })

  test('off (the default) assigns nobody; a viewer cannot be available; settings need settings:write', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    const someone = await member(account, 'member')
    await succeeded(someone.call('PUT', '/app/inbox/availability', { available: true }))
    const conversation = await inbound(account, nextPhone())
    assert.equal(await assigneeOf(owner, conversation), null)
    const viewer = await member(account, 'viewer')
    const refused = await viewer.call('PUT', '/app/inbox/availability', { available: true })
    assert.equal(refused.status, 403)
    const byMember = await someone.call('PATCH', '/app/inbox/routing/assignment', { mode: 'round_robin' })
    assert.equal(byMember.status, 403)
    const other = await someone.call('PUT', '/app/inbox/availability', { available: false, member_id: owner.id })
    assert.equal(other.status, 403)
    const unknown = await owner.call('PATCH', '/app/inbox/routing/assignment', { mode: 'random' })
    assert.equal(unknown.status, 400)
    const foreign = await sandboxAccount(harness)
    const foreignConversation = await inbound(foreign, nextPhone())
    const hidden = await owner.call('GET', `/app/conversations/${foreignConversation}/routing`)
    assert.equal(hidden.status, 404)
    assert.equal(hidden.body.error.code, 'not_found')
  })
})

const weekdays = [{ from: '09:00', to: '17:00' }]
const berlinHours = {
  enabled: true,
  timezone: 'Europe/Berlin',
  weekly: { mon: weekdays, tue: weekdays, wed: weekdays, thu: weekdays, fri: weekdays },
  days_off: ['2026-04-03'],
  away_enabled: true,
  away_message: 'Wir sind gerade nicht da und melden uns ab 9 Uhr.',
}

/** The outbound messages of a conversation. */
async function outbound(account: TestAccount, conversationId: string): Promise<Json[]> {
  const response = await account.request({
    method: 'GET',
    url: `/v1/messages?direction=outbound&conversation_id=${conversationId}&limit=100`,
  })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().data ?? response.json().messages
}

/** A customer with a confirmed chat opt-in who writes at `at`; the conversation's id. */
async function customerWrites(account: TestAccount, phone: string, at: string, text = 'Hallo?') {
  harness.clock.set(at)
  const conversationId = await inbound(account, phone, text)
  await setOptin(harness, account.accountId, await contactOf(account, phone))
  await drainJobs(harness)
  return conversationId
}

describe('opening hours and the away message', () => {
  test('outside the hours the first message gets the away message once, automated; not again within the interval', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    await succeeded(owner.call('PATCH', '/app/inbox/routing/hours', berlinHours))
    const phone = nextPhone()
    // Saturday 28 March 2026, 11:00 in Berlin
    const conversation = await customerWrites(account, phone, '2026-03-28T10:00:00Z')
    let sent = await outbound(account, conversation)
    assert.equal(sent.length, 1)
    assert.equal(sent[0].text, berlinHours.away_message)
    const detail = await succeeded(owner.call('GET', `/app/messages/${sent[0].id}`))
    assert.equal(detail.message.automated, true)
    // an hour later, still closed: nothing more
    await customerWrites(account, phone, '2026-03-28T11:00:00Z', 'Hallo??')
    assert.equal((await outbound(account, conversation)).length, 1)
    // thirteen hours after the first, still closed (Sunday): the interval of 12 hours has passed
    await customerWrites(account, phone, '2026-03-28T23:00:00Z', 'Jemand da?')
    sent = await outbound(account, conversation)
    assert.equal(sent.length, 2)
    const routing = await succeeded(owner.call('GET', `/app/conversations/${conversation}/routing`))
    assert.deepEqual(
      routing.away_messages.map((a: Json) => a.state),
      ['sent', 'sent'],
    )
  })

  test('within the hours nothing is sent, on both sides of the change to summer time; a day off is closed', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    await succeeded(owner.call('PATCH', '/app/inbox/routing/hours', { ...berlinHours, away_interval_minutes: 1 }))
    // Monday 23 March, 09:30 CET (08:30 UTC): open
    const before = await customerWrites(account, nextPhone(), '2026-03-23T08:30:00Z')
    assert.equal((await outbound(account, before)).length, 0)
    // Monday 30 March, 07:30 UTC is 09:30 CEST: open (it would be 08:30 in winter)
    const after = await customerWrites(account, nextPhone(), '2026-03-30T07:30:00Z')
    assert.equal((await outbound(account, after)).length, 0)
    // Monday 30 March, 06:30 UTC is 08:30 CEST: closed
    const early = await customerWrites(account, nextPhone(), '2026-03-30T06:30:00Z')
    assert.equal((await outbound(account, early)).length, 1)
    // Good Friday 3 April, a day off, 11:00 CEST
    const holiday = await customerWrites(account, nextPhone(), '2026-04-03T09:00:00Z')
    assert.equal((await outbound(account, holiday)).length, 1)
    const state = await succeeded(owner.call('GET', '/app/inbox/opening-state'))
    assert.equal(state.open_now, false)
    assert.equal(state.opens_at, '2026-04-06T07:00:00.000Z')
  })

  test('America/New_York: the hours follow the local clock across the change of 8 March', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    const nine = [{ from: '09:00', to: '17:00' }]
    await succeeded(
      owner.call('PATCH', '/app/inbox/routing/hours', {
        ...berlinHours,
        timezone: 'America/New_York',
        weekly: { fri: nine, mon: nine },
        days_off: [],
      }),
    )
    // Friday 6 March, 09:30 EST = 14:30 UTC: open; Monday 9 March, 14:30 UTC = 10:30 EDT: open, 13:30 UTC = 09:30 EDT open
    assert.equal(
      (await outbound(account, await customerWrites(account, nextPhone(), '2026-03-06T14:30:00Z'))).length,
      0,
    )
    assert.equal(
      (await outbound(account, await customerWrites(account, nextPhone(), '2026-03-09T13:30:00Z'))).length,
      0,
    )
    // Friday 6 March 13:30 UTC is 08:30 EST: closed
    assert.equal(
      (await outbound(account, await customerWrites(account, nextPhone(), '2026-03-06T13:30:00Z'))).length,
      1,
    )
  })

  test('a customer without a confirmed opt-in gets nothing, and the skip is recorded with its reason', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    await succeeded(owner.call('PATCH', '/app/inbox/routing/hours', berlinHours))
    harness.clock.set('2026-03-28T10:00:00Z')
    const conversation = await inbound(account, nextPhone())
    await drainJobs(harness)
    assert.equal((await outbound(account, conversation)).length, 0)
    const routing = await succeeded(owner.call('GET', `/app/conversations/${conversation}/routing`))
    assert.deepEqual(
      routing.away_messages.map((a: Json) => [a.state, a.reason]),
      [['skipped', 'contact_not_optin']],
    )
  })

  test('bad settings are refused in the envelope: an unknown time zone, overlapping ranges, an away message without text', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    const cases: Array<[Json, string]> = [
      [{ timezone: 'Europe/Atlantis' }, 'invalid_timezone'],
      [
        {
          weekly: {
            mon: [
              { from: '09:00', to: '12:00' },
              { from: '11:00', to: '13:00' },
            ],
          },
        },
        'invalid_opening_hours',
      ],
      [{ weekly: { mon: [{ from: '12:00', to: '09:00' }] } }, 'invalid_opening_hours'],
      [{ days_off: ['2026-02-30'] }, 'invalid_opening_hours'],
      [{ away_enabled: true }, 'away_message_missing'],
    ]
    for (const [body, key] of cases) {
      const answer = await owner.call('PATCH', '/app/inbox/routing/hours', body)
      assert.equal(answer.status, 400, JSON.stringify(body))
      assert.equal(answer.body.error.key, key)
    }
    const unknown = await owner.call('PATCH', '/app/inbox/routing/hours', { opening: true })
    assert.equal(unknown.status, 400)
    const settings = await succeeded(owner.call('GET', '/app/inbox/routing'))
    assert.equal(settings.hours.enabled, false)
    assert.equal(settings.open_now, true)
  })
})

describe('automations: the branch condition within_opening_hours', () => {
  test('takes the then branch while open and the else branch while closed, on the inbox’s hours', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    await succeeded(owner.call('PATCH', '/app/inbox/routing/hours', { ...berlinHours, away_enabled: false }))
    const created = await account.request({
      method: 'POST',
      url: '/v1/automations',
      payload: {
        name: 'Öffnungszeiten',
        trigger: { type: 'manual' },
        steps: [
          { type: 'branch', condition: { type: 'within_opening_hours' }, else_goto: 2 },
          { type: 'add_tag', tag: 'offen' },
          { type: 'branch', condition: { type: 'within_opening_hours' }, then_goto: 'end' },
          { type: 'add_tag', tag: 'geschlossen' },
        ],
      },
    })
    assert.equal(created.statusCode, 200, created.body)
    const id = created.json().id
    assert.equal((await account.request({ method: 'POST', url: `/v1/automations/${id}/activate` })).statusCode, 200)
    const tagsAfterRunAt = async (at: string) => {
      harness.clock.set(at)
      const contact = await account.request({ method: 'POST', url: '/v1/contacts', payload: { phone: nextPhone() } })
      const contactId = contact.json().contact.id
      const started = await account.request({
        method: 'POST',
        url: `/v1/automations/${id}/trigger`,
        payload: { contact_id: contactId },
      })
      assert.equal(started.statusCode, 202, started.body)
      await drainJobs(harness)
      const read = await account.request({ method: 'GET', url: `/v1/contacts/${contactId}` })
      return read.json().contact.tags as string[]
    }
    // Tuesday 24 March 2026 10:00 CET: open; Saturday 28 March: closed
    assert.deepEqual(await tagsAfterRunAt('2026-03-24T09:00:00Z'), ['offen'])
    assert.deepEqual(await tagsAfterRunAt('2026-03-28T09:00:00Z'), ['geschlossen'])
  })
})
