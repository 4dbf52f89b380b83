import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { childEnv, freePort, listeningAt, runCli, startProcess, tempDataDir } from '../helpers/process.ts'

async function serve(dataDir: string) {
  const port = await freePort()
  const env = childEnv({ HEROLD_DATA_DIR: dataDir, PORT: String(port), HEROLD_ALLOW_PRIVATE_TARGETS: 'true' })
  const server = await startProcess(process.execPath, ['src/cli/main.ts', 'serve'], env, listeningAt)
  return { server, env }
}

test('herold backup while the server answers requests; herold restore into an empty directory starts with the same data', async () => {
  const original = tempDataDir()
  const { server, env } = await serve(original)
  const key = /HEROLD_API_KEY=(hk_[A-Za-z0-9_-]+)/.exec(server.output())?.[1]
  assert.ok(key)
  const call = (base: string, method: string, url: string, body?: unknown) =>
    fetch(`${base}${url}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    })
  for (let i = 0; i < 20; i++) {
    const created = await call(server.url, 'POST', '/v1/contacts', {
      name: `Vorher ${i}`,
      phone: `+4915200000${100 + i}`,
    })
    assert.equal(created.status, 201)
  }
  const automation = (await (
    await call(server.url, 'POST', '/v1/automations', {
      name: 'Shop',
      trigger: { type: 'webhook' },
      steps: [{ type: 'add_tag', tag: 'shop' }],
    })
  ).json()) as { id: string; webhook_url: string }
  assert.match(automation.webhook_url, /automation-hooks/)

  // writes keep arriving while the backup is taken
  let writing = true
  let written = 0
  const writer = (async () => {
    // paced and bounded: the plan's rate limit (120 requests a minute per key) must not answer 429 here
    while (writing && written < 40) {
      const response = await call(server.url, 'POST', '/v1/contacts', {
        name: `Waehrend ${written}`,
        phone: `+4915300000${1000 + written}`,
      })
      assert.equal(response.status, 201)
      written++
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })()
  const file = path.join(tempDataDir(), 'herold.backup')
  const backup = await runCli(['backup', '--out', file, '--json'], env)
  writing = false
  await writer
  assert.equal(backup.code, 0, backup.stderr)
  const report = JSON.parse(backup.stdout)
  assert.equal(report.secret_key_included, true)
  assert.ok(report.bytes > 0)
  const again = await runCli(['backup', '--out', file], env)
  assert.notEqual(again.code, 0, 'an existing file is never overwritten')

  const before = ((await (await call(server.url, 'GET', '/v1/contacts?limit=200')).json()) as { contacts: unknown })
    .contacts as Array<{
    id: string
    name: string
  }>
  assert.equal(before.length, 20 + written)
  await server.stop()

  const restoredDir = path.join(tempDataDir(), 'restored')
  const restored = await runCli(['restore', file, '--json'], childEnv({ HEROLD_DATA_DIR: restoredDir }))
  assert.equal(restored.code, 0, restored.stderr)
  const occupied = tempDataDir()
  writeFileSync(path.join(occupied, 'something'), 'x')
  const refused = await runCli(['restore', file], childEnv({ HEROLD_DATA_DIR: occupied }))
  assert.notEqual(refused.code, 0)
  assert.match(refused.stderr + refused.stdout, /not empty/)

  const second = await serve(restoredDir)
  try {
    assert.doesNotMatch(second.server.output(), /hk_/, 'not a first start: the accounts and keys came back')
    const after = (
      (await (await call(second.server.url, 'GET', '/v1/contacts?limit=200')).json()) as { contacts: unknown }
    ).contacts as Array<{
      id: string
      name: string
    }>
    const names = new Set(after.map((c) => c.name))
    for (let i = 0; i < 20; i++) assert.ok(names.has(`Vorher ${i}`), `Vorher ${i} was written before the backup`)
    const known = new Set(before.map((c) => c.id))
    for (const contact of after) assert.ok(known.has(contact.id), 'nothing appears that the server never had')
    const sameAutomation = (await (
      await call(second.server.url, 'GET', `/v1/automations/${automation.id}`)
    ).json()) as { webhook_url: string }
    assert.equal(
      sameAutomation.webhook_url.replace(second.server.url, ''),
      automation.webhook_url.replace(server.url, ''),
      'the address decrypts with the restored secret.key',
    )
  } finally {
    await second.server.stop()
  }
})
