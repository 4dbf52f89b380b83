import { type TObject, type TProperties, type TSchema, Type } from 'typebox'
import { requireScope } from '../auth/authenticate.ts'
import type { Permission } from '../auth/roles.ts'
import type { Scope } from '../auth/scopes.ts'
import { type AnyOperation, type OperationCall, restName } from '../http/operation.ts'
import { defineTool, operationRule, type Tool, type ToolContext, type ToolKind } from './tool.ts'

type Source = 'params' | 'query' | 'body'
const SOURCES: Source[] = ['params', 'query', 'body']

/**
 * A tool that stands for an operation: its name and words for an assistant, and how its arguments map onto the
 * operation's fields. Everything else (the scope, the argument schemas and their limits, the answer, the REST name) is
 * the operation's, so a rule exists once.
 */
export interface OperationToolDefinition<S> {
  name: string
  title: string
  description: string
  /** the tool's argument name for an operation field where the spec names it differently: `{ template_id: 'id' }` */
  rename?: Record<string, string>
  /** a description of an argument for an assistant (by the tool's argument name), where the field's own is not enough */
  describe?: Record<string, string>
  /** only these operation fields become arguments (by the operation's field name) */
  pick?: string[]
  /** these operation fields are not arguments (by the operation's field name) */
  omit?: string[]
  /** values of operation fields the tool sets itself: `{ body: { channel: 'chat' } }` */
  fixed?: Partial<Record<Source, Record<string, unknown>>>
  /**
   * an argument's own schema where the spec gives the tool other limits than the operation's field (by the tool's
   * argument name); the operation's rule is still checked on what the call hands it
   */
  schemas?: Record<string, TSchema>
  /** arguments the spec requires although the operation's field has a default (by the tool's argument name) */
  required?: string[]
  /** arguments of the tool's own beyond the operation's fields (idempotency_key); run receives them in `extra` */
  extra?: TProperties
  /** read for GET, destructive for DELETE, write otherwise, unless said */
  kind?: ToolKind
  idempotent?: boolean
  openWorld?: boolean
  /** where the operation takes several scopes, or none (a web-app operation of a permission): the tool's */
  scope?: Scope | null
  permission?: Permission
  /** the REST name, where it says more than the method and path (`POST /contacts?upsert=true`) */
  rest?: string
  /** the answer, where the tool's differs from the operation's */
  output?: TObject
  /** makes the tool two-step: what the call will do, computed without changing anything */
  preview?: (
    ctx: ToolContext<S>,
    call: OperationCall,
    extra: Record<string, unknown>,
  ) => Promise<Record<string, unknown>>
  /** what the call does, where it is more than the operation's handler */
  run?: (ctx: ToolContext<S>, call: OperationCall, extra: Record<string, unknown>) => Promise<Record<string, unknown>>
}

const propertiesOf = (schema: TSchema | undefined): TProperties =>
  ((schema as TObject | undefined)?.properties ?? {}) as TProperties

/** The schema without its optional mark (TypeBox's '~optional'). */
function requiredOf(schema: TSchema): TSchema {
  if (!('~optional' in schema)) return schema
  const { '~optional': _optional, ...required } = schema as TSchema & { '~optional': unknown }
  return required as TSchema
}

/** The tools of a module whose operations call the services `S`; `references` as toolsUsing takes them. */
export function operationTools<S>(references?: TSchema[]) {
  return (operation: AnyOperation<S>, definition: OperationToolDefinition<S>): Tool<S> =>
    operationTool(operation, definition, references)
}

function operationTool<S>(
  operation: AnyOperation<S>,
  definition: OperationToolDefinition<S>,
  references?: TSchema[],
): Tool<S> {
  const toolName = new Map(Object.entries(definition.rename ?? {}).map(([tool, field]) => [field, tool]))
  const taken = (field: string) =>
    (definition.pick ? definition.pick.includes(field) : true) &&
    !definition.omit?.includes(field) &&
    !(field in (definition.fixed?.params ?? {})) &&
    !(field in (definition.fixed?.query ?? {})) &&
    !(field in (definition.fixed?.body ?? {}))
  // each argument: the operation field it fills and where that field goes
  const fields = new Map<string, { source: Source; field: string }>()
  const properties: TProperties = {}
  for (const source of SOURCES) {
    for (const [field, schema] of Object.entries(propertiesOf(operation[source]))) {
      if (!taken(field)) continue
      const name = toolName.get(field) ?? field
      if (fields.has(name)) throw new Error(`${definition.name}: two operation fields become the argument ${name}`)
      fields.set(name, { source, field })
      const description = definition.describe?.[name]
      const own = definition.schemas?.[name] ?? (description ? ({ ...schema, description } as TSchema) : schema)
      // an argument with a default may be left out, as a REST query parameter with one may ('~optional' is hidden)
      if (definition.required?.includes(name)) properties[name] = requiredOf(own)
      else properties[name] = '~optional' in schema || 'default' in schema ? Type.Optional(own) : own
    }
  }
  const named = [definition.rename, definition.describe, definition.schemas]
    .flatMap((map) => Object.keys(map ?? {}))
    .concat(definition.required ?? [])
  for (const name of named) {
    if (!fields.has(name)) throw new Error(`${definition.name}: ${name} names no field of ${operation.operationId}`)
  }
  const checked = [...new Set(Object.keys(definition.schemas ?? {}).map((name) => fields.get(name)?.source))].filter(
    (source): source is Source => source !== undefined,
  )
  // an operation of several scopes: the tool's is the first (checked before the arguments), the others when it runs
  const scopes =
    operation.scope === undefined ? [] : Array.isArray(operation.scope) ? operation.scope : [operation.scope]
  const scope = definition.scope !== undefined ? definition.scope : (scopes[0] ?? null)
  const further = scopes.filter((s) => s !== scope)

  /** The operation's call made of a tool's arguments; the tool's own arguments apart. */
  const callOf = (ctx: ToolContext<S>, args: Record<string, unknown>) => {
    const call: OperationCall<Record<string, unknown>, Record<string, unknown>, Record<string, unknown> | undefined> = {
      tenant: ctx.tenant,
      params: { ...definition.fixed?.params },
      query: { ...definition.fixed?.query },
      body: operation.body ? { ...definition.fixed?.body } : undefined,
    }
    for (const more of further) requireScope(ctx.tenant, more)
    const extra: Record<string, unknown> = {}
    for (const [name, value] of Object.entries(args)) {
      const target = fields.get(name)
      if (!target) extra[name] = value
      else if (value !== undefined) (call[target.source] as Record<string, unknown>)[target.field] = value
    }
    // where the tool's own schema let a value through, the operation's rule decides (a 60-character tag against 40)
    for (const source of checked) call[source] = operationRule(operation[source], call[source], source) as never
    return { call: call as OperationCall, extra }
  }
  const method = operation.method
  const { preview, run } = definition
  const tool = defineTool<S, TObject>({
    name: definition.name,
    title: definition.title,
    description: definition.description,
    scope,
    permission: definition.permission ?? operation.permission,
    rest: definition.rest ?? restName(operation),
    input: Type.Object({ ...properties, ...definition.extra }),
    output: definition.output ?? (operation.response as TObject),
    kind: definition.kind ?? (method === 'GET' ? 'read' : method === 'DELETE' ? 'destructive' : 'write'),
    idempotent: definition.idempotent ?? (method === 'PUT' || method === 'PATCH'),
    openWorld: definition.openWorld,
    preview: preview
      ? (ctx, args) => {
          const { call, extra } = callOf(ctx, args)
          return preview(ctx, call, extra)
        }
      : undefined,
    run: (ctx, args) => {
      const { call, extra } = callOf(ctx, args)
      return run ? run(ctx, call, extra) : (operation.handle(ctx.services, call) as Promise<Record<string, unknown>>)
    },
  })
  return { ...tool, references }
}
