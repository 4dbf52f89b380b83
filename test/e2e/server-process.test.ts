import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { childEnv, freePort, ROOT, startProcess, tempDataDir } from '../helpers/process.ts'

const linux = process.platform === 'linux'

test('the start script runs the server with the memory settings of src/cli/process-settings.ts', () => {
  const scripts = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).scripts
  assert.equal(scripts.start, 'node src/cli/main.ts serve', 'npm start is the CLI entry that applies them')
})

test('herold serve on a new data directory: the database is created, the process runs with the V8 limits and the malloc thresholds', {
  skip: !linux && 'the settings apply on Linux',
}, async () => {
  const dataDir = tempDataDir()
  const port = await freePort()
  const server = await startProcess(
    process.execPath,
    ['src/cli/main.ts', 'serve', '--json'],
    childEnv({ HEROLD_DATA_DIR: dataDir, PORT: String(port), NODE_OPTIONS: undefined }),
    // `--json` prints this line once the server is up and its signal handlers are in place
    (output) => /\{"url":"(http:[^"]+)","role"/.exec(output)?.[1] ?? null,
  )
  try {
    // re-executed in place: the same process id, with the flags before the script
    const pid = server.child.pid!
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    assert.deepEqual(argv.slice(1, 4), [
      '--max-semi-space-size=4',
      '--max-old-space-size=256',
      path.join(ROOT, 'src/cli/main.ts'),
    ])
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
    assert.ok(environ.includes('MALLOC_TRIM_THRESHOLD_=131072'))
    assert.ok(environ.includes('MALLOC_MMAP_THRESHOLD_=131072'))
    // the data directory was created (by a child process) and the server answers on it
    assert.ok(existsSync(path.join(dataDir, 'PG_VERSION')))
    assert.match(server.output(), /HEROLD_API_KEY=hk_/)
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200)
  } finally {
    assert.equal(await server.stop(), 0)
  }
})
