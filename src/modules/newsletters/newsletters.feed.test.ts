import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { Harness } from '../../../test/helpers/harness.ts'
import { HOUR, newsletterHelpers } from '../../../test/helpers/newsletters.ts'
import { harnessPerFile } from '../../../test/helpers/test-file.ts'
import { jobRunnerFor } from '../../platform/jobs/runner.ts'
import { type MountedModule, moduleJobs, mountedModules } from '../../services.ts'
import { sandboxOutboxOf } from '../channels/index.ts'
import { templatesModule } from '../templates/index.ts'
import { createNewslettersService, newslettersJobs, newslettersModule } from './index.ts'
import { PROGRESS_EVERY_MS } from './newsletters.worker.ts'

// A newsletter's send jobs are written ahead of the sender (the feed), a few thousand at a time, never all at once.

let harness: Harness

// jobs run only inside the runners the tests start, so a test sees each state between steps
harnessPerFile({ drainOnly: true }, (created) => {
  harness = created
})

const { deps, sandboxAccount, contact, draft, inHours, schedule, status } = newsletterHelpers(() => harness)

/** The account's template send jobs in the jobs table (queued or running). */
async function queuedSendJobs(accountId: string): Promise<number> {
  const [row] = await harness.database.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE account_id = $1 AND queue = 'messaging.template_send'`,
    [accountId],
  )
  return Number(row.n)
}

describe('newsletters: the feed', () => {
  test('its send jobs are written ahead of the sender a few at a time: every recipient gets it exactly once', async () => {
    const account = await sandboxAccount()
    const recipients = new Set<string>()
    for (let i = 0; i < 7; i++) recipients.add(await contact(account, 'confirmed'))
    await contact(account, 'pending')
    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    harness.clock.advance(HOUR + 1000)
    // the newsletter's queues with 2 send jobs kept ahead instead of 20,000
    const feeding: MountedModule = {
      ...newslettersModule,
      jobs: (d, services) => newslettersJobs(createNewslettersService(d, services, { feedAhead: 2 })),
    }
    const queuedJobs = () => queuedSendJobs(account.accountId)
    const fanout = jobRunnerFor(deps(), moduleJobs([templatesModule, feeding], harness.services))
    const stopFanout = await fanout.start()
    await fanout.runner.drain()
    await stopFanout()
    const written = await status(account, newsletter.id)
    assert.equal(written.phase, 'sending')
    assert.equal(written.recipients, 7, 'the whole snapshot is written at once')
    assert.equal(written.counts.queued, 7)
    assert.equal(await queuedJobs(), 2, 'but only two of them have their send job')
    const all = jobRunnerFor(
      deps(),
      moduleJobs(
        mountedModules.map((m) => (m.name === 'newsletters' ? feeding : m)),
        harness.services,
      ),
    )
    let done = written
    for (let round = 0; round < 20 && done.status !== 'sent'; round++) {
      const stop = await all.start()
      await all.runner.drain()
      await stop()
      harness.clock.advance(PROGRESS_EVERY_MS)
      done = await status(account, newsletter.id)
    }
    assert.equal(done.status, 'sent')
    assert.equal(done.recipients, 7)
    assert.equal(done.counts.read, 7, 'the sandbox delivers and reads at once')
    assert.equal(await queuedJobs(), 0)
    const outbox = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.equal(outbox.length, 7, 'one message per recipient, none twice')
    const phones = await harness.database.query<{ phone: string }>(
      'SELECT phone FROM contacts WHERE account_id = $1 AND id = ANY($2::uuid[])',
      [account.accountId, `{${[...recipients].join(',')}}`],
    )
    assert.deepEqual(new Set(outbox.map((m) => m.recipient)), new Set(phones.map((p) => p.phone)))
  })

  test('in slices (the embedded database): short bulk statements, and a progress check fills the whole room', async () => {
    const account = await sandboxAccount()
    for (let i = 0; i < 9; i++) await contact(account, 'confirmed')
    const newsletter = await draft(account)
    assert.equal((await schedule(account, newsletter.id, inHours(1))).statusCode, 200)
    harness.clock.advance(HOUR + 1000)
    // 5 send jobs kept ahead, at most 2 rows a bulk statement: the fan-out in five batches, the feed in slices
    const sliced: MountedModule = {
      ...newslettersModule,
      jobs: (d, services) => newslettersJobs(createNewslettersService(d, services, { feedAhead: 5, bulkSlice: 2 })),
    }
    const queuedJobs = () => queuedSendJobs(account.accountId)
    const newsletterOnly = jobRunnerFor(deps(), moduleJobs([templatesModule, sliced], harness.services))
    const runNewsletterJobs = async () => {
      const stop = await newsletterOnly.start()
      await newsletterOnly.runner.drain()
      await stop()
    }
    await runNewsletterJobs()
    const written = await status(account, newsletter.id)
    assert.equal(written.recipients, 9, 'every batch of the snapshot written')
    assert.equal(await queuedJobs(), 5, 'the room filled across the batches, two at most each')
    const all = jobRunnerFor(
      deps(),
      moduleJobs(
        mountedModules.map((m) => (m.name === 'newsletters' ? sliced : m)),
        harness.services,
      ),
    )
    // the five go out (the progress check is not due yet)
    let stop = await all.start()
    await all.runner.drain()
    await stop()
    assert.equal(await queuedJobs(), 0)
    assert.equal((await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')).length, 5)
    harness.clock.advance(PROGRESS_EVERY_MS)
    await runNewsletterJobs()
    assert.equal(await queuedJobs(), 4, 'one check feeds the four left in two slices, not one slice')
    let done = await status(account, newsletter.id)
    for (let round = 0; round < 20 && done.status !== 'sent'; round++) {
      stop = await all.start()
      await all.runner.drain()
      await stop()
      harness.clock.advance(PROGRESS_EVERY_MS)
      done = await status(account, newsletter.id)
    }
    assert.equal(done.status, 'sent')
    assert.equal(done.counts.read, 9)
    const outbox = await sandboxOutboxOf(harness.database.orm, account.accountId, 'chat')
    assert.equal(outbox.length, 9)
    assert.equal(new Set(outbox.map((m) => m.recipient)).size, 9, 'none twice')
  })
})
