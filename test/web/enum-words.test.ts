import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import appDocument from '../../openapi/app.json' with { type: 'json' }
import v1Document from '../../openapi/v1.json' with { type: 'json' }
import { DOCUMENT_FORMATS } from '../../src/modules/knowledge/knowledge.tables.ts'
import { MEDIA_KINDS, MEDIA_USAGES } from '../../src/modules/media/media.tables.ts'
import { type EnumKind, enumWords } from '../../web/src/ui/words.ts'

// The console shows no wire value of an API enum: each one a page shows has words in every language of the app.
// The values come from the committed OpenAPI documents (what the server answers), so a value added to a schema
// fails here until the tables say it in words.

type Schema = { [key: string]: unknown }
type Doc = { paths: Record<string, Record<string, Schema>>; components: { schemas: Record<string, Schema> } }
const documents = { v1: v1Document as unknown as Doc, app: appDocument as unknown as Doc }

/** Where a kind's values are: an operation's 200/201 answer or body, and the property path inside it. */
type Source =
  | { doc: 'v1' | 'app'; route: string; method: string; in: 'response' | 'body'; path: string; from?: 'description' }
  | { values: readonly string[] }

const SOURCES: Record<EnumKind, Source[]> = {
  channel: [{ doc: 'v1', route: '/v1/templates/{id}', method: 'get', in: 'response', path: 'template.channel' }],
  optinState: [
    { doc: 'v1', route: '/v1/contacts/{id}', method: 'get', in: 'response', path: 'contact.optin_chat' },
    { doc: 'v1', route: '/v1/contacts/{id}', method: 'get', in: 'response', path: 'contact.optin_email' },
    { doc: 'v1', route: '/v1/automations/{id}', method: 'get', in: 'response', path: 'steps.condition.state' },
  ],
  acquisition: [{ doc: 'v1', route: '/v1/contacts/{id}', method: 'get', in: 'response', path: 'contact.acquisition' }],
  templateState: [{ doc: 'v1', route: '/v1/templates/{id}', method: 'get', in: 'response', path: 'template.state' }],
  templatePurpose: [
    { doc: 'v1', route: '/v1/templates/{id}', method: 'get', in: 'response', path: 'template.purpose' },
  ],
  approval: [
    {
      doc: 'v1',
      route: '/v1/followups/{id}',
      method: 'get',
      in: 'response',
      path: 'followup.steps.approval',
      from: 'description',
    },
  ],
  intent: [{ doc: 'v1', route: '/v1/automations', method: 'post', in: 'body', path: 'intent' }],
  automationStatus: [{ doc: 'v1', route: '/v1/automations/{id}', method: 'get', in: 'response', path: 'status' }],
  triggerType: [{ doc: 'v1', route: '/v1/automations/{id}', method: 'get', in: 'response', path: 'trigger.type' }],
  stepType: [{ doc: 'v1', route: '/v1/automations/{id}', method: 'get', in: 'response', path: 'steps.type' }],
  conditionType: [
    { doc: 'v1', route: '/v1/automations/{id}', method: 'get', in: 'response', path: 'steps.condition.type' },
  ],
  runState: [{ doc: 'v1', route: '/v1/automations/{id}/runs', method: 'get', in: 'response', path: 'runs.state' }],
  stepResult: [
    {
      doc: 'v1',
      route: '/v1/automations/{id}/runs',
      method: 'get',
      in: 'response',
      path: 'runs.steps.result',
      from: 'description',
    },
  ],
  sourceKind: [
    { doc: 'v1', route: '/v1/automation-webhooks', method: 'get', in: 'response', path: 'automation_webhooks.kind' },
  ],
  sourceState: [
    { doc: 'v1', route: '/v1/automation-webhooks', method: 'get', in: 'response', path: 'automation_webhooks.state' },
  ],
  newsletterStatus: [
    { doc: 'v1', route: '/v1/newsletters/{id}', method: 'get', in: 'response', path: 'newsletter.status' },
  ],
  newsletterPhase: [{ doc: 'v1', route: '/v1/newsletters/{id}/status', method: 'get', in: 'response', path: 'phase' }],
  followupStatus: [{ doc: 'v1', route: '/v1/followups/{id}', method: 'get', in: 'response', path: 'followup.status' }],
  followupTrigger: [{ doc: 'app', route: '/app/followups', method: 'post', in: 'body', path: 'trigger.type' }],
  delayUnit: [
    { doc: 'v1', route: '/v1/followups/{id}', method: 'get', in: 'response', path: 'followup.steps.delay.unit' },
  ],
  mediaKind: [{ values: MEDIA_KINDS }],
  mediaUsage: [{ values: MEDIA_USAGES }],
  documentFormat: [
    { doc: 'v1', route: '/v1/knowledge/documents', method: 'get', in: 'response', path: 'documents.format' },
    { values: DOCUMENT_FORMATS },
  ],
  webhookEvent: [
    {
      doc: 'v1',
      route: '/v1/webhook-subscriptions',
      method: 'get',
      in: 'response',
      path: 'webhook_subscriptions.events',
    },
  ],
  webhookStatus: [
    {
      doc: 'v1',
      route: '/v1/webhook-subscriptions',
      method: 'get',
      in: 'response',
      path: 'webhook_subscriptions.status',
    },
  ],
  webhookDisabledReason: [
    {
      doc: 'v1',
      route: '/v1/webhook-subscriptions',
      method: 'get',
      in: 'response',
      path: 'webhook_subscriptions.disabled_reason',
    },
  ],
  deliveryError: [
    {
      doc: 'v1',
      route: '/v1/webhook-subscriptions/{id}/deliveries',
      method: 'get',
      in: 'response',
      path: 'deliveries.error',
    },
  ],
  messageStatus: [
    {
      doc: 'v1',
      route: '/v1/inbox/conversations/{id}/messages',
      method: 'get',
      in: 'response',
      path: 'messages.status',
    },
  ],
  sendStatus: [{ doc: 'v1', route: '/v1/sends/{id}', method: 'get', in: 'response', path: 'status' }],
  direction: [
    {
      doc: 'v1',
      route: '/v1/inbox/conversations/{id}/messages',
      method: 'get',
      in: 'response',
      path: 'messages.direction',
    },
  ],
  role: [{ doc: 'app', route: '/app/team/{id}', method: 'patch', in: 'body', path: 'role' }],
}

const asSchema = (value: unknown): Schema | undefined =>
  value && typeof value === 'object' ? (value as Schema) : undefined

function deref(doc: Doc, schema: Schema | undefined): Schema | undefined {
  const ref = schema?.$ref
  return typeof ref === 'string' ? deref(doc, doc.components.schemas[ref.split('/').pop() ?? '']) : schema
}

/** A schema and every schema it may be: its alternatives (anyOf, oneOf, allOf) and its array's items. */
function variants(doc: Doc, start: Schema | undefined): Schema[] {
  const schema = deref(doc, start)
  if (!schema) return []
  const nested = ['anyOf', 'oneOf', 'allOf'].flatMap((k) => (schema[k] as Schema[] | undefined) ?? [])
  if (schema.items) nested.push(schema.items as Schema)
  return [schema, ...nested.flatMap((s) => variants(doc, s))]
}

function schemasAt(doc: Doc, schema: Schema, path: string[]): Schema[] {
  if (path.length === 0) return [schema]
  const [name, ...rest] = path
  return variants(doc, schema).flatMap((v) => {
    const child = asSchema(asSchema(v.properties)?.[name])
    return child ? schemasAt(doc, child, rest) : []
  })
}

function valuesOf(source: Source): string[] {
  if ('values' in source) return [...source.values]
  const doc = documents[source.doc]
  const operation = doc.paths[source.route]?.[source.method]
  assert.ok(operation, `${source.method} ${source.route} is in the ${source.doc} document`)
  const responses = operation.responses as Record<string, Schema>
  const root = source.in === 'body' ? (operation.requestBody as Schema) : (responses['200'] ?? responses['201'])
  const schema = asSchema(asSchema(asSchema(root.content)?.['application/json'])?.schema)
  assert.ok(schema, `${source.route}: a JSON schema`)
  const found = schemasAt(doc, schema, source.path.split('.'))
  assert.ok(found.length > 0, `${source.route} has ${source.path}`)
  if (source.from === 'description') {
    // a free string whose description lists its values ("approved, pending ... or not_submitted")
    return found.flatMap((s) => String(s.description ?? '').split(/, | or /))
  }
  const values = found.flatMap((s) => variants(doc, s)).flatMap((v) => [...((v.enum as unknown[]) ?? []), v.const])
  return values.filter((v): v is string => typeof v === 'string')
}

describe('the enum values a page shows are in words in every language', () => {
  for (const [kind, sources] of Object.entries(SOURCES) as Array<[EnumKind, Source[]]>) {
    test(`${kind}: every value of the API has words in German and English`, () => {
      const values = [...new Set(sources.flatMap(valuesOf))]
      assert.ok(values.length > 1, `${kind}: the sources name its values`)
      for (const [language, tables] of Object.entries(enumWords)) {
        const table = tables[kind] as Record<string, string>
        const missing = values.filter((v) => !table[v]?.trim())
        assert.deepEqual(missing, [], `${kind} in ${language}`)
      }
    })
  }

  test('the languages have the same values and no two values of a kind share words', () => {
    const [first, ...others] = Object.values(enumWords)
    for (const tables of others) {
      for (const kind of Object.keys(first) as EnumKind[]) {
        assert.deepEqual(Object.keys(tables[kind]).sort(), Object.keys(first[kind]).sort(), kind)
      }
    }
    for (const [language, tables] of Object.entries(enumWords)) {
      for (const [kind, table] of Object.entries(tables)) {
        const words = Object.values(table as Record<string, string>)
        assert.equal(new Set(words).size, words.length, `${kind} in ${language}: two values read the same`)
      }
    }
  })
})
