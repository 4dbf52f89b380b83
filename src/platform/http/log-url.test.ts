import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { buildApp } from '../../app.ts'
import { loadConfig } from '../../config.ts'
import { TestClock } from '../clock.ts'
import { openDatabase } from '../db/client.ts'
import { migrate } from '../db/migrate.ts'
import { memoryRateLimiter } from '../rate-limit/rate-limiter.ts'
import { webAppBuilt } from './web-app.ts'

/** The server's app with its own logger (a level and a stream, as serve() gives it), its log captured as text. */
async function appWithLog() {
  const database = await openDatabase({
    databaseUrl: process.env.HEROLD_TEST_DATABASE_URL || undefined,
    dataDir: 'memory://',
    poolSize: 2,
  })
  await migrate(database)
  const config = loadConfig(
    {},
    {
      databaseUrl: process.env.HEROLD_TEST_DATABASE_URL || undefined,
      publicUrl: 'http://herold.test',
      secretKey: randomBytes(32).toString('base64'),
    },
  )
  let log = ''
  const stream = {
    write(line: string) {
      log += line
      return true
    },
  }
  const rateLimiter = memoryRateLimiter()
  const app = await buildApp({
    config,
    database,
    clock: new TestClock(),
    rateLimiter,
    logger: { level: 'info', stream },
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  return {
    url,
    log: () => log,
    async close() {
      await app.close()
      await rateLimiter.close()
      await database.close()
    },
  }
}

const secret = (name: string) => `${name}${randomBytes(12).toString('hex')}`
const account = '00000000-0000-4000-8000-000000000001'

test('no secret of a path or query reaches the request log; the logged url shows it as [redacted]', async () => {
  const server = await appWithLog()
  try {
    const cases: Array<{ method: string; path: (s: string) => string; logged: (s: string) => string; body?: string }> =
      [
        {
          method: 'POST',
          path: (s) => `/hooks/email/${account}?token=${s}`,
          logged: () => `/hooks/email/${account}?token=[redacted]`,
          body: 'From: a@example.org\r\n\r\nhello',
        },
        {
          method: 'GET',
          path: (s) => `/hooks/whatsapp-cloud/${account}?hub.mode=subscribe&hub.verify_token=${s}&hub.challenge=42`,
          logged: () =>
            `/hooks/whatsapp-cloud/${account}?hub.mode=subscribe&hub.verify_token=[redacted]&hub.challenge=42`,
        },
        {
          method: 'POST',
          path: (s) => `/public/automation-hooks/${account}/${s}`,
          logged: () => `/public/automation-hooks/${account}/[redacted]`,
          body: '{}',
        },
        { method: 'GET', path: (s) => `/app/setup/${s}`, logged: () => '/app/setup/[redacted]' },
        { method: 'GET', path: (s) => `/app/invitations/${s}`, logged: () => '/app/invitations/[redacted]' },
        { method: 'GET', path: (s) => `/public/optin/${s}`, logged: () => '/public/optin/[redacted]' },
        { method: 'POST', path: (s) => `/public/optin/${s}`, logged: () => '/public/optin/[redacted]', body: '' },
        {
          method: 'GET',
          path: (s) => `/public/unsubscribe/${s}.part.two`,
          logged: () => '/public/unsubscribe/[redacted]',
        },
        // a route that does not exist: its path is not known to hold a secret, its query is
        {
          method: 'GET',
          path: (s) => `/no/such/route?page=2&token=${s}`,
          logged: () => '/no/such/route?page=2&token=[redacted]',
        },
        {
          method: 'GET',
          path: (s) => `/no/such/route?Hub%2Everify_token=${s}&x`,
          logged: () => '/no/such/route?Hub%2Everify_token=[redacted]&x',
        },
        { method: 'GET', path: (s) => `/v1/me?access_token=${s}`, logged: () => '/v1/me?access_token=[redacted]' },
      ]
    if (webAppBuilt()) {
      for (const page of ['setup', 'invitations', 'reset']) {
        cases.push({ method: 'GET', path: (s) => `/${page}/${s}`, logged: () => `/${page}/[redacted]` })
      }
    }
    const secrets: string[] = []
    for (const one of cases) {
      const value = secret('s3cr3t')
      secrets.push(value)
      const response = await fetch(`${server.url}${one.path(value)}`, {
        method: one.method,
        ...(one.body !== undefined
          ? {
              body: one.body,
              headers: {
                'content-type': one.body.startsWith('{') ? 'application/json' : 'application/x-www-form-urlencoded',
              },
            }
          : {}),
      })
      assert.ok(response.status < 500, `${one.method} ${one.path('…')}: ${response.status}`)
      await response.arrayBuffer()
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
    const log = server.log()
    for (const value of secrets) assert.ok(!log.includes(value), `a secret is in the log:\n${log}`)
    const urls = log
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { url?: string; msg: string })
      .filter((line) => line.msg === 'request completed')
      .map((line) => line.url)
    cases.forEach((one, index) => {
      assert.ok(urls.includes(one.logged(secrets[index] as string)), `${one.logged('')} is logged: ${urls.join(', ')}`)
    })
  } finally {
    await server.close()
  }
})
