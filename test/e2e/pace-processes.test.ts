import assert from 'node:assert/strict'
import type { ChildProcess } from 'node:child_process'
import { after, describe, test } from 'node:test'
import type { TestAccount } from '../helpers/harness.ts'
import { busiestSecond } from '../helpers/jobs.ts'
import {
  insertConfirmedContacts,
  killScene,
  needsSharedDatabase,
  scheduleNewsletter,
  whatsappAnswers,
} from '../helpers/kill.ts'
import { childEnv, freePort, listeningAt, type ServerProcess, startProcess } from '../helpers/process.ts'

// Issue 50, "No second over the pace" and "One lane for every outbound message of a number": two worker processes
// send a newsletter at a number's pace of 40 a second, once alone and once while free-text replies go out through the
// API (this process) at the same time. No 1-second window at the provider holds more than 40 of the number's
// messages as they left (a template send's sent_at: when its call began; a reply: its arrival at the fake provider),
// the first second of the newsletter included. The replies go through an API process of their own (`serve --role
// api`): three processes share the number's lane. The newsletter's rate and the busiest second of the arrivals here
// (which add this process's own delays) are printed, not asserted: on a machine loaded beyond its cores the workers
// fall behind the pace (docs/performance.md).

const PACE = 40
const RECIPIENTS = 600
const REPLIES = 40
const WABA = '888501'

const SCENE = 'two worker processes send a newsletter at 40 a second, with and without free-text replies beside it'

describe(SCENE, needsSharedDatabase, () => {
  /** every message at the provider: its number, its kind (template, text) and when it arrived (ms) */
  const received: Array<{ number: string; type: string; at: number }> = []
  const scene = killScene({
    graph: whatsappAnswers({
      wabaId: WABA,
      delayMs: 5,
      idPrefix: 'wamid.P',
      record: (body, number) =>
        received.push({ number, type: String(body.type ?? ''), at: performance.timeOrigin + performance.now() }),
    }),
    leaseSeconds: 5,
    concurrency: 32,
  })
  let workers: ChildProcess[] = []
  let api: ServerProcess | null = null
  after(async () => {
    await api?.stop()
  })

  /** an account whose number sends at PACE, with RECIPIENTS confirmed contacts, and its newsletter sent */
  async function newsletterAt(number: string, during?: (account: TestAccount) => Promise<number>) {
    const account = await scene.whatsAppAccount(100_000, {
      phoneNumberId: number,
      wabaId: WABA,
      messagesPerSecond: PACE,
    })
    await insertConfirmedContacts(scene.harness, account.accountId, RECIPIENTS, { phonePrefix: `+49${number}` })
    const { id } = await scheduleNewsletter(account, 500)
    if (workers.length === 0) workers = [await scene.worker(), await scene.worker()]
    const replies = during ? await during(account) : 0
    await scene.newsletterSent(account, id)
    const arrivals = received.filter((r) => r.number === number)
    assert.equal(arrivals.filter((r) => r.type === 'template').length, RECIPIENTS, 'every newsletter message once')
    assert.equal(arrivals.filter((r) => r.type === 'text').length, replies, 'every reply')
    // when each message left: a template send's sent_at (its call began, at its slot), a reply's arrival here
    const sent = await scene.harness.database.query<{ sent_at: Date | string }>(
      `SELECT sent_at FROM template_sends WHERE account_id = $1 AND status IN ('sent', 'delivered', 'read')`,
      [account.accountId],
    )
    const left = [
      ...sent.map((r) => new Date(r.sent_at).getTime()),
      ...arrivals.filter((r) => r.type === 'text').map((r) => r.at),
    ].sort((x, y) => x - y)
    const arrived = arrivals.map((r) => r.at).sort((x, y) => x - y)
    const templates = arrivals.filter((r) => r.type === 'template').map((r) => r.at)
    const rate = (templates.length - 1) / ((Math.max(...templates) - Math.min(...templates)) / 1000)
    // every message of the number from the newsletter's first to its last, the replies in between included
    const inRun = left.filter((at) => at <= Math.max(...templates)).length
    const all = (inRun - 1) / ((Math.max(...templates) - left[0]) / 1000)
    console.log(
      `# pace ${PACE}/s, ${workers.length} workers, ${replies} replies: busiest second ${busiestSecond(left)} as sent, ` +
        `${busiestSecond(arrived)} as arrived here; newsletter at ${rate.toFixed(1)}/s (${(rate / PACE).toFixed(3)} of the pace), ` +
        `the number's messages at ${all.toFixed(1)}/s (${(all / PACE).toFixed(3)})`,
    )
    assert.equal(left.length, RECIPIENTS + replies)
    assert.ok(busiestSecond(left) <= PACE, `a second held ${busiestSecond(left)} of the number's messages`)
  }

  test('the newsletter alone: no second over the pace, the first included', async () => {
    await newsletterAt('777000501')
  })

  test('free-text replies through an API process beside it share the pace', async () => {
    api = await startProcess(
      process.execPath,
      ['src/cli/main.ts', 'serve', '--role', 'api'],
      childEnv({
        DATABASE_URL: scene.harness.config.databaseUrl,
        HEROLD_SECRET_KEY: scene.harness.config.secretKey,
        HEROLD_WHATSAPP_GRAPH_URL: scene.graph.url,
        HEROLD_ALLOW_PRIVATE_TARGETS: 'true',
        PORT: String(await freePort()),
      }),
      listeningAt,
    )
    const url = api.url
    await newsletterAt('777000502', async (account) => {
      const contacts = await scene.harness.database.query<{ id: string }>(
        'SELECT id FROM contacts WHERE account_id = $1 ORDER BY phone LIMIT $2',
        [account.accountId, REPLIES],
      )
      // the replies start with the newsletter's first messages and go out four at a time while it runs
      await scene.waitWhile(async () => !received.some((r) => r.number === '777000502'), {
        withinMs: 60_000,
        everyMs: 10,
        message: async () => 'the newsletter did not start',
      })
      for (let at = 0; at < contacts.length; at += 4) {
        const answers = await Promise.all(
          contacts.slice(at, at + 4).map(async (contact, i) => {
            const response = await fetch(`${url}/v1/messages`, {
              method: 'POST',
              headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ contact_id: contact.id, text: `Danke für Ihre Nachricht (${at + i + 1})` }),
            })
            return { status: response.status, body: await response.text() }
          }),
        )
        for (const answer of answers) assert.equal(answer.status, 201, answer.body)
        await new Promise((resolve) => setTimeout(resolve, 150))
      }
      return contacts.length
    })
  })
})
