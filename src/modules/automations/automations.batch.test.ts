import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import * as auto from '../../../test/helpers/automations.ts'
import { startReceiver } from '../../../test/helpers/webhook-receiver.ts'
import { type ClaimedJob, claimJobs } from '../../platform/jobs/jobs.ts'
import { RUN_QUEUE } from './automations.worker.ts'

// The batch path of the run queue: the due steps of many runs claimed together and walked in one transaction per
// account (automations.worker.ts, runBatch). Runs on PGlite, and on PostgreSQL with HEROLD_TEST_DATABASE_URL.

auto.withAutomationsHarness()

const steps = (run: auto.Json) => run.steps.map((s: auto.Json) => [s.step, s.result, s.reason])

describe('automation runs in batches', () => {
  test('the due steps of several runs claimed together are walked in one batch, each with its own outcome', async () => {
    // the webhook step of one run fails once (500), every other answer is 204
    let failing = ''
    const answered = new Map<string, number>()
    const receiver = await startReceiver({
      answer: (delivery) => {
        const n = (answered.get(delivery.deliveryId) ?? 0) + 1
        answered.set(delivery.deliveryId, n)
        return failing !== '' && delivery.deliveryId.includes(failing) && n === 1 ? 500 : 204
      },
    })
    try {
      const account = await auto.sandboxAccount()
      const templateId = await auto.approvedTemplate(account)
      const automation = await auto.active(account, {
        trigger: { type: 'manual' },
        steps: [
          { type: 'add_tag', tag: 'stapel' },
          // sees the tag the same batch just added
          { type: 'branch', condition: { type: 'has_tag', tag: 'stapel' }, then_goto: 2, else_goto: 'end' },
          { type: 'send_template', template_id: templateId },
          { type: 'webhook', url: receiver.url },
          { type: 'wait', duration: { hours: 1 } },
          { type: 'remove_tag', tag: 'stapel' },
        ],
      })
      const paused = await auto.active(account, {
        trigger: { type: 'manual' },
        steps: [{ type: 'add_tag', tag: 'nie' }],
      })
      const confirmed = [
        await auto.createContact(account),
        await auto.createContact(account),
        await auto.createContact(account),
      ]
      for (const id of confirmed) await auto.confirm(account, id)
      const unconfirmed = await auto.createContact(account)

      const plain = await auto.trigger(account, automation.id, confirmed[0])
      const retried = await auto.trigger(account, automation.id, confirmed[1])
      failing = retried
      // two runs of one contact in the same batch: the second finds the tag the first added
      const twiceA = await auto.trigger(account, automation.id, confirmed[2])
      const twiceB = await auto.trigger(account, automation.id, confirmed[2])
      const skipped = await auto.trigger(account, automation.id, unconfirmed)
      const held = await auto.trigger(account, paused.id, confirmed[0])
      await account.request({ method: 'POST', url: `/v1/automations/${paused.id}/pause` })

      const jobs = await claimJobs(auto.harness.database.orm, auto.harness.clock, {
        queue: RUN_QUEUE,
        limit: 100,
        perKey: 1,
        leaseMs: 60_000,
      })
      const mine = jobs.filter((job) => job.accountId === account.accountId)
      assert.equal(mine.length, 6, 'every run has one due job, claimed together')
      const settled: ClaimedJob[] = []
      await auto.harness.services.automations.runBatch(mine, { settled: (job) => settled.push(job) })
      assert.equal(settled.length, 6, 'each job settled: completed, or put back to retry its webhook step')

      const first = await auto.runOf(account, automation.id, plain)
      assert.equal(first.state, 'waiting')
      assert.deepEqual(steps(first), [
        [0, 'done', null],
        [1, 'done', null],
        [2, 'queued', null],
        [3, 'done', null],
        [4, 'waiting', null],
      ])
      assert.deepEqual(await auto.tagsOf(account, confirmed[0]), ['stapel'])

      const failed = await auto.runOf(account, automation.id, retried)
      assert.equal(failed.state, 'running')
      assert.deepEqual(steps(failed).at(-1), [3, 'sending', null], 'the webhook step waits for its retry')

      const [a, b] = [
        await auto.runOf(account, automation.id, twiceA),
        await auto.runOf(account, automation.id, twiceB),
      ]
      const changed = [a, b].map((run) => run.steps[0].detail.changed).sort()
      assert.deepEqual(changed, [false, true], 'one of the two runs added the tag, the other found it')
      assert.ok([a, b].every((run) => run.state === 'waiting' && run.steps[2].result === 'queued'))

      const notOptedIn = await auto.runOf(account, automation.id, skipped)
      assert.deepEqual(steps(notOptedIn).slice(0, 4), [
        [0, 'done', null],
        [1, 'done', null],
        [2, 'skipped', 'contact_not_optin'],
        [3, 'done', null],
      ])

      const waiting = await auto.runOf(account, paused.id, held)
      assert.deepEqual([waiting.state, waiting.steps.length], ['waiting', 0], 'a paused automation holds its run')

      const sends = await auto.harness.database.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM template_sends WHERE account_id = $1 AND origin = 'automation'`,
        [account.accountId],
      )
      assert.equal(sends[0].n, 4, 'one send each for the four confirmed runs, none for the unconfirmed contact')
      const hooks = receiver.received.filter((r) => r.deliveryId.endsWith(':3'))
      assert.equal(hooks.length, 5, 'each webhook step called once; the failed one not yet again')

      // the failed webhook step is tried again after the runner's backoff; then every run finishes its wait
      auto.harness.clock.advance(10_000)
      await auto.drain()
      assert.deepEqual(steps(await auto.runOf(account, automation.id, retried)).slice(3), [
        [3, 'done', null],
        [4, 'waiting', null],
      ])
      auto.harness.clock.advance(auto.HOUR)
      await auto.drain()
      const runs = await auto.runsOf(account, automation.id)
      assert.deepEqual(
        runs.map((run) => run.state),
        ['completed', 'completed', 'completed', 'completed', 'completed'],
      )
      for (const id of confirmed) assert.deepEqual(await auto.tagsOf(account, id), [])
      assert.equal(receiver.received.filter((r) => r.deliveryId.includes(retried)).length, 2)
    } finally {
      await receiver.close()
    }
  })
})
