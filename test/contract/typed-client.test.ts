import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import openapiTS, { astToString } from 'openapi-typescript'
import ts from 'typescript'
import { committedDocument, type Doc } from '../helpers/contract.ts'

// A client generated from the committed documents (openapi-typescript + openapi-fetch, as an integrator would) must
// compile calls to every list route without a query: parameters with defaults are optional.

const dir = mkdtempSync(join(tmpdir(), 'herold-typed-client-'))
after(() => rmSync(dir, { recursive: true, force: true }))
const openapiFetch = fileURLToPath(new URL('../../node_modules/openapi-fetch', import.meta.url))

/** Every GET that needs nothing in its query; path parameters are filled in. */
function callsWithoutQuery(doc: Doc): { calls: string[]; needQuery: string[] } {
  const calls: string[] = []
  const needQuery: string[] = []
  for (const [path, methods] of Object.entries(doc.paths)) {
    const operation = methods.get
    if (!operation) continue
    const parameters = operation.parameters ?? []
    if (parameters.some((p) => p.in === 'query' && p.required)) {
      needQuery.push(path)
      continue
    }
    const pathParams = parameters.filter((p) => p.in === 'path').map((p) => `${JSON.stringify(p.name)}: 'x'`)
    const init = pathParams.length ? `, { params: { path: { ${pathParams.join(', ')} } } }` : ''
    calls.push(`await client.GET(${JSON.stringify(path)}${init})`)
  }
  return { calls, needQuery }
}

/** The list routes: GETs that answer a page. */
function listRoutes(doc: Doc): string[] {
  return Object.entries(doc.paths)
    .filter(([, methods]) => {
      const schema = (
        methods.get?.responses['200']?.content?.['application/json'] as { schema?: { properties?: object } }
      )?.schema
      return schema?.properties !== undefined && 'has_more' in schema.properties
    })
    .map(([path]) => path)
}

async function typeErrors(name: string, doc: Doc, calls: string[]): Promise<string[]> {
  writeFileSync(join(dir, `${name}.ts`), astToString(await openapiTS(doc as never)))
  const file = join(dir, `${name}-calls.ts`)
  writeFileSync(
    file,
    [
      "import createClient from 'openapi-fetch'",
      `import type { paths } from './${name}.ts'`,
      "const client = createClient<paths>({ baseUrl: 'http://herold.test' })",
      'export async function callEveryRoute(): Promise<void> {',
      ...calls.map((call) => `  ${call}`),
      '}',
    ].join('\n'),
  )
  const program = ts.createProgram([file], {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    types: [],
    paths: { 'openapi-fetch': [openapiFetch] },
  })
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n').split('\n')[0])
}

test('a typed client from openapi/v1.json calls every list route without a query', async () => {
  const doc = committedDocument('v1')
  const { calls, needQuery } = callsWithoutQuery(doc)
  const lists = listRoutes(doc)
  assert.ok(lists.length >= 20, `list routes found: ${lists.length}`)
  for (const path of lists) assert.ok(!needQuery.includes(path), `${path} is a list route that demands a query`)
  // only a search term and the preview's contact are needed; each has no default
  assert.deepEqual(needQuery.sort(), ['/v1/knowledge/search', '/v1/newsletters/{id}/preview'])
  assert.deepEqual(await typeErrors('v1', doc, calls), [])
})

test('the check can fail: a call without a required query parameter does not compile', async () => {
  const errors = await typeErrors('v1-negative', committedDocument('v1'), ["await client.GET('/v1/knowledge/search')"])
  assert.equal(errors.length, 1, errors.join('\n'))
})

test('a typed client from openapi/app.json calls every list route without a query', async () => {
  const doc = committedDocument('app')
  const { calls, needQuery } = callsWithoutQuery(doc)
  // the two that are no list: the consent page of one authorization request, and a lookup of the contacts by id
  assert.deepEqual(needQuery, ['/app/contacts/labels', '/app/oauth/authorization'])
  assert.ok(calls.length >= 10)
  assert.deepEqual(await typeErrors('app', doc, calls), [])
})
