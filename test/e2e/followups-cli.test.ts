import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { childEnv, freePort, listeningAt, runCli, startProcess, tempDataDir } from '../helpers/process.ts'

// biome-ignore lint/suspicious/noExplicitAny: CLI output is read loosely
type Json = Record<string, any>

const SEQUENCE = {
  name: 'Willkommen',
  steps: [
    { text: 'Hallo {{name}}, schön, dass du da bist. Hier sind unsere Tipps.', delay: { amount: 2, unit: 'hours' } },
    {
      text: 'Hallo {{name}}, kennst du schon unsere Angebote der Woche?',
      delay: { amount: 3, unit: 'days' },
      send_time: '09:30',
    },
  ],
}

function writeJson(dir: string, name: string, value: unknown): string {
  const file = path.join(dir, name)
  writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value))
  return file
}

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<Json> {
  const result = await runCli([...args, '--json'], env)
  assert.equal(result.code, 0, result.stderr + result.stdout)
  return JSON.parse(result.stdout)
}

/** accounts create, channels connect, followups create, then the mistakes; answers the account and the sequence. */
async function flow(env: NodeJS.ProcessEnv, dir: string) {
  const account = await cli(['accounts', 'create', '--name', 'Gärtnerei'], env)
  await cli(['channels', 'connect', '--account', account.id, '--provider', 'sandbox'], env)
  const created = await cli(
    ['followups', 'create', '--account', account.id, '--file', writeJson(dir, 'seq.json', SEQUENCE)],
    env,
  )
  assert.equal(created.name, 'Willkommen')
  assert.equal(created.status, 'draft')
  assert.deepEqual(created.trigger, { type: 'optin_confirmed' })
  assert.deepEqual(
    created.steps.map((s: Json) => [s.position, s.delay.amount, s.delay.unit, s.send_time, s.approval]),
    [
      [1, 2, 'hours', null, 'approved'],
      [2, 3, 'days', '09:30', 'approved'],
    ],
  )
  const human = await runCli(
    ['followups', 'create', '--account', account.id, '--file', path.join(dir, 'seq.json')],
    env,
  )
  assert.equal(human.code, 0, human.stderr)
  assert.match(human.stdout, /created as draft/)
  assert.match(human.stdout, /step 2: after 3 days, template approved/)
  for (const [name, content, pattern] of [
    ['broken.json', '{"name": ', /not valid JSON/],
    ['nosteps.json', { name: 'Leer', steps: [] }, /at least one step/],
    [
      'misspelt.json',
      { ...SEQUENCE, steps: [{ ...SEQUENCE.steps[0], dealy: { amount: 0, unit: 'hours' } }] },
      /file\.steps\[0\]\.dealy is not a known field/,
    ],
    ['badtime.json', { ...SEQUENCE, steps: [{ ...SEQUENCE.steps[0], send_time: '25:00' }] }, /send_time/],
    [
      'edge.json',
      { name: 'Kante', steps: [{ text: '{{name}}', delay: { amount: 1, unit: 'days' } }] },
      /WhatsApp template/,
    ],
  ] as const) {
    const result = await runCli(
      ['followups', 'create', '--account', account.id, '--file', writeJson(dir, name, content)],
      env,
    )
    assert.equal(result.code, 2, `${name}: ${result.stdout}${result.stderr}`)
    assert.match(result.stderr, pattern, name)
  }
  const missing = await runCli(
    ['followups', 'create', '--account', account.id, '--file', path.join(dir, 'nope.json')],
    env,
  )
  assert.notEqual(missing.code, 0)
  assert.match(missing.stderr, /no such file/)
  const key = await cli(['keys', 'create', '--account', account.id, '--name', 'k', '--scopes', 'all'], env)
  return { account, created, key: String(key.key) }
}

describe('herold followups create', () => {
  test('through the running server: the sequence is then readable and can be activated over HTTP', async () => {
    const dataDir = tempDataDir()
    const env = childEnv({ HEROLD_DATA_DIR: dataDir, PORT: String(await freePort()) })
    const server = await startProcess(process.execPath, ['src/cli/main.ts', 'serve'], env, listeningAt)
    try {
      const { created, key } = await flow(env, tempDataDir())
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
      const list = (await (await fetch(`${server.url}/v1/followups`, { headers })).json()) as Json
      assert.equal(list.followups.length, 2)
      const activated = await fetch(`${server.url}/v1/followups/${created.id}`, {
        method: 'PATCH',
        headers,
        body: JSON.stringify({ status: 'active' }),
      })
      assert.equal(activated.status, 200)
      assert.equal(((await activated.json()) as Json).followup.status, 'active')
    } finally {
      await server.stop()
    }
  })

  test('on DATABASE_URL', {
    skip: !process.env.HEROLD_TEST_DATABASE_URL && 'set HEROLD_TEST_DATABASE_URL',
  }, async () => {
    const env = childEnv({
      DATABASE_URL: process.env.HEROLD_TEST_DATABASE_URL,
      HEROLD_SECRET_KEY: randomBytes(32).toString('base64'),
    })
    await flow(env, tempDataDir())
  })
})
