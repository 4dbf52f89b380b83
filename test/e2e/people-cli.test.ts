import assert from 'node:assert/strict'
import { test } from 'node:test'
import { childEnv, freePort, listeningAt, runCli, startProcess, tempDataDir } from '../helpers/process.ts'

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm'

async function signIn(url: string, email: string, password: string) {
  return fetch(`${url}/app/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })
}

test('npm start prints a one-time setup link beside the key; herold users create|list|set-role|remove|setup-link work against the running server', async () => {
  const dataDir = tempDataDir()
  const port = await freePort()
  const env = childEnv({ HEROLD_DATA_DIR: dataDir, PORT: String(port) })
  const server = await startProcess(npm, ['start'], env, listeningAt)
  try {
    const output = server.output()
    const setup = new RegExp(`http://127\\.0\\.0\\.1:${port}/setup/([A-Za-z0-9_-]{43})`).exec(output)
    assert.ok(setup, `a setup link is printed:\n${output}`)
    assert.match(output, /HEROLD_API_KEY=hk_/)
    const key = /HEROLD_API_KEY=(hk_[A-Za-z0-9_-]+)/.exec(output)![1]
    const me = (await (await fetch(`${server.url}/v1/me`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
      account: { id: string }
    }
    const account = me.account.id
    assert.equal((await fetch(`${server.url}/app/setup/${setup[1]}`)).status, 200, 'the printed link is valid')

    const created = await runCli(
      [
        'users',
        'create',
        '--account',
        account,
        '--email',
        'Ada@Example.org',
        '--name',
        'Ada',
        '--role',
        'admin',
        '--password-stdin',
        '--json',
      ],
      env,
      'a long enough password\n',
    )
    assert.equal(created.code, 0, created.stderr)
    const ada = JSON.parse(created.stdout)
    assert.equal(ada.email, 'ada@example.org')
    assert.equal(ada.role, 'admin')
    assert.equal(ada.status, 'active')
    assert.equal((await signIn(server.url, 'ada@example.org', 'a long enough password')).status, 200)

    const invited = await runCli(
      ['users', 'create', '--account', account, '--email', 'bob@example.org', '--role', 'viewer', '--json'],
      env,
    )
    assert.equal(invited.code, 0, invited.stderr)
    assert.match(
      JSON.parse(invited.stdout).invite_url,
      new RegExp(`^http://127\\.0\\.0\\.1:${port}/invitations/[A-Za-z0-9_-]{43}$`),
    )

    const listed = await runCli(['users', 'list', '--account', account, '--json'], env)
    assert.deepEqual(
      JSON.parse(listed.stdout).members.map((m: { email: string; role: string; status: string }) => [
        m.email,
        m.role,
        m.status,
      ]),
      [
        ['ada@example.org', 'admin', 'active'],
        ['bob@example.org', 'viewer', 'invited'],
      ],
    )
    const human = await runCli(['users', 'list', '--account', account], env)
    assert.match(human.stdout, /ada@example\.org {2}Ada {2}role=admin {2}status=active/)

    const bad = await runCli(
      ['users', 'set-role', '--account', account, '--email', 'ada@example.org', '--role', 'king'],
      env,
    )
    assert.notEqual(bad.code, 0)
    assert.match(bad.stderr, /--role must be owner, admin, member or viewer/)
    const owner = await runCli(
      ['users', 'set-role', '--account', account, '--email', 'ada@example.org', '--role', 'owner', '--json'],
      env,
    )
    assert.equal(JSON.parse(owner.stdout).role, 'owner')
    const last = await runCli(['users', 'remove', '--account', account, '--email', 'ada@example.org'], env)
    assert.notEqual(last.code, 0, 'the last owner stays')
    assert.match(last.stderr, /at least one active owner/)
    const removed = await runCli(['users', 'remove', '--account', account, '--email', 'bob@example.org', '--json'], env)
    assert.equal(removed.code, 0, removed.stderr)
    const unknown = await runCli(['users', 'remove', '--account', account, '--email', 'nobody@example.org'], env)
    assert.match(unknown.stderr, /no user with the e-mail nobody@example\.org/)

    const link = await runCli(['users', 'setup-link', '--account', account, '--json'], env)
    const fresh = String(JSON.parse(link.stdout).setup_url)
    assert.match(fresh, /\/setup\/[A-Za-z0-9_-]{43}$/)
    assert.equal((await fetch(`${server.url}/app/setup/${fresh.split('/').pop()}`)).status, 200)
  } finally {
    await server.stop()
  }
})
