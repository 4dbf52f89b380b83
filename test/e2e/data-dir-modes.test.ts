import assert from 'node:assert/strict'
import { chmodSync, lstatSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { childEnv, freePort, listeningAt, type ServerProcess, startProcess, tempDataDir } from '../helpers/process.ts'

/** Every file and directory under `dir` (itself included) that its group or other users may read, write or enter. */
function openToOthers(dir: string): string[] {
  const found: string[] = []
  const visit = (target: string) => {
    const stat = lstatSync(target)
    if (stat.isSymbolicLink()) return
    if ((stat.mode & 0o077) !== 0) found.push(`${(stat.mode & 0o777).toString(8)} ${path.relative(dir, target) || '.'}`)
    if (stat.isDirectory()) for (const name of readdirSync(target)) visit(path.join(target, name))
  }
  visit(dir)
  return found
}

test("the server's data directory is its user's alone: a first start's files, and an existing install's fixed at start with a warning", async (t) => {
  // a data directory that does not exist yet, as ./data on a first `npm start`
  const dataDir = path.join(tempDataDir(), 'data')
  const env = childEnv({ HEROLD_DATA_DIR: dataDir, PORT: String(await freePort()) })
  const servers: ServerProcess[] = []
  const serve = async () => {
    const server = await startProcess(process.execPath, ['src/cli/main.ts', 'serve'], env, listeningAt)
    servers.push(server)
    return server
  }
  t.after(() => Promise.all(servers.map((server) => server.stop())))

  const first = await serve()
  // a request that writes (the WAL, a table), then the files as they are while the server runs
  assert.equal((await fetch(`${first.url}/readyz`)).status, 200)
  assert.deepEqual(openToOthers(dataDir), [], 'nothing under the data directory is open to other users')
  assert.doesNotMatch(first.output(), /readable by other users/, 'a first start has nothing to warn about')
  assert.equal(await first.stop(), 0)

  // an install of an earlier version: PGlite's 0666 files, a 0777 directory, the data directory 0755
  chmodSync(dataDir, 0o755)
  chmodSync(path.join(dataDir, 'PG_VERSION'), 0o666)
  chmodSync(path.join(dataDir, 'base'), 0o777)
  const walFile = readdirSync(path.join(dataDir, 'pg_wal')).find((name) => /^[0-9A-F]{24}$/.test(name))
  assert.ok(walFile, 'the WAL has a segment')
  chmodSync(path.join(dataDir, 'pg_wal', walFile), 0o666)
  assert.ok(openToOthers(dataDir).length >= 4)

  const second = await serve()
  assert.deepEqual(openToOthers(dataDir), [])
  assert.equal(lstatSync(path.join(dataDir, 'PG_VERSION')).mode & 0o777, 0o600, 'owner rights stay')
  assert.equal(lstatSync(path.join(dataDir, 'base')).mode & 0o777, 0o700)
  const warning = second
    .output()
    .split('\n')
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>
      } catch {
        return null
      }
    })
    .find((line) => line !== null && /readable by other users/.test(String(line.msg)))
  assert.ok(warning, `the start warns that it fixed the modes:\n${second.output()}`)
  assert.equal(warning.level, 40)
  assert.equal(warning.data_dir, dataDir)
  assert.ok((warning.changed as number) >= 4)
  assert.equal(await second.stop(), 0)
})
