import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { describe, test } from 'node:test'
import { dataCommands } from '../../src/cli/commands.ts'
import { childEnv, freePort, listeningAt, ROOT, runCli, startProcess, tempDataDir } from '../helpers/process.ts'

/** --json prints exactly one JSON object and nothing else on stdout. */
function oneJsonObject(stdout: string): Record<string, unknown> {
  const value = JSON.parse(stdout)
  assert.equal(typeof value, 'object')
  assert.ok(value !== null && !Array.isArray(value))
  assert.equal(stdout.trim().split('\n').length, 1)
  return value
}

async function adminFlow(env: NodeJS.ProcessEnv, call: (path: string, key: string) => Promise<number> | null) {
  const plan = `gold-${Date.now()}`
  const planSet = await runCli(
    ['plans', 'set', plan, '--contacts', '500', '--messages-per-month', '900', '--webhooks', '3', '--json'],
    env,
  )
  assert.equal(planSet.code, 0, planSet.stderr)
  assert.deepEqual(oneJsonObject(planSet.stdout), {
    name: plan,
    contacts: 500,
    messages_per_month: 900,
    webhooks: 3,
    requests_per_minute: 120,
  })
  const faster = await runCli(
    ['plans', 'set', plan, '--contacts', '500', '--messages-per-month', '900', '--webhooks', '3'].concat([
      '--requests-per-minute',
      '600',
      '--json',
    ]),
    env,
  )
  assert.equal(oneJsonObject(faster.stdout).requests_per_minute, 600)
  const unchanged = await runCli(
    ['plans', 'set', plan, '--contacts', '501', '--messages-per-month', '900', '--webhooks', '3', '--json'],
    env,
  )
  assert.equal(oneJsonObject(unchanged.stdout).requests_per_minute, 600, 'kept when not given')
  const zero = await runCli(
    ['plans', 'set', plan, '--contacts', '500', '--messages-per-month', '900', '--webhooks', '3'].concat([
      '--requests-per-minute',
      '0',
    ]),
    env,
  )
  assert.notEqual(zero.code, 0)
  assert.match(zero.stderr + zero.stdout, /requests-per-minute/)

  const created = await runCli(
    ['accounts', 'create', '--name', 'Bäckerei Schulz', '--language', 'en', '--timezone', 'America/New_York', '--json'],
    env,
  )
  assert.equal(created.code, 0, created.stderr)
  const account = oneJsonObject(created.stdout)
  assert.equal(account.name, 'Bäckerei Schulz')
  assert.equal(account.language, 'en')
  assert.equal(account.timezone, 'America/New_York')
  assert.equal(account.plan, 'default')
  const id = String(account.id)

  const defaults = oneJsonObject((await runCli(['accounts', 'create', '--name', 'Plain', '--json'], env)).stdout)
  assert.equal(defaults.language, 'de')
  assert.equal(defaults.timezone, 'Europe/Berlin')

  const key = oneJsonObject(
    (
      await runCli(
        ['keys', 'create', '--account', id, '--name', 'zapier', '--scopes', 'contacts:read,inbox:read', '--json'],
        env,
      )
    ).stdout,
  )
  assert.deepEqual(Object.keys(key).sort(), ['account_id', 'id', 'key', 'name', 'prefix', 'scopes'])
  assert.match(String(key.key), /^hk_/)
  assert.ok(String(key.key).startsWith(String(key.prefix)))
  assert.deepEqual(key.scopes, ['contacts:read', 'inbox:read'])

  const listed = await runCli(['keys', 'list', '--account', id, '--json'], env)
  const keys = oneJsonObject(listed.stdout).keys as Record<string, unknown>[]
  assert.equal(keys.length, 1)
  assert.equal(keys[0].prefix, key.prefix)
  assert.ok(!listed.stdout.includes(String(key.key)), 'the secret is never shown again')

  const status = (path: string) => call(path, String(key.key))
  if (call('/v1/me', String(key.key))) assert.equal(await status('/v1/me'), 200)

  const setPlan = oneJsonObject((await runCli(['accounts', 'set-plan', id, plan, '--json'], env)).stdout)
  assert.equal(setPlan.plan, plan)
  assert.equal(
    oneJsonObject((await runCli(['accounts', 'pause-sending', id, '--json'], env)).stdout).sending_paused,
    true,
  )
  assert.equal(
    oneJsonObject((await runCli(['accounts', 'resume-sending', id, '--json'], env)).stdout).sending_paused,
    false,
  )
  assert.equal(oneJsonObject((await runCli(['accounts', 'block', id, '--json'], env)).stdout).status, 'blocked')
  if (call('/v1/me', String(key.key))) assert.equal(await status('/v1/me'), 403)
  assert.equal(oneJsonObject((await runCli(['accounts', 'unblock', id, '--json'], env)).stdout).status, 'active')

  const revoked = oneJsonObject((await runCli(['keys', 'revoke', String(key.id), '--json'], env)).stdout)
  assert.ok(revoked.revoked_at)
  if (call('/v1/me', String(key.key))) assert.equal(await status('/v1/me'), 401)

  const all = oneJsonObject((await runCli(['accounts', 'list', '--json'], env)).stdout).accounts as { id: string }[]
  assert.ok(all.some((a) => a.id === id))

  const bad = await runCli(['accounts', 'create', '--name', 'X', '--plan', 'no-such-plan', '--json'], env)
  assert.equal(bad.code, 2)
  assert.match(String((oneJsonObject(bad.stdout).error as { message: string }).message), /no-such-plan/)
  const badScope = await runCli(['keys', 'create', '--account', id, '--name', 'x', '--scopes', 'contacts:admin'], env)
  assert.equal(badScope.code, 2)
  assert.match(badScope.stderr, /contacts:admin/)
}

describe('herold CLI', () => {
  test('every command answers --help with its usage', async () => {
    const env = childEnv({ HEROLD_DATA_DIR: tempDataDir() })
    const top = await runCli(['--help'], env)
    assert.equal(top.code, 0)
    for (const name of [...Object.keys(dataCommands), 'serve']) {
      assert.ok(top.stdout.includes(name), `top-level help names ${name}`)
      const help = await runCli([...name.split(' '), '--help'], env)
      assert.equal(help.code, 0, `${name} --help`)
      assert.match(help.stdout, new RegExp(`herold ${name}`))
      assert.match(help.stdout, /--json/)
    }
  })

  test('works on the embedded data directory without a server', async () => {
    await adminFlow(childEnv({ HEROLD_DATA_DIR: tempDataDir() }), () => null)
  })

  test('works through the running server that holds the embedded data directory', async () => {
    const dataDir = tempDataDir()
    const port = await freePort()
    const env = childEnv({ HEROLD_DATA_DIR: dataDir, PORT: String(port) })
    const server = await startProcess(process.execPath, ['src/cli/main.ts', 'serve'], env, listeningAt)
    try {
      await adminFlow(
        env,
        async (path, key) =>
          (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}` } })).status,
      )
    } finally {
      await server.stop()
    }
  })

  test('works on DATABASE_URL', {
    skip: !process.env.HEROLD_TEST_DATABASE_URL && 'set HEROLD_TEST_DATABASE_URL',
  }, async () => {
    await adminFlow(childEnv({ DATABASE_URL: process.env.HEROLD_TEST_DATABASE_URL }), () => null)
  })

  test('herold serve --json prints one JSON object on stdout; the logs go to stderr', async () => {
    const env = childEnv({ HEROLD_DATA_DIR: tempDataDir(), PORT: String(await freePort()) })
    const child = spawn(process.execPath, ['src/cli/main.ts', 'serve', '--json'], { cwd: ROOT, env })
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    const exited = new Promise((resolve) => child.on('exit', resolve))
    const firstLine = await new Promise<string>((resolve) => {
      child.stdout.on('data', (chunk) => {
        stdout += chunk
        if (stdout.includes('\n')) resolve(stdout.split('\n')[0])
      })
    })
    const started = JSON.parse(firstLine) as { url: string; role: string }
    assert.equal(started.role, 'all')
    assert.equal((await fetch(`${started.url}/healthz`)).status, 200)
    child.kill('SIGTERM')
    await exited
    assert.equal(stdout.trim(), firstLine)
    assert.match(stderr, /HEROLD_API_KEY=hk_/, 'the first-start key is still shown, on stderr')
    assert.match(stderr, /Server listening/)
  })

  test('herold migrate --json reports what it applied', async () => {
    const env = childEnv({ HEROLD_DATA_DIR: tempDataDir() })
    const first = oneJsonObject((await runCli(['migrate', '--json'], env)).stdout)
    assert.ok((first.applied as string[]).length >= 1)
    const second = oneJsonObject((await runCli(['migrate', '--json'], env)).stdout)
    assert.deepEqual(second.applied, [])
  })

  test('an unknown command exits non-zero with a message', async () => {
    const result = await runCli(['accounts', 'explode'], childEnv({ HEROLD_DATA_DIR: tempDataDir() }))
    assert.notEqual(result.code, 0)
    assert.match(result.stderr, /unknown command/)
  })
})
