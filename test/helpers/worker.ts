import { type ChildProcess, spawn } from 'node:child_process'
import type { Harness } from './harness.ts'
import { ROOT } from './process.ts'

/**
 * `herold serve --role worker` as its own process against the harness's database, resolved once it says it runs.
 * `settings` adds to or overrides its environment (a provider's address, the job lease, the concurrency). The kill
 * tests SIGKILL these children; the caller stops them.
 */
export async function startWorker(harness: Harness, settings: Record<string, string> = {}): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['src/cli/main.ts', 'serve', '--role', 'worker', '--json'], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: harness.config.databaseUrl,
      HEROLD_SECRET_KEY: harness.config.secretKey,
      HEROLD_ALLOW_PRIVATE_TARGETS: 'true',
      LOG_LEVEL: 'silent',
      ...settings,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk) => {
      out += chunk
      if (out.includes('"role":"worker"')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`worker exited early (${code}): ${out}`)))
  })
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      ready,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('worker did not start')), 120_000)
      }),
    ])
  } finally {
    clearTimeout(timer)
  }
  return child
}
