/**
 * Fairness benchmark: one account's newsletter to BENCH_CONTACTS confirmed contacts (default 1,000,000 on PostgreSQL,
 * 100,000 embedded) at the number's pace BENCH_PACE (default 80/s, WhatsApp's default; BENCH_PACE=1000 the highest
 * tier), while two small accounts each send a template message every 200 ms through the service of POST /messages.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/fairness.ts   (a fresh database beside it)
 *   node bench/fairness.ts                                                            embedded PGlite in memory
 *   BENCH_CONTACTS=20000 BENCH_SECONDS=10 BENCH_PACE=1000 node bench/fairness.ts
 *
 * Three windows of BENCH_SECONDS (default 30) each, one process with the server's job runner (every module's queues,
 * HEROLD_WORKER_CONCURRENCY): the small accounts alone (the baseline: their POST-to-`sent` latency with nobody else
 * sending), the newsletter alone (its sends/s against its pace), then both at once. A send's latency is from the call
 * that queues it to its record's `sent_at` (the worker's clock, the same machine's). The figures: the small accounts'
 * p50/p95/p99/max in both windows and their ratio, and the big account's sends/s against its pace alone and beside them.
 *
 *   BENCH_NOISE=import node bench/fairness.ts   the big account imports BENCH_IMPORT_ROWS contacts (default 100,000)
 *                                               from a CSV instead of sending a newsletter: the import alone, then
 *                                               the small accounts' sends while it imports again (a new account)
 */
import { randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { sql } from 'drizzle-orm'
import { loadConfig } from '../src/config.ts'
import { importBatchSize, importContacts, recordOptinChange } from '../src/modules/contacts/index.ts'
import { createAccount, getAccount, setPlan } from '../src/platform/auth/accounts.service.ts'
import { systemClock } from '../src/platform/clock.ts'
import { openDatabase } from '../src/platform/db/client.ts'
import { migrate } from '../src/platform/db/migrate.ts'
import { jobRunnerFor } from '../src/platform/jobs/runner.ts'
import { buildServices, moduleJobs, mountedModules } from '../src/services.ts'
import { createScratchDatabase } from '../test/helpers/scratch-database.ts'

const base = process.env.DATABASE_URL || undefined
const CONTACTS = Number(process.env.BENCH_CONTACTS ?? (base ? 1_000_000 : 100_000))
const PACE = Number(process.env.BENCH_PACE ?? 80)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 30)
const EVERY_MS = 200
const NOISE = process.env.BENCH_NOISE === 'import' ? 'import' : 'newsletter'
const IMPORT_ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 100_000)
const SERVER_DEFAULTS = loadConfig(process.env)
const t0 = performance.now()
const phase = (what: string) => console.error(`[${((performance.now() - t0) / 1000).toFixed(1)} s] ${what}`)

const fresh = base ? await createScratchDatabase(base, 'herold_bench_fair') : null
const database = await openDatabase({
  databaseUrl: fresh?.url,
  dataDir: 'memory://',
  poolSize: SERVER_DEFAULTS.databasePoolSize,
})
try {
  await migrate(database)
  const config = loadConfig(
    {},
    {
      databaseUrl: fresh?.url,
      publicUrl: 'https://bench.herold.example',
      workerConcurrency: SERVER_DEFAULTS.workerConcurrency,
      secretKey: randomBytes(32).toString('base64'),
    },
  )
  const deps = { config, database, clock: systemClock }
  const services = buildServices(deps)
  const db = database.orm
  const plan = `bench-${Date.now()}`
  await setPlan(db, {
    name: plan,
    contactsLimit: CONTACTS + 10,
    messagesPerMonth: CONTACTS + 100_000,
    webhooksLimit: 1,
  })

  async function newAccount(name: string, pace: number) {
    const account = await getAccount(db, (await createAccount(db, { name, plan })).id)
    await services.channels.connect(account.id, {
      channel: 'chat',
      provider: 'sandbox',
      messagesPerSecond: pace,
    })
    return { accountId: account.id, account }
  }

  // the small accounts: one confirmed contact and one approved template each, at the default pace
  const smallOnes = await Promise.all(
    ['Klein', 'Winzig'].map(async (name) => {
      const tenant = await newAccount(name, 80)
      const templates = services.templates
      const template = await templates.create(tenant, {
        name: `${name} Abholung`,
        content: 'Hallo {{name}}, deine Bestellung {{nummer}} liegt zur Abholung bereit.',
        language: 'de',
      })
      await templates.submit(tenant, template.id)
      const contactId = randomUUID()
      await db.execute(sql`INSERT INTO contacts (account_id, id, name, phone, language, source, created_at)
        VALUES (${tenant.accountId}, ${contactId}, ${`Kundin ${name}`}, ${`+49151${Math.floor(1e7 + Math.random() * 9e7)}`},
          'de', 'bench', now())`)
      await db.transaction((tx) =>
        recordOptinChange(tx, systemClock, {
          accountId: tenant.accountId,
          contactId,
          channel: 'chat',
          to: 'confirmed',
          source: 'bench',
        }),
      )
      return { tenant, templateId: template.id, contactId }
    }),
  )

  // the big account: its confirmed contacts written in bulk (search index built once after)
  const big = await newAccount('Groß', PACE)
  const [search] = await database.query<{ indexdef: string }>(
    `SELECT indexdef FROM pg_indexes WHERE tablename = 'contacts' AND indexname = 'contacts_search_trgm_idx'`,
  )
  if (search) await database.query('DROP INDEX contacts_search_trgm_idx')
  for (let from = 1; NOISE === 'newsletter' && from <= CONTACTS; from += 250_000) {
    await database.query(
      `INSERT INTO contacts (account_id, id, name, phone, optin_chat, source, created_at)
       SELECT $1::uuid, gen_random_uuid(), 'Kunde ' || i, '+49172' || lpad(i::text, 8, '0'), 'confirmed', 'bench', now()
       FROM generate_series($2::int, $3::int) AS i`,
      [big.accountId, from, Math.min(CONTACTS, from + 250_000 - 1)],
    )
  }
  if (search) await database.query(search.indexdef)
  await database.query('ANALYZE contacts')
  phase(`${CONTACTS.toLocaleString('en')} confirmed contacts of the big account written`)

  const stop = await jobRunnerFor(deps, moduleJobs(mountedModules, services), (message, error) =>
    console.error(message, error),
  ).start()
  const sends = services.templateSends

  /**
   * The small accounts send every EVERY_MS for `seconds` (or until `done` says so); answers each send's id and when
   * it was queued.
   */
  async function smallSends(seconds: number, done?: () => boolean) {
    const queued: Array<{ accountId: string; id: string; at: number }> = []
    const until = Date.now() + seconds * 1000
    const going = done ? () => !done() : () => Date.now() < until
    let n = 0
    await Promise.all(
      smallOnes.map(async ({ tenant, templateId, contactId }, i) => {
        // the two accounts half a period apart, as two independent shops would be
        await new Promise((r) => setTimeout(r, (EVERY_MS / 2) * i))
        while (going()) {
          const next = Date.now() + EVERY_MS
          const at = Date.now()
          const { send_id } = await sends.queue(tenant, {
            contact_id: contactId,
            template: { id: templateId, variables: { nummer: `A-${++n}` } },
          })
          queued.push({ accountId: tenant.accountId, id: send_id, at })
          await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())))
        }
      }),
    )
    return queued
  }

  /** POST-to-sent latencies (ms) of the given sends, waiting up to 30 s for the last ones; unsent ones count as such. */
  async function latencies(queued: Array<{ accountId: string; id: string; at: number }>) {
    const deadline = Date.now() + 30_000
    for (;;) {
      const rows = await database.query<{ id: string; status: string; sent_at: Date | string | null }>(
        `SELECT id, status, sent_at FROM template_sends WHERE id = ANY($1::uuid[])`,
        [`{${queued.map((q) => q.id).join(',')}}`],
      )
      const sentAt = new Map(rows.filter((r) => r.sent_at).map((r) => [r.id, new Date(r.sent_at as string).getTime()]))
      if (sentAt.size === queued.length || Date.now() > deadline) {
        const values = queued.flatMap((q) => (sentAt.has(q.id) ? [(sentAt.get(q.id) as number) - q.at] : []))
        return {
          values: values.sort((a, b) => a - b),
          unsent: queued.length - values.length,
          stages: await stagesOf(queued),
        }
      }
      await new Promise((r) => setTimeout(r, 200))
    }
  }

  /**
   * Where the sends' time went, medians: accepted (the call until the send record's commit time), waiting for the
   * worker and the number's slot (until `sent_at`, when the provider call began) and answered and stored (until the
   * outbound message's row).
   */
  async function stagesOf(queued: Array<{ accountId: string; id: string; at: number }>) {
    const at = new Map(queued.map((q) => [q.id, q.at]))
    const rows = await database.query<{
      id: string
      created_at: string
      message_at: string | null
      sent_at: string | null
    }>(
      `SELECT s.id, s.created_at, m.created_at AS message_at, s.sent_at FROM template_sends s
         LEFT JOIN messages m ON m.account_id = s.account_id AND m.id = s.message_id
       WHERE s.id = ANY($1::uuid[])`,
      [`{${queued.map((q) => q.id).join(',')}}`],
    )
    const median = (list: number[]) => list.sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? NaN
    const time = (v: string | Date) => new Date(v).getTime()
    const done = rows.filter((r) => r.message_at && r.sent_at)
    return (
      `accepted ${median(done.map((r) => time(r.created_at) - (at.get(r.id) as number)))} ms, ` +
      `to the provider call ${median(done.map((r) => time(r.sent_at as string) - time(r.created_at)))} ms, ` +
      `answered and stored ${median(done.map((r) => time(r.message_at as string) - time(r.sent_at as string)))} ms (medians)`
    )
  }

  const pct = (sorted: number[], p: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
  const describe = ({ values, unsent, stages }: { values: number[]; unsent: number; stages: string }) =>
    `${values.length} sends: p50 ${pct(values, 50)} ms, p95 ${pct(values, 95)} ms, p99 ${pct(values, 99)} ms, max ${values.at(-1)} ms${unsent ? `, ${unsent} NOT SENT within 30 s` : ''}; ${stages}`

  const bigSent = async () => {
    const [row] = await database.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM template_sends WHERE account_id = $1 AND status IN ('sent', 'delivered', 'read')`,
      [big.accountId],
    )
    return Number(row.n)
  }

  // 1. the small accounts alone
  const idle = await latencies(await smallSends(SECONDS))
  phase(`small accounts alone: ${describe(idle)}`)

  if (NOISE === 'import') {
    // 2. an import alone, then another (into a new account) while the small accounts send
    const dir = mkdtempSync(path.join(tmpdir(), 'herold-bench-fair-'))
    const file = path.join(dir, 'contacts.csv')
    const lines = ['name,email,phone,tags']
    for (let i = 0; i < IMPORT_ROWS; i++)
      lines.push(
        `Kunde ${i},kunde${i}@import.example,${i % 2 ? `+49 160 ${String(i).padStart(8, '0')}` : ''},${i % 10 ? '' : 'messe'}`,
      )
    writeFileSync(file, `${lines.join('\n')}\n`)
    const importInto = async (name: string) => {
      const target = await newAccount(name, 80)
      // as the web app and the tool server import: in batches sized for the database
      return importContacts(database.orm, systemClock, {
        accountId: target.accountId,
        file,
        batchSize: importBatchSize(database.kind),
      })
    }
    const alone = await importInto('Import allein')
    phase(`the import alone: ${alone.rows_per_second.toLocaleString('en')} rows/s`)
    let importing = true
    const [beside, queued] = await Promise.all([
      importInto('Import daneben').finally(() => {
        importing = false
      }),
      smallSends(0, () => !importing),
    ])
    const busy = await latencies(queued)
    rmSync(dir, { recursive: true, force: true })
    await stop()
    console.log(
      `fairness: an import of ${IMPORT_ROWS.toLocaleString('en')} contacts beside two accounts sending one template message every ${EVERY_MS} ms (${database.kind}, ${config.workerConcurrency} workers)`,
    )
    console.log(`  small accounts, nobody else working: ${describe(idle)}`)
    console.log(`  small accounts, beside the import:   ${describe(busy)}`)
    console.log(
      `  ratio beside / alone: p50 ${(pct(busy.values, 50) / pct(idle.values, 50)).toFixed(2)} (goal ≤ 2), max ${busy.values.at(-1)} ms (goal ≤ 1000)`,
    )
    console.log(
      `  the import: alone ${alone.rows_per_second.toLocaleString('en')} rows/s, beside the small accounts ${beside.rows_per_second.toLocaleString('en')} rows/s (${(beside.rows_per_second / alone.rows_per_second).toFixed(2)})`,
    )
  } else {
    // 2. the newsletter: fan-out, then its pace alone
    const newsletters = services.newsletters
    const draft = await newsletters.create(big, {
      subject: 'Sommerfest',
      content: 'Hallo {{name}}, wir feiern am Samstag.',
    })
    await newsletters.schedule(big, draft.id, { scheduled_at: new Date(Date.now() + 500).toISOString() })
    // sending starts with the fan-out's first batch; the window starts once the fan-out is done and a few seconds of
    // sends went out, so the pace alone is the sends' own
    for (;;) {
      const [row] = await database.query<{ phase: string }>(
        'SELECT phase FROM newsletters WHERE account_id = $1 AND id = $2',
        [big.accountId, draft.id],
      )
      if (row?.phase === 'sending' && (await bigSent()) >= PACE * 2) break
      await new Promise((r) => setTimeout(r, 100))
    }
    phase('the newsletter is sending, its fan-out done')
    const measure = async <T>(during: () => Promise<T>) => {
      const before = await bigSent()
      const started = performance.now()
      const cpu = process.cpuUsage()
      const threadCpu = process.threadCpuUsage()
      // where a send waits: for a connection of the pool (or the embedded gate), or for the server's thread
      const loop = monitorEventLoopDelay({ resolution: 5 })
      loop.enable()
      let samples = 0
      let waitingSamples = 0
      let maxWaiting = 0
      const sampler = setInterval(() => {
        const { waiting } = database.poolUse()
        samples++
        if (waiting > 0) waitingSamples++
        maxWaiting = Math.max(maxWaiting, waiting)
      }, 10)
      const result = await during()
      clearInterval(sampler)
      loop.disable()
      const waits =
        `statements waiting for a connection in ${((100 * waitingSamples) / Math.max(samples, 1)).toFixed(0)} % of ` +
        `samples (at most ${maxWaiting}); event loop delay p50 ${(loop.percentile(50) / 1e6).toFixed(1)} ms, ` +
        `p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms`
      const ms = ({ user, system }: NodeJS.CpuUsage) => (user + system) / 1000
      const cpuMs = ms(process.cpuUsage(cpu))
      const threadCpuMs = ms(process.threadCpuUsage(threadCpu))
      const sent = (await bigSent()) - before
      const rate = sent / ((performance.now() - started) / 1000)
      // CPU a newsletter send: the process's, and its main thread's (the rest is the embedded database's own thread)
      const perSend = `${(cpuMs / Math.max(sent, 1)).toFixed(2)} ms (main thread ${(threadCpuMs / Math.max(sent, 1)).toFixed(2)} ms)`
      return { result, rate, perSend, waits }
    }
    const alone = await measure(() => new Promise((r) => setTimeout(r, SECONDS * 1000)))
    const newsletterPhase = async () =>
      (
        await database.query<{ phase: string }>('SELECT phase FROM newsletters WHERE account_id = $1 AND id = $2', [
          big.accountId,
          draft.id,
        ])
      )[0]?.phase
    phase(`the newsletter alone: ${alone.rate.toFixed(0)}/s (phase ${await newsletterPhase()}); ${alone.waits}`)

    // 3. both at once
    const both = await measure(() => smallSends(SECONDS))
    const busy = await latencies(both.result)
    phase(`both: ${describe(busy)}; newsletter ${both.rate.toFixed(0)}/s; ${both.waits}`)
    const [queuedJobs] = await database.query<{ queued: number; running: number }>(
      `SELECT count(*) FILTER (WHERE state = 'queued')::int AS queued, count(*) FILTER (WHERE state = 'running')::int AS running
     FROM jobs WHERE account_id = $1 AND queue = 'messaging.template_send'`,
      [big.accountId],
    )
    await stop()

    console.log(
      `fairness: a newsletter to ${CONTACTS.toLocaleString('en')} at ${PACE}/s beside two accounts sending one template message every ${EVERY_MS} ms (${database.kind}, ${config.workerConcurrency} workers, ${SECONDS} s windows)`,
    )
    console.log(`  small accounts, nobody else sending:   ${describe(idle)}`)
    console.log(`  small accounts, beside the newsletter: ${describe(busy)}`)
    console.log(
      `  ratio beside / alone: p50 ${(pct(busy.values, 50) / pct(idle.values, 50)).toFixed(2)} (goal ≤ 2), max ${busy.values.at(-1)} ms (goal ≤ 1000)`,
    )
    console.log(
      `  the newsletter: alone ${alone.rate.toFixed(0)}/s = ${(alone.rate / PACE).toFixed(2)} of its pace (goal ≥ 0.9), beside the small accounts ${both.rate.toFixed(0)}/s = ${(both.rate / PACE).toFixed(2)} (goal ≥ 0.8); CPU a send alone ${alone.perSend}; its send jobs at the end: ${queuedJobs.queued} queued, ${queuedJobs.running} running`,
    )
    console.log(`  while both sent: ${both.waits}`)
  }
  await services.close()
} finally {
  await database.close()
  await fresh?.drop()
}
