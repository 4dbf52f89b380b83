import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, test } from 'node:test'
import SwaggerParser from '@apidevtools/swagger-parser'
import { parse as parseYaml } from 'yaml'
import { generateOpenApiDocument } from '../../scripts/openapi-document.ts'
import { createHarness, type Harness } from '../helpers/harness.ts'

type Operation = {
  security?: Record<string, string[]>[]
  'x-scope'?: string | null
  responses: Record<string, unknown>
  parameters?: { in: string; name: string }[]
}
type Doc = {
  openapi: string
  info: { version: string }
  paths: Record<string, Record<string, Operation>>
  components: { securitySchemes: Record<string, unknown> }
}

let harness: Harness
before(async () => {
  harness = await createHarness()
})
after(() => harness.close())

test('GET /v1/openapi.json needs no credential and is a valid OpenAPI 3.0.3 document, version 1.0.0', async () => {
  const response = await harness.app.inject({ method: 'GET', url: '/v1/openapi.json' })
  assert.equal(response.statusCode, 200)
  assert.match(String(response.headers['content-type']), /application\/json/)
  const doc = response.json() as Doc
  assert.equal(doc.openapi, '3.0.3')
  assert.equal(doc.info.version, '1.0.0')
  await SwaggerParser.validate(structuredClone(doc) as never)
})

test('GET /v1/openapi.yaml returns the same document', async () => {
  const json = (await harness.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json()
  const yaml = await harness.app.inject({ method: 'GET', url: '/v1/openapi.yaml' })
  assert.equal(yaml.statusCode, 200)
  assert.deepEqual(parseYaml(yaml.body), json)
})

test('every authenticated operation lists its scope, the bearer scheme and the common error responses', async () => {
  const doc = (await harness.app.inject({ method: 'GET', url: '/v1/openapi.json' })).json() as Doc
  assert.ok(doc.components.securitySchemes.bearerAuth)
  let operations = 0
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const where = `${method.toUpperCase()} ${path}`
      if (path === '/v1/openapi.json' || path === '/v1/openapi.yaml') {
        assert.deepEqual(operation.security, [], `${where} is public`)
        continue
      }
      operations++
      assert.deepEqual(operation.security, [{ bearerAuth: [] }], where)
      assert.ok('x-scope' in operation, `${where} names its scope`)
      for (const status of ['401', '403', '429', '503'])
        assert.ok(operation.responses[status], `${where} documents ${status}`)
    }
  }
  assert.ok(operations >= 1)
})

test('the committed openapi/v1.json is what the code generates (run `npm run openapi` after changing routes)', async () => {
  const committed = readFileSync(new URL('../../openapi/v1.json', import.meta.url), 'utf8')
  assert.equal(committed, await generateOpenApiDocument())
})

test('the interactive reference is served at /docs', async () => {
  const response = await harness.app.inject({ method: 'GET', url: '/docs/' })
  assert.equal(response.statusCode, 200)
  assert.match(response.body, /swagger-ui/i)
  const spec = await harness.app.inject({ method: 'GET', url: '/docs/json' })
  assert.equal(spec.statusCode, 200)
})

test('health: /healthz answers while the process is up, /readyz checks the database', async () => {
  assert.equal((await harness.app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
  const ready = await harness.app.inject({ method: 'GET', url: '/readyz' })
  assert.equal(ready.statusCode, 200)
  assert.equal(ready.json().ok, true)
})

test('/readyz answers 503 in the envelope when the database is unreachable', async () => {
  const isolated = await createHarness()
  await isolated.database.close()
  const ready = await isolated.app.inject({ method: 'GET', url: '/readyz' })
  assert.equal(ready.statusCode, 503)
  assert.equal(ready.json().error.code, 'not_ready')
  await isolated.close()
})
