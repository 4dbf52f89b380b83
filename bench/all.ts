// npm run bench: every benchmark at a small size, one after another, on the embedded database (and on PostgreSQL
// too where DATABASE_URL or BENCH_ADMIN_URL is set and a benchmark takes it). Each prints its own figures and
// same-run baselines; the sizes here are for a quick look, the defaults of each script for the real figures.
import { spawnSync } from 'node:child_process'

const runs: Array<[string, Record<string, string>]> = [
  ['bench/api.ts', { BENCH_CONTACTS: '5000', BENCH_SECONDS: '3', BENCH_EMBEDDED_ONLY: '1' }],
  ['bench/contacts.ts', { BENCH_IMPORT_ROWS: '10000', BENCH_RUNS: '50', BENCH_EMBEDDED_ONLY: '1' }],
  ['bench/inbound.ts', { BENCH_MESSAGES: '1000' }],
  ['bench/webhooks.ts', { BENCH_EVENTS: '1000', BENCH_BACKLOG: '1000' }],
  [
    'bench/accept.ts',
    { BENCH_SECONDS: '3', BENCH_ROUNDS: '1', BENCH_CONTACTS: '200', BENCH_SETTLE: '0', BENCH_EMBEDDED_ONLY: '1' },
  ],
  ['bench/sends.ts', { BENCH_SENDS: '1000', BENCH_CONTACTS: '200', BENCH_ROUTE_SENDS: '200' }],
  ['bench/automations.ts', { BENCH_CONTACTS: '500' }],
  ['bench/newsletters.ts', { BENCH_CONTACTS: '5000', BENCH_SEND_SECONDS: '10' }],
  ['bench/stats.ts', { BENCH_CONTACTS: '20000', BENCH_MESSAGES: '200000', BENCH_WRITES: '500', BENCH_RUNS: '100' }],
  ['bench/followups.ts', { BENCH_CONTACTS: '2000', BENCH_SEND_SECONDS: '10' }],
  ['bench/fairness.ts', { BENCH_CONTACTS: '5000', BENCH_SECONDS: '4', BENCH_PACE: '200' }],
]
// runs only on PostgreSQL (it compares servers on it with and without an embedded database beside them)
if (process.env.BENCH_ADMIN_URL) runs.push(['bench/embedded-isolate.ts', { BENCH_PROCESSES: '1', BENCH_SECONDS: '2' }])

const started = performance.now()
let failed = 0
for (const [script, env] of runs) {
  const sizes = Object.entries(env)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')
  console.log(`\n== ${script} (${sizes})`)
  const result = spawnSync(process.execPath, [script], { stdio: 'inherit', env: { ...process.env, ...env } })
  if (result.status !== 0) {
    failed++
    console.log(`!! ${script} exited with ${result.status ?? result.signal}`)
  }
}
console.log(
  `\nall benchmarks in ${((performance.now() - started) / 1000).toFixed(0)} s${failed ? `, ${failed} failed` : ''}`,
)
process.exit(failed ? 1 : 0)
