/**
 * How the server's process runs: settings that Node and glibc read only when the process starts, so `herold serve`
 * (src/cli/main.ts) re-executes itself once with them (`process.execve`: same process id, same arguments, before
 * anything is loaded). bench/newsletters.ts does the same, so its figures are the server's.
 *
 * - glibc's malloc keeps what a start frees (mostly the WebAssembly compiler's work memory for the embedded
 *   database, about 130 MB) in its heap for the life of the process. With these thresholds large blocks are mapped
 *   and returned on their own and the heap is trimmed. Set either variable to choose your own (or opt out).
 * - V8's heap: by default its young generation may grow to 3 × 16 MB of semi-spaces and the old generation grows to
 *   up to 4 × what is live before a full collection, on a machine with this much memory. A server sending a
 *   newsletter has about 45 MB live and hundreds of MB of garbage (the short-lived rows and buffers of 256 sends in
 *   flight): RSS 328–401 MB while sending. With semi-spaces of 4 MB and an old generation limit of 256 MB (V8 then
 *   grows the heap by at most 1.3 × what is live) it stays under 200 MB (docs/performance.md). An operator who sets
 *   either flag (NODE_OPTIONS, or node's own arguments) keeps their value.
 */

export const MALLOC_SETTINGS: Readonly<Record<string, string>> = {
  MALLOC_TRIM_THRESHOLD_: '131072',
  MALLOC_MMAP_THRESHOLD_: '131072',
}

export const V8_FLAGS: readonly string[] = ['--max-semi-space-size=4', '--max-old-space-size=256']

/** `--max-old-space-size=256` → `max-old-space-size` (V8 accepts `_` for `-` in flag names) */
const flagName = (flag: string) => flag.replace(/^--/, '').split('=')[0].replaceAll('_', '-')

export interface Relaunch {
  /** node's arguments before the script's */
  execArgv: string[]
  env: Record<string, string | undefined>
}

/**
 * What the process must be re-executed with, or null when it already runs with the settings (or their owner chose
 * their own). Pure, so the rules are testable; `relaunchWithServerSettings` applies them.
 */
export function serverRelaunch(env: NodeJS.ProcessEnv, execArgv: readonly string[], platform = process.platform) {
  if (platform !== 'linux') return null
  const given = new Set(
    [...execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/)].filter((a) => a.startsWith('--')).map(flagName),
  )
  const flags = V8_FLAGS.filter((flag) => !given.has(flagName(flag)))
  const malloc = env.MALLOC_TRIM_THRESHOLD_ === undefined && env.MALLOC_MMAP_THRESHOLD_ === undefined
  if (flags.length === 0 && !malloc) return null
  return {
    execArgv: [...flags, ...execArgv],
    env: malloc ? { ...env, ...MALLOC_SETTINGS } : { ...env },
  } satisfies Relaunch
}

/** Re-executes this process with the server's settings when it does not run with them yet; returns otherwise. */
export function relaunchWithServerSettings(): void {
  if (typeof process.execve !== 'function') return
  const relaunch = serverRelaunch(process.env, process.execArgv)
  if (!relaunch) return
  process.execve(
    process.execPath,
    [process.execPath, ...relaunch.execArgv, ...process.argv.slice(1)],
    relaunch.env as Record<string, string>,
  )
}
