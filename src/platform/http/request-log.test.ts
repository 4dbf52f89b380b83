import assert from 'node:assert/strict'
import { test } from 'node:test'
import Fastify from 'fastify'
import { pino } from 'pino'
import { lazyRequestLogger, OneLinePerRequest } from './request-log.ts'

/** A Fastify app with Herold's request logging as the server has it, its lines captured as parsed objects. */
async function appWithLines() {
  const lines: Array<Record<string, unknown>> = []
  const sink = { write: (line: string) => lines.push(JSON.parse(line)) }
  const loggerInstance = pino({ level: 'info' }, sink)
  const app = Fastify({
    loggerInstance,
    logController: new OneLinePerRequest(sink),
    childLoggerFactory: lazyRequestLogger,
  })
  app.get('/quiet', async () => ({ ok: true }))
  app.get('/message', async (request) => {
    request.log.warn('a plain message')
    return { ok: true }
  })
  app.get('/fields', async (request) => {
    request.log.error({ err: new Error('boom'), order: 7 }, 'with fields')
    return { ok: true }
  })
  app.get('/error-first', async (request) => {
    request.log.error(new Error('an error as the first argument'))
    return { ok: true }
  })
  app.get('/quiet-route', { logLevel: 'warn' }, async (request) => {
    request.log.info('left out at this route')
    return { level: request.log.level }
  })
  app.get('/child', async (request) => {
    request.log.child({ part: 'inner' }).info('from a child')
    return { ok: true }
  })
  app.get('/fails', async () => {
    throw new Error('handler failed')
  })
  await app.ready()
  return { app, lines }
}

test('each request writes one line with its request id, method, url, status and time', async () => {
  const { app, lines } = await appWithLines()
  const response = await app.inject({ url: '/quiet?x=1' })
  assert.equal(response.statusCode, 200)
  const requestLines = lines.filter((line) => line.reqId !== undefined)
  assert.equal(requestLines.length, 1)
  const [line] = requestLines
  assert.equal(line.msg, 'request completed')
  assert.equal(line.method, 'GET')
  assert.equal(line.url, '/quiet?x=1')
  assert.equal(line.statusCode, 200)
  assert.equal(typeof line.responseTime, 'number')
  assert.equal(line.level, 30)
  await app.close()
})

test('a request line written without pino is the line pino writes', async () => {
  const raw: string[] = []
  const sink = { write: (line: string) => raw.push(line) }
  let pinoCalls = 0
  const logger = () =>
    pino(
      {
        level: 'info',
        hooks: {
          logMethod(args, method) {
            pinoCalls++
            method.apply(this, args)
          },
        },
      },
      sink,
    )
  const direct = Fastify({
    loggerInstance: logger(),
    logController: new OneLinePerRequest(sink),
    childLoggerFactory: lazyRequestLogger,
  })
  const throughPino = Fastify({
    loggerInstance: logger(),
    logController: new OneLinePerRequest(),
    childLoggerFactory: lazyRequestLogger,
  })
  for (const app of [direct, throughPino]) {
    app.get('/q', async () => ({ ok: true }))
    await app.inject({ url: '/q?name=%22x%22&word=\\"stra\u00dfe\\"' })
  }
  assert.equal(raw.length, 2)
  assert.equal(pinoCalls, 1, 'only the second app wrote through pino')
  const normalized = (line: string) =>
    line.replace(/"time":\d+/, '"time":0').replace(/"responseTime":[0-9.e-]+/, '"responseTime":0')
  assert.equal(normalized(raw[0]), normalized(raw[1]))
  assert.equal(JSON.parse(raw[0]).url, JSON.parse(raw[1]).url)
  for (const app of [direct, throughPino]) await app.close()
})

test("a route's own log level holds, and request.log says it", async () => {
  const { app, lines } = await appWithLines()
  const response = await app.inject({ url: '/quiet-route' })
  assert.equal(response.json().level, 'warn')
  assert.equal(
    lines.some((line) => line.msg === 'left out at this route'),
    false,
  )
  await app.close()
})

test("a route's own log lines carry the request id, as a child logger's would", async () => {
  const { app, lines } = await appWithLines()
  for (const url of ['/message', '/fields', '/error-first', '/child']) await app.inject({ url })
  const byMessage = (msg: string) => lines.find((line) => line.msg === msg)
  const ids = lines.filter((line) => line.msg === 'request completed').map((line) => line.reqId)
  assert.equal(new Set(ids).size, 4)

  const plain = byMessage('a plain message')
  assert.equal(plain?.reqId, ids[0])
  assert.equal(plain?.level, 40)

  const fields = byMessage('with fields')
  assert.equal(fields?.reqId, ids[1])
  assert.equal(fields?.order, 7)
  assert.equal((fields?.err as { message: string } | undefined)?.message, 'boom', 'the error serializer still applies')

  const errorFirst = byMessage('an error as the first argument')
  assert.equal(errorFirst?.reqId, ids[2])
  assert.equal((errorFirst?.err as { type: string } | undefined)?.type, 'Error')

  const child = byMessage('from a child')
  assert.equal(child?.reqId, ids[3])
  assert.equal(child?.part, 'inner')
  await app.close()
})

test("a failed request: the error handler's line with the error, then the request's line, one request id", async () => {
  const { app, lines } = await appWithLines()
  const response = await app.inject({ url: '/fails' })
  assert.equal(response.statusCode, 500)
  const failed = lines.find((line) => line.msg === 'handler failed')
  assert.equal(failed?.level, 50)
  assert.equal((failed?.err as { message: string } | undefined)?.message, 'handler failed')
  const completed = lines.find((line) => line.msg === 'request completed')
  assert.equal(completed?.statusCode, 500)
  assert.equal(typeof failed?.reqId, 'string')
  assert.equal(failed?.reqId, completed?.reqId)
  await app.close()
})
