import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { sql } from 'drizzle-orm'
import {
  appMember,
  drainJobs,
  inboundConversation,
  type Json,
  nextPhone,
  sandboxAccount,
  succeeded,
} from '../../../test/helpers/fixtures.ts'
import type { Harness, TestAccount } from '../../../test/helpers/harness.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import type { Role } from '../../platform/auth/people.tables.ts'
import { rows } from '../../platform/db/rows.ts'
import { jobRunnerFor } from '../../platform/jobs/runner.ts'
import { memoryRateLimiter } from '../../platform/rate-limit/rate-limiter.ts'
import { buildServices, moduleJobs, mountedModules } from '../../services.ts'
import { type MemberLeft, removeMember } from '../people/index.ts'
import { unassignLeavingMember } from './inbox.leaving.ts'
import { WAKE_QUEUE } from './inbox.snooze.ts'

// Snooze, the views with their counts, search, and a member leaving (issue 48): through /app and the sandbox's
// inbound endpoint, on PGlite and (HEROLD_TEST_DATABASE_URL) PostgreSQL; jobs run only inside drainJobs, after the
// harness clock is moved.

let harness: Harness
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

const HOUR = 60 * 60 * 1000

type Member = Awaited<ReturnType<typeof appMember>>
const member = (account: TestAccount, role: Role = 'member', name = 'M') => appMember(harness, account, { role, name })

/** A customer's message through the sandbox; the id of its conversation. */
const inbound = (account: TestAccount, from: string, text?: string, name?: string) =>
  inboundConversation(harness, account, from, text, name)

async function conversation(m: Member, id: string): Promise<Json> {
  return (await succeeded(m.call('GET', `/app/conversations/${id}`))).conversation
}

async function wakeJobs(account: TestAccount): Promise<number> {
  const [row] = rows<{ n: string | number }>(
    await harness.database.orm.execute(sql`
      SELECT count(*) AS n FROM jobs WHERE account_id = ${account.accountId} AND queue = ${WAKE_QUEUE}`),
  )
  return Number(row.n)
}

const later = (ms: number) => new Date(harness.clock.now().getTime() + ms).toISOString()

describe('snooze', () => {
  test('snoozed until a time: the durable job reopens it at its time (after a restart), not before, and only once', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    const id = await inbound(account, nextPhone())
    const until = later(2 * HOUR)
    const snoozed = (await succeeded(owner.call('POST', `/app/conversations/${id}/snooze`, { until }))).conversation
    assert.equal(snoozed.status, 'snoozed')
    assert.equal(snoozed.snoozed_until, until)
    assert.equal(snoozed.snooze_until_reply, false)
    assert.equal(await wakeJobs(account), 1)

    harness.clock.advance(HOUR)
    await drainJobs(harness)
    assert.equal((await conversation(owner, id)).status, 'snoozed', 'not before its time')

    // a new process (every service and the job runner built anew, nothing kept in memory) wakes it at its time
    harness.clock.advance(HOUR + 1000)
    const deps = { config: harness.config, database: harness.database, clock: harness.clock }
    const restarted = buildServices({ ...deps, rateLimiter: memoryRateLimiter() }, mountedModules)
    const runner = jobRunnerFor(deps, moduleJobs(mountedModules, restarted)).runner
    await runner.start()
    await runner.drain()
    await runner.stop()
    await restarted.close()
    const woken = await conversation(owner, id)
    assert.equal(woken.status, 'open')
    assert.equal(woken.snoozed_until, null)
    assert.equal(await wakeJobs(account), 0, 'the job is done, nothing fires again')
  })

  test('a re-snooze replaces the wake-up, close and reopen cancel it: the old job never reopens it', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    const id = await inbound(account, nextPhone())
    await succeeded(owner.call('POST', `/app/conversations/${id}/snooze`, { until: later(HOUR) }))
    const second = later(5 * HOUR)
    await succeeded(owner.call('POST', `/app/conversations/${id}/snooze`, { until: second }))
    assert.equal(await wakeJobs(account), 1, 'the first wake-up was taken out')
    harness.clock.advance(2 * HOUR)
    await drainJobs(harness)
    const still = await conversation(owner, id)
    assert.equal(still.status, 'snoozed')
    assert.equal(still.snoozed_until, second)

    // closed before its time: stays closed when the time comes
    await succeeded(owner.call('POST', `/app/conversations/${id}/close`, {}))
    assert.equal(await wakeJobs(account), 0)
    harness.clock.advance(4 * HOUR)
    await drainJobs(harness)
    assert.equal((await conversation(owner, id)).status, 'closed')

    // a stale job (one a worker already held when the snooze changed) finds nothing to reopen
    await succeeded(owner.call('POST', `/app/conversations/${id}/snooze`, { until: later(HOUR) }))
    await harness.database.orm.execute(sql`
      UPDATE jobs SET payload = jsonb_set(payload, '{until}', to_jsonb(${later(-HOUR)}::text)), run_at = ${later(-1000)}
      WHERE account_id = ${account.accountId} AND queue = ${WAKE_QUEUE}`)
    await drainJobs(harness)
    assert.equal((await conversation(owner, id)).status, 'snoozed', 'a job of another snooze time reopens nothing')

    // reopened by hand: its wake-up goes
    const reopened = (await succeeded(owner.call('POST', `/app/conversations/${id}/reopen`, {}))).conversation
    assert.equal(reopened.status, 'open')
    assert.equal(reopened.snoozed_until, null)
    assert.equal(await wakeJobs(account), 0)
  })

  test('the customer’s message wakes a snoozed conversation at once, until-reply or timed', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    const phone = nextPhone()
    const id = await inbound(account, phone)
    const snoozed = (await succeeded(owner.call('POST', `/app/conversations/${id}/snooze`, { until_reply: true })))
      .conversation
    assert.equal(snoozed.status, 'snoozed')
    assert.equal(snoozed.snoozed_until, null)
    assert.equal(snoozed.snooze_until_reply, true)
    assert.equal(await wakeJobs(account), 0, 'no time, no job')
    await inbound(account, phone, 'Noch eine Frage')
    const woken = await conversation(owner, id)
    assert.equal(woken.status, 'open')
    assert.equal(woken.snooze_until_reply, false)

    await succeeded(owner.call('POST', `/app/conversations/${id}/snooze`, { until: later(3 * HOUR) }))
    await inbound(account, phone, 'Hallo nochmal')
    assert.equal((await conversation(owner, id)).status, 'open')
    // its old wake-up later reopens nothing it should not: the conversation is open already, and stays so
    harness.clock.advance(4 * HOUR)
    await drainJobs(harness)
    assert.equal((await conversation(owner, id)).status, 'open')
    assert.equal(await wakeJobs(account), 0)
  })

  test('bad snooze bodies are 400s naming the field; another account’s conversation is a 404', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    const id = await inbound(account, nextPhone())
    const url = `/app/conversations/${id}/snooze`
    const past = await owner.call('POST', url, { until: later(-60_000) })
    assert.equal(past.status, 400)
    assert.equal(past.body.error.key, 'snooze_time_past')
    assert.equal(past.body.error.field, 'until')
    const both = await owner.call('POST', url, { until: later(HOUR), until_reply: true })
    assert.equal(both.status, 400)
    assert.equal(both.body.error.key, 'snooze_choice')
    assert.equal(both.body.error.field, 'until_reply')
    const neither = await owner.call('POST', url, {})
    assert.equal(neither.status, 400)
    assert.equal(neither.body.error.field, 'until')
    const unknown = await owner.call('POST', url, { until: later(HOUR), later: true })
    assert.equal(unknown.status, 400)
    assert.match(JSON.stringify(unknown.body.error), /later/)
    const notTime = await owner.call('POST', url, { until: 'tomorrow' })
    assert.equal(notTime.status, 400)
    assert.equal((await conversation(owner, id)).status, 'open', 'nothing changed')

    const other = await sandboxAccount(harness)
    const stranger = await member(other, 'owner')
    assert.equal((await stranger.call('POST', url, { until_reply: true })).status, 404)
  })

  test('snoozing frees the assignee’s room for a waiting conversation (automatic assignment)', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    await succeeded(owner.call('PATCH', '/app/inbox/routing/assignment', { mode: 'round_robin', limit: 1 }))
    const a = await member(account, 'member', 'A')
    await succeeded(a.call('PUT', '/app/inbox/availability', { available: true }))
    const first = await inbound(account, nextPhone())
    const second = await inbound(account, nextPhone())
    assert.equal((await conversation(owner, first)).assignee_id, a.id)
    assert.equal((await conversation(owner, second)).assignee_id, null)
    await succeeded(a.call('POST', `/app/conversations/${first}/snooze`, { until_reply: true }))
    assert.equal((await conversation(owner, second)).assignee_id, a.id)
    assert.equal((await conversation(owner, first)).assignee_id, a.id, 'the snoozed one stays theirs')
  })
})

describe('views, counts and search', () => {
  test('each view lists its conversations and the counts agree; another account’s are invisible', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    const colleague = await member(account, 'member')
    const mine = await inbound(account, nextPhone(), 'eins')
    const theirs = await inbound(account, nextPhone(), 'zwei')
    const nobody = await inbound(account, nextPhone(), 'drei')
    const snoozed = await inbound(account, nextPhone(), 'vier')
    const closed = await inbound(account, nextPhone(), 'fünf')
    await succeeded(owner.call('PUT', `/app/conversations/${mine}/assignee`, { member_id: owner.id }))
    await succeeded(owner.call('PUT', `/app/conversations/${theirs}/assignee`, { member_id: colleague.id }))
    await succeeded(owner.call('POST', `/app/conversations/${snoozed}/snooze`, { until: later(HOUR) }))
    await succeeded(owner.call('POST', `/app/conversations/${closed}/close`, {}))
    // another account, with the same kinds of conversations
    const other = await sandboxAccount(harness)
    const stranger = await member(other, 'owner')
    for (let i = 0; i < 3; i++) await inbound(other, nextPhone(), 'eins')
    await succeeded(stranger.call('POST', `/app/conversations/${await inbound(other, nextPhone())}/close`, {}))

    const ids = async (m: Member, query: string) =>
      ((await succeeded(m.call('GET', `/app/conversations?${query}`))).conversations as Json[]).map((c) => c.id).sort()
    assert.deepEqual(await ids(owner, 'view=mine'), [mine])
    assert.deepEqual(await ids(colleague, 'view=mine'), [theirs])
    assert.deepEqual(await ids(owner, 'view=unassigned'), [nobody])
    assert.deepEqual(await ids(owner, 'view=all'), [mine, theirs, nobody].sort())
    assert.deepEqual(await ids(owner, 'view=snoozed'), [snoozed])
    assert.deepEqual(await ids(owner, 'view=closed'), [closed])
    assert.deepEqual(await ids(owner, ''), [mine, theirs, nobody, snoozed, closed].sort(), 'no view: every one')

    const counts = (await succeeded(owner.call('GET', '/app/inbox/counts'))).counts
    assert.deepEqual(counts, { mine: 1, unassigned: 1, all: 3, snoozed: 1, closed: 1 })
    assert.equal((await succeeded(colleague.call('GET', '/app/inbox/counts'))).counts.mine, 1)
    assert.deepEqual((await succeeded(stranger.call('GET', '/app/inbox/counts'))).counts, {
      mine: 0,
      unassigned: 3,
      all: 3,
      snoozed: 0,
      closed: 1,
    })

    // a caller without a member (a key through the tool server) has no "mine"
    const byKey = await harness.services.inbox.inboxCounts({ accountId: account.accountId })
    assert.deepEqual(byKey.counts, { mine: null, unassigned: 1, all: 3, snoozed: 1, closed: 1 })
    const bad = await owner.call('GET', '/app/conversations?view=later')
    assert.equal(bad.status, 400)
  })

  test('search: contact name, phone and message text, case-insensitive, wildcards literal, combined with a view', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner')
    const anna = nextPhone()
    const byName = await inbound(account, anna, 'Guten Tag', 'Anna Beispiel')
    const byText = await inbound(account, nextPhone(), 'Wo bleibt meine LIEFERUNG?')
    const percent = await inbound(account, nextPhone(), 'Rabatt 50% heute')
    const underscore = await inbound(account, nextPhone(), 'code a_b')
    const other = await sandboxAccount(harness)
    await inbound(other, nextPhone(), 'lieferung bei der anderen', 'Anna Fremd')

    const search = async (q: string, view = '') =>
      (
        (
          await succeeded(
            owner.call('GET', `/app/conversations?q=${encodeURIComponent(q)}${view ? `&view=${view}` : ''}`),
          )
        ).conversations as Json[]
      )
        .map((c) => c.id)
        .sort()
    assert.deepEqual(await search('anna'), [byName])
    assert.deepEqual(await search('lieferung'), [byText])
    // the digits after the country code (never a leading 0, which search drops as a national prefix: the last six
    // digits began with one whenever the process id ended in 0)
    assert.deepEqual(await search(anna.slice(3)), [byName], 'by the phone number’s digits')
    assert.deepEqual(
      await search(`0${anna.slice(3, 6)} ${anna.slice(6)}`),
      [byName],
      'as written at home: the national 0 and a space',
    )
    assert.deepEqual(await search('50%'), [percent])
    assert.deepEqual(await search('%'), [percent], '% is a plain character')
    assert.deepEqual(await search('a_b'), [underscore])
    assert.deepEqual(await search('_'), [underscore], '_ is a plain character')
    assert.deepEqual(await search('anna', 'closed'), [])
    await succeeded(owner.call('POST', `/app/conversations/${byName}/close`, {}))
    assert.deepEqual(await search('anna', 'closed'), [byName])
    assert.deepEqual(await search('   '), [byName, byText, percent, underscore].sort(), 'blank: no search')
    const long = await owner.call('GET', `/app/conversations?q=${'x'.repeat(101)}`)
    assert.equal(long.status, 400)
  })
})

describe('when a member leaves', () => {
  async function teamWithWork() {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner', 'Owner')
    const leaving = await member(account, 'member', 'Leaving')
    const open = await inbound(account, nextPhone())
    const snoozed = await inbound(account, nextPhone())
    const closed = await inbound(account, nextPhone())
    for (const id of [open, snoozed, closed])
      await succeeded(owner.call('PUT', `/app/conversations/${id}/assignee`, { member_id: leaving.id }))
    await succeeded(owner.call('POST', `/app/conversations/${snoozed}/snooze`, { until_reply: true }))
    await succeeded(owner.call('POST', `/app/conversations/${closed}/close`, {}))
    return { account, owner, leaving, open, snoozed, closed }
  }

  const records = async (owner: Member, id: string) =>
    ((await succeeded(owner.call('GET', `/app/conversations/${id}/routing`))).assignments as Json[]).map((r) => ({
      assignee_id: r.assignee_id,
      reason: r.reason,
      actor_id: r.actor_id,
    }))

  test('removed: their open and snoozed conversations go to nobody, each with a record; closed ones keep the name', async () => {
    const { owner, leaving, open, snoozed, closed } = await teamWithWork()
    await succeeded(owner.call('DELETE', `/app/team/${leaving.id}`))
    assert.equal((await conversation(owner, open)).assignee_id, null)
    assert.equal((await conversation(owner, snoozed)).assignee_id, null)
    assert.equal((await conversation(owner, closed)).assignee_id, leaving.id)
    for (const id of [open, snoozed])
      assert.deepEqual(await records(owner, id), [{ assignee_id: null, reason: 'member_removed', actor_id: owner.id }])
    assert.deepEqual(await records(owner, closed), [])
  })

  test('made a viewer: the same, with member_role_changed, and handed to automatic assignment when it is on', async () => {
    const { account, owner, leaving, open, snoozed } = await teamWithWork()
    await succeeded(owner.call('PATCH', '/app/inbox/routing/assignment', { mode: 'round_robin', limit: 5 }))
    const taker = await member(account, 'member', 'Taker')
    await succeeded(taker.call('PUT', '/app/inbox/availability', { available: true }))
    await succeeded(owner.call('PATCH', `/app/team/${leaving.id}`, { role: 'viewer' }))
    assert.equal((await conversation(owner, open)).assignee_id, taker.id, 'the open one goes to the next member')
    assert.equal((await conversation(owner, snoozed)).assignee_id, null, 'a snoozed one waits until it wakes')
    // both records are written in the one transaction, at the same time: compared by reason
    const history = (await records(owner, open)).sort((a, b) => a.reason.localeCompare(b.reason))
    assert.deepEqual(history, [
      { assignee_id: null, reason: 'member_role_changed', actor_id: owner.id },
      { assignee_id: taker.id, reason: 'queue', actor_id: owner.id },
    ])
  })

  test('a removal that fails (the last owner) changes nothing', async () => {
    const account = await sandboxAccount(harness)
    const owner = await member(account, 'owner', 'Only owner')
    const id = await inbound(account, nextPhone())
    await succeeded(owner.call('PUT', `/app/conversations/${id}/assignee`, { member_id: owner.id }))
    const refused = await owner.call('DELETE', `/app/team/${owner.id}`)
    assert.equal(refused.status, 409)
    assert.equal((await conversation(owner, id)).assignee_id, owner.id)
    assert.deepEqual(await records(owner, id), [])
    const demoted = await owner.call('PATCH', `/app/team/${owner.id}`, { role: 'viewer' })
    assert.equal(demoted.status, 409)
    assert.equal((await conversation(owner, id)).assignee_id, owner.id)
  })

  test('the unassigning runs in the removal’s transaction: a removal failing after it leaves both as they were', async () => {
    const { account, owner, leaving, open, snoozed } = await teamWithWork()
    const failing: MemberLeft = async () => {
      throw new Error('a later reaction fails')
    }
    await assert.rejects(
      removeMember(
        harness.database.orm,
        harness.clock,
        { accountId: account.accountId, userId: leaving.id, actorRole: 'owner' },
        [unassignLeavingMember, failing],
      ),
      /a later reaction fails/,
    )
    assert.equal((await conversation(owner, open)).assignee_id, leaving.id)
    assert.equal((await conversation(owner, snoozed)).assignee_id, leaving.id)
    assert.deepEqual(await records(owner, open), [])
    const still = rows<{ user_id: string }>(
      await harness.database.orm.execute(sql`
        SELECT user_id FROM memberships WHERE account_id = ${account.accountId} AND user_id = ${leaving.id}`),
    )
    assert.equal(still.length, 1, 'still a member')
  })
})
