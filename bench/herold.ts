// What the request-path benchmarks share: Herold's server started as an operator starts it, its CLI, and a process's
// CPU time read from /proc.
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { freePort, listeningAt, runCli, startProcess, tempDataDir } from '../test/helpers/process.ts'

/** `herold serve` with env (and node's nodeArgs first); its log goes to a file, as an operator's would. */
export async function startHerold(env: NodeJS.ProcessEnv, nodeArgs: string[] = []) {
  return startProcess(
    process.execPath,
    [...nodeArgs, 'src/cli/main.ts', 'serve'],
    { ...env, PORT: String(await freePort()) },
    listeningAt,
    120_000,
    { logFile: path.join(tempDataDir(), 'herold.log') },
  )
}

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
