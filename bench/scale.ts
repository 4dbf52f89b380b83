/**
 * Pace across worker processes (issue 50): a newsletter of BENCH_SECONDS (default 10) seconds of a number's pace, sent
 * by one, two and three worker processes (`serve --role worker`) against a fake WhatsApp Cloud API on loopback, at
 * each pace of BENCH_PACES (default 80,1000). PostgreSQL only: worker processes share a database.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/scale.ts        (fresh databases beside it)
 *   BENCH_PACES=80 BENCH_WORKERS=1,2 BENCH_SECONDS=5 DATABASE_URL=... node bench/scale.ts
 *
 * Per run: sends/s (from the first to the last `sent_at`) and its ratio to the pace, the busiest second of `sent_at`
 * (when each call began, at its slot) and of the arrivals at the fake provider, and that ratio to the pace. No second
 * over the pace means a busiest second at or under it.
 */
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { startFakeGraph } from '../test/helpers/fake-graph.ts'
import { createHarness, createTestAccount } from '../test/helpers/harness.ts'
import { busiestSecond } from '../test/helpers/jobs.ts'
import { insertConfirmedContacts, newsletterStatus, scheduleNewsletter, whatsappAnswers } from '../test/helpers/kill.ts'
import { startWorker } from '../test/helpers/worker.ts'

const databaseUrl = process.env.DATABASE_URL
if (!databaseUrl?.startsWith('postgres')) {
  console.error('bench/scale.ts needs DATABASE_URL of a PostgreSQL server (worker processes share the database)')
  process.exit(2)
}
process.env.HEROLD_TEST_DATABASE_URL = databaseUrl
const paces = (process.env.BENCH_PACES ?? '80,1000').split(',').map(Number)
const workerCounts = (process.env.BENCH_WORKERS ?? '1,2,3').split(',').map(Number)
const seconds = Number(process.env.BENCH_SECONDS ?? 10)
const WABA = '888900'

const arrivals = new Map<string, number[]>()
const graph = await startFakeGraph(
  whatsappAnswers({
    wabaId: WABA,
    delayMs: 5,
    idPrefix: 'wamid.S',
    record: (_body, number) => {
      const list = arrivals.get(number) ?? []
      list.push(performance.timeOrigin + performance.now())
      arrivals.set(number, list)
      return list.length
    },
  }),
)
const harness = await createHarness({
  config: { allowPrivateTargets: true, whatsappGraphUrl: graph.url },
  workers: true,
})
await harness.jobs!.stop()

const rows: string[] = []
let run = 0
try {
  for (const pace of paces) {
    for (const count of workerCounts) {
      run++
      const number = `7770009${String(run).padStart(2, '0')}`
      const recipients = Math.round(pace * seconds)
      const account = await createTestAccount(harness, { plan: { messagesPerMonth: 10_000_000 } })
      await harness.services.channels.connect(account.accountId, {
        channel: 'chat',
        provider: 'whatsapp-cloud',
        address: `+49309${number}`,
        phoneNumberId: number,
        wabaId: WABA,
        accessToken: `EAAG-${number}`,
        appSecret: 'scale-secret',
        verifyToken: 'scale-verify',
        messagesPerSecond: pace,
      })
      await insertConfirmedContacts(harness, account.accountId, recipients, { phonePrefix: `+49${number}` })
      const workers: ChildProcess[] = []
      for (let i = 0; i < count; i++) {
        workers.push(
          await startWorker(harness, { HEROLD_WHATSAPP_GRAPH_URL: graph.url, HEROLD_JOB_LEASE_SECONDS: '10' }),
        )
      }
      const { id } = await scheduleNewsletter(account, 500)
      const deadline = Date.now() + Math.max(120_000, seconds * 6_000)
      while ((await newsletterStatus(account, id)).status !== 'sent') {
        if (Date.now() > deadline)
          throw new Error(`not sent in time: ${JSON.stringify(await newsletterStatus(account, id))}`)
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
      for (const worker of workers) {
        worker.kill('SIGTERM')
        await once(worker, 'exit')
      }
      const sent = (
        await harness.database.query<{ sent_at: Date | string }>(
          `SELECT sent_at FROM template_sends WHERE account_id = $1 AND sent_at IS NOT NULL`,
          [account.accountId],
        )
      )
        .map((r) => new Date(r.sent_at).getTime())
        .sort((x, y) => x - y)
      const arrived = (arrivals.get(number) ?? []).sort((x, y) => x - y)
      const rate = (sent.length - 1) / ((sent[sent.length - 1] - sent[0]) / 1000)
      const busiest = busiestSecond(sent)
      rows.push(
        [
          `${pace}/s`,
          String(count),
          String(sent.length),
          rate.toFixed(1),
          (rate / pace).toFixed(3),
          String(busiest),
          (busiest / pace).toFixed(3),
          String(busiestSecond(arrived)),
        ].join(' | '),
      )
      console.log(`# ${rows.at(-1)}`)
    }
  }
} finally {
  await harness.close()
  await graph.close()
}
console.log(
  '\n| pace | workers | sent | sends/s | of pace | busiest second (sent_at) | of pace | busiest second (arrived) |',
)
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
for (const row of rows) console.log(`| ${row} |`)
