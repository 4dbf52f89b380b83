import assert from 'node:assert/strict'
import { test } from 'node:test'
import { ConfigError, loadConfig } from './config.ts'

test('defaults: port 3000 on 127.0.0.1, ./data, role all, public url from host and port', () => {
  const config = loadConfig({})
  assert.equal(config.port, 3000)
  assert.equal(config.host, '127.0.0.1')
  assert.match(config.dataDir, /\/data$/)
  assert.equal(config.role, 'all')
  assert.equal(config.publicUrl, 'http://127.0.0.1:3000')
  assert.equal(config.serviceName, 'herold')
  assert.equal(config.allowPrivateTargets, false)
  assert.equal(config.databaseUrl, undefined)
  // a number paced at 1,000 messages a second needs about 256 sends in flight (docs/sending.md)
  assert.equal(config.workerConcurrency, 256)
  assert.equal(config.databasePoolSize, 20)
})

test('a bad variable fails fast with its name in the message', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ HEROLD_ROLE: 'boss' }, /HEROLD_ROLE/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ REDIS_URL: 'http://x' }, /REDIS_URL/],
    [{ HEROLD_PUBLIC_URL: 'ftp://x' }, /HEROLD_PUBLIC_URL/],
    [{ HEROLD_ALLOW_PRIVATE_TARGETS: 'maybe' }, /HEROLD_ALLOW_PRIVATE_TARGETS/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
    [{ HEROLD_AI_URL: 'ftp://models' }, /HEROLD_AI_URL/],
    [{ HEROLD_WORKER_CONCURRENCY: '0' }, /HEROLD_WORKER_CONCURRENCY/],
    [{ HEROLD_DATABASE_POOL_SIZE: 'many' }, /HEROLD_DATABASE_POOL_SIZE/],
    [{ HEROLD_DATABASE_POOL_SIZE: '0' }, /HEROLD_DATABASE_POOL_SIZE/],
  ]
  for (const [env, pattern] of cases) {
    assert.throws(
      () => loadConfig(env),
      (error: Error) => error instanceof ConfigError && pattern.test(error.message),
    )
  }
})

test('the public url loses its trailing slash', () => {
  assert.equal(loadConfig({ HEROLD_PUBLIC_URL: 'https://herold.example.com/' }).publicUrl, 'https://herold.example.com')
})

test('the AI endpoint is read from HEROLD_AI_URL, HEROLD_AI_KEY and HEROLD_AI_MODEL, and is absent by default', () => {
  const none = loadConfig({})
  assert.equal(none.aiUrl, undefined)
  assert.equal(none.aiModel, undefined)
  const set = loadConfig({ HEROLD_AI_URL: 'http://127.0.0.1:11434/v1/', HEROLD_AI_KEY: 'k', HEROLD_AI_MODEL: 'llama3' })
  assert.equal(set.aiUrl, 'http://127.0.0.1:11434/v1')
  assert.equal(set.aiKey, 'k')
  assert.equal(set.aiModel, 'llama3')
})

test('HEROLD_TRUST_PROXY: off by default; true, a hop count, or addresses and CIDR ranges; anything else named', () => {
  assert.equal(loadConfig({}).trustProxy, false)
  assert.equal(loadConfig({ HEROLD_TRUST_PROXY: 'false' }).trustProxy, false)
  assert.equal(loadConfig({ HEROLD_TRUST_PROXY: 'true' }).trustProxy, true)
  assert.equal(loadConfig({ HEROLD_TRUST_PROXY: '2' }).trustProxy, 2)
  assert.deepEqual(loadConfig({ HEROLD_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8,loopback' }).trustProxy, [
    '127.0.0.1',
    '10.0.0.0/8',
    '::1',
    'fd00::/8',
    'loopback',
  ])
  for (const bad of ['yes', '10.0.0.0/33', 'proxy.example', '127.0.0.1,', '1000']) {
    assert.throws(
      () => loadConfig({ HEROLD_TRUST_PROXY: bad }),
      (error: Error) => {
        assert.ok(error instanceof ConfigError)
        assert.match(error.message, /HEROLD_TRUST_PROXY/)
        return true
      },
    )
  }
})
