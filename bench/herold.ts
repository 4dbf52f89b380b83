// What the request-path benchmarks share: Herold's server started as an operator starts it, its CLI, and a process's
// CPU time read from /proc.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { freePort, listeningAt, runCli, startProcess, tempDataDir } from '../test/helpers/process.ts'

/** `herold serve` with env (and node's nodeArgs first); its log goes to a file, as an operator's would. */
export async function startHerold(env: NodeJS.ProcessEnv, nodeArgs: string[] = []) {
  // a worker serves no HTTP: it is ready once its metrics server (given a port here) is
  const worker = env.HEROLD_ROLE === 'worker'
  return startProcess(
    process.execPath,
    [...nodeArgs, 'src/cli/main.ts', 'serve'],
    { ...env, PORT: String(await freePort()), ...(worker ? { HEROLD_METRICS_PORT: String(await freePort()) } : {}) },
    worker ? metricsAt : listeningAt,
    120_000,
    { logFile: path.join(tempDataDir(), 'herold.log') },
  )
}

/** The metrics address a worker prints when it is ready (`metrics: URL/metrics`). */
const metricsAt = (output: string): string | null => /metrics: (http:\/\/\S+)\/metrics/.exec(output)?.[1] ?? null

/** `herold …args --json` with env, its JSON answer; throws with the CLI's output when it fails. */
export function heroldCli(env: NodeJS.ProcessEnv) {
  return async (args: string[]) => {
    const result = await runCli([...args, '--json'], env)
    if (result.code !== 0) throw new Error(`herold ${args.join(' ')}: ${result.stderr}${result.stdout}`)
    return JSON.parse(result.stdout)
  }
}

/** User and system CPU time of a process (all its threads) in clock ticks of 10 ms; 0 where /proc is missing. */
export function cpuTicks(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}

/** Busy and total CPU time of the whole machine so far (Linux /proc/stat, in clock ticks); zeros elsewhere. */
function machineTicks(): { busy: number; total: number } {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number)
    const total = fields.reduce((sum, value) => sum + value, 0)
    return { busy: total - fields[3] - fields[4], total }
  } catch {
    return { busy: 0, total: 0 }
  }
}

/**
 * Waits until the machine is at rest: after an import the server works off what the import queued (events,
 * statistics) and PostgreSQL writes out what the import dirtied, which a measurement right after it would count
 * against the route (in the server's CPU a request, and in the cores the two share). At rest: the whole machine
 * under 5 % busy over two seconds (an idle server spends about 2 % of a core on its timers), at most a minute.
 */
export async function settled(): Promise<number> {
  const started = performance.now()
  while (performance.now() - started < 60_000) {
    const before = machineTicks()
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const after = machineTicks()
    if (after.busy - before.busy <= 0.05 * (after.total - before.total)) break
  }
  return (performance.now() - started) / 1000
}
