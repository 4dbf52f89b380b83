/**
 * Newsletter benchmark: BENCH_CONTACTS confirmed contacts (default 1,000,000, written with generate_series), one
 * newsletter to all of them, the sandbox number paced at BENCH_PACE (default 1,000/s, daily limit unlimited).
 * Measures the fan-out (the recipients snapshot written as send records, the first send jobs beside them) with the
 * process's RSS (sampled every 50 ms, and the kernel's high-water mark VmHWM) at rest, while it runs and while the
 * sends run, then the sends per second over BENCH_SEND_SECONDS (default 60) against the pace.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node bench/newsletters.ts   (a fresh database beside it)
 *   node bench/newsletters.ts                                                            embedded PGlite in memory
 *   BENCH_CONTACTS=100000 BENCH_SEND_SECONDS=20 node bench/newsletters.ts
 *
 * The contacts are written with their search index dropped and built again afterwards (a million rows in about a
 * minute instead of several).
 *
 * The newsletter has a CTA, tracked (an https public address): the fan-out writes a short link per recipient beside
 * each send record. BENCH_CTA=0 sends it without one.
 */
// The process is set up as `herold serve` sets itself up (src/cli/main.ts), so its RSS compares with the server's:
// glibc's trim and mmap thresholds and V8's heap limits (src/cli/process-settings.ts, re-executing once, same pid,
// before anything is loaded) and the module resolve hook that keeps drizzle's package.json from being parsed a
// thousand times. BENCH_SERVER_MEMORY=0 skips all of them.
import { relaunchWithServerSettings } from '../src/cli/process-settings.ts'
import { installDrizzleResolveHook } from '../src/platform/drizzle-resolve-hook.ts'

const serverLike = process.env.BENCH_SERVER_MEMORY !== '0'
if (serverLike) relaunchWithServerSettings()
if (serverLike) installDrizzleResolveHook()
await import('./newsletters-run.ts')
