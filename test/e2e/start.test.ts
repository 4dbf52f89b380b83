import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import path from 'node:path'
import { test } from 'node:test'
import { childEnv, freePort, listeningAt, startProcess, tempDataDir } from '../helpers/process.ts'

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

test('npm start on a fresh data directory prints a key once; the key answers GET /v1/me; a restart prints nothing', async () => {
  const dataDir = tempDataDir()
  const port = await freePort()
  const env = childEnv({ HEROLD_DATA_DIR: dataDir, PORT: String(port) })

  const first = await startProcess(npm, ['start'], env, listeningAt)
  const key = /HEROLD_API_KEY=(hk_[A-Za-z0-9_-]+)/.exec(first.output())?.[1]
  assert.ok(key, `a key is printed:\n${first.output()}`)
  assert.match(
    first.output(),
    new RegExp(`curl -H "Authorization: Bearer ${key}" http://127\\.0\\.0\\.1:${port}/v1/me`),
  )

  const me = await fetch(`${first.url}/v1/me`, { headers: { authorization: `Bearer ${key}` } })
  assert.equal(me.status, 200)
  const body = (await me.json()) as { account: { name: string }; scopes: string[]; auth_type: string }
  assert.equal(body.account.name, 'Default')
  assert.equal(body.auth_type, 'api_key')
  assert.equal(body.scopes.length, 27)
  await first.stop()
  // npm itself exits at once on SIGTERM; the server it started finishes its shutdown after it.
  assert.ok(await released(dataDir), 'a clean shutdown releases the data directory')

  const second = await startProcess(npm, ['start'], env, listeningAt)
  assert.doesNotMatch(second.output(), /hk_/)
  const again = await fetch(`${second.url}/v1/me`, { headers: { authorization: `Bearer ${key}` } })
  assert.equal(again.status, 200, 'the first key still works after a restart')
  await second.stop()
  assert.ok(await released(dataDir))
})

test('SIGTERM lets an in-flight request finish before the process exits', async () => {
  const dataDir = tempDataDir()
  const port = await freePort()
  const server = await startProcess(
    process.execPath,
    ['src/cli/main.ts', 'serve'],
    childEnv({ HEROLD_DATA_DIR: dataDir, PORT: String(port) }),
    listeningAt,
  )
  // A request whose body is still arriving when the signal comes.
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = httpRequest(`${server.url}/v1/me`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '2' },
    })
    req.on('response', (res) => {
      let body = ''
      res.on('data', (c) => {
        body += c
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
    })
    req.on('error', reject)
    req.write('{', async () => {
      // The server reads sockets in the order data arrived: once a request sent after this one is
      // answered, this one's headers have been routed, however loaded the machine is.
      try {
        await fetch(`${server.url}/healthz`)
      } catch (error) {
        reject(error)
        return
      }
      process.kill(-server.child.pid!, 'SIGTERM')
      setTimeout(() => req.end('}'), 300)
    })
  })
  const finished = await response
  assert.equal(finished.status, 404, 'the request got its full answer (no route POST /v1/me) instead of a reset')
  assert.equal(JSON.parse(finished.body).error.code, 'not_found')
  assert.equal(await server.stop(), 0)
})

async function released(dataDir: string): Promise<boolean> {
  for (let i = 0; i < 300; i++) {
    if (!existsSync(path.join(dataDir, 'server.json'))) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return false
}
